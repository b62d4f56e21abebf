//go:build !amd64 || race

package release

import "sync/atomic"

// StoreUint32 stores v at *p with (at least) release ordering.
func StoreUint32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

// StoreUint64 stores v at *p with (at least) release ordering.
func StoreUint64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
