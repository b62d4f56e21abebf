//go:build amd64 && !race

package engine

// storeRelease32 and storeRelease64 store with release ordering only: one MOV on amd64
// outside the race detector, as internal/ring's of the same names (its release.go says why
// that is a release store under x86-TSO and gc's code generation). They are copies rather
// than calls into ring so that Counters.Add keeps them inline.
func storeRelease32(p *uint32, v uint32) { *p = v }

func storeRelease64(p *uint64, v uint64) { *p = v }
