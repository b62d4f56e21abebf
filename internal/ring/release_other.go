//go:build !amd64 || race

package ring

import "sync/atomic"

// StoreRelease32 stores v at *p with (at least) release ordering (see release.go).
func StoreRelease32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

// StoreRelease64 stores v at *p with (at least) release ordering (see release.go).
func StoreRelease64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
