package reorder

import (
	"fmt"

	"github.com/daqiri-go/daqiri/engine"
)

// newGPUBackend builds the GPU data path of a gpu plan.
func newGPUBackend(p *Plan, opt Options) (backend, error) {
	return nil, fmt.Errorf("reorder plan %s: gpu plans are not available in this build yet: %w", p.name, engine.ErrNotSupported)
}
