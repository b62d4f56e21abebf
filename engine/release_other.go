//go:build !amd64 || race

package engine

import "sync/atomic"

// storeRelease32 and storeRelease64 store with (at least) release ordering: sync/atomic's
// elsewhere and under the race detector, which must see the stores as synchronising.
func storeRelease32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

func storeRelease64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
