//go:build !nocuda

package nvgpu

import (
	"fmt"

	"github.com/ebitengine/purego"
)

func open(name string) (uintptr, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if h, ok := libs[name]; ok {
		return h, nil
	}
	h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return 0, fmt.Errorf("%s: %w (%v)", name, ErrNoLibrary, err)
	}
	libs[name] = h
	return h, nil
}

// bind resolves each symbol into the matching function pointer; a missing symbol (an old
// driver) is an error naming it rather than a panic.
// bind resolves each symbol into the matching function pointer; a missing symbol (an old
// driver) is an error naming it rather than a panic.
func bind(h uintptr, lib string, fns map[string]any) error {
	for name, fptr := range fns {
		sym, err := purego.Dlsym(h, name)
		if err != nil {
			return fmt.Errorf("%s: symbol %s missing (driver too old?): %v", lib, name, err)
		}
		purego.RegisterFunc(fptr, sym)
	}
	return nil
}
