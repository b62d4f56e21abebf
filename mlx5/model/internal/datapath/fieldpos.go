package datapath

import "github.com/daqiri-go/daqiri/mlx5/prm"

// fieldPos is a PRM field's position only: what the datapath needs to write a CQE or a match
// parameter field per frame, without passing the field's names along (prm.Field carries its
// layout and field names, which cost a copy on every call).
type fieldPos struct{ off, width uint32 }

// pos is f's position.
func pos(f prm.Field) fieldPos { return fieldPos{f.Off, f.Width} }

// set writes v into the field of b with prm.Field.Set's semantics (prm.SetBits: MLX5_SET,
// bits of v above the width dropped, the bits around the field kept, a field beyond b not
// written).
func (x fieldPos) set(b []byte, v uint64) { prm.SetBits(b, x.off, x.width, v) }

// get reads the field from b with prm.Field.Get's semantics (prm.GetBits: MLX5_GET, a field
// beyond b reads as zero, a field wider than 64 bits gives its last 64 bits): the WQE and CQE
// fields the datapath reads per frame, without copying the prm.Field per call.
func (x fieldPos) get(b []byte) uint64 { return prm.GetBits(b, x.off, x.width) }
