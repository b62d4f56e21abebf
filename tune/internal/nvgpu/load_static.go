//go:build nocuda

package nvgpu

import "fmt"

// Builds with the nocuda tag are fully static and cannot load NVML or libcuda.
func open(name string) (uintptr, error) {
	return 0, fmt.Errorf("%s: %w (built with the nocuda tag)", name, ErrNoLibrary)
}

func bind(uintptr, string, map[string]any) error { return ErrNoLibrary }
