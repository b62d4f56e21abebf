//go:build amd64 && !race

package ring

// storeRelease32 stores v at *p with release ordering: one MOV (see release.go).
func storeRelease32(p *uint32, v uint32) { *p = v }

// storeRelease64 stores v at *p with release ordering: one MOV (see release.go).
func storeRelease64(p *uint64, v uint64) { *p = v }
