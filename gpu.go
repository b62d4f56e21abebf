package daqiri

import (
	"fmt"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/engine"
)

// allocGPU allocates host_pinned and device regions through CUDA.
func allocGPU(rc *config.MemoryRegion, size int) (engine.Memory, error) {
	return nil, fmt.Errorf("memory kind %s needs the CUDA driver binding, which is not in this build yet: %w", rc.Kind, ErrNotSupported)
}
