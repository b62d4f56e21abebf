//go:build amd64 && !race

package release

// StoreUint32 stores v at *p with release ordering.
//
//go:noescape
func StoreUint32(p *uint32, v uint32)

// StoreUint64 stores v at *p with release ordering.
//
//go:noescape
func StoreUint64(p *uint64, v uint64)
