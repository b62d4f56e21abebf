//go:build amd64 && !race

package ring

// StoreRelease32 stores v at *p with release ordering: one MOV (see release.go).
func StoreRelease32(p *uint32, v uint32) { *p = v }

// StoreRelease64 stores v at *p with release ordering: one MOV (see release.go).
func StoreRelease64(p *uint64, v uint64) { *p = v }
