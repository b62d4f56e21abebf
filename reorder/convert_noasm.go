//go:build !amd64 || purego

package reorder

// hasAVX2 is false where there are no vector loops (other architectures, or the purego tag).
const hasAVX2 = false

// vectorize leaves the scalar loops in place: this build has no vector ones.
func (c *Conversion) vectorize() {}
