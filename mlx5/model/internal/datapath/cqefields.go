package datapath

import "encoding/binary"

// Byte offsets of the CQE (prm.CQE64) and mini-CQE (prm.MiniCQE) fields the datapath writes
// and reads per frame, with their widths in the comments: every one is byte-aligned and 8,
// 16, 32 or 64 bits wide, so a field is one big-endian store or load (what prm.SetBits and
// fieldPos.get do for such fields, after their checks; the call per field was ~50 ns of an
// RX CQE in the two-port run). TestCQEFieldOffsets holds them to the prm definitions.
const (
	cqeWQEID       = 2  // 16 bits
	cqeRSSHash     = 12 // 32 bits
	cqeRSSHashType = 16 // 8 bits
	cqeChecksum    = 20 // 16 bits
	cqeFlagsRQPN   = 24 // 32 bits
	cqeHdsIPExt    = 28 // 8 bits
	cqeByteCnt     = 44 // 32 bits
	cqeTimestamp   = 48 // 64 bits
	cqeSopDropQPN  = 56 // 32 bits
	cqeWQECounter  = 60 // 16 bits

	miniRxHash    = 0 // 32 bits
	miniChecksum  = 0 // 16 bits
	miniStrideIdx = 2 // 16 bits
	miniByteCnt   = 4 // 32 bits

	// The data segment (prm.WQEData) an RX WQE's buffer and a TX gather are read from, per
	// frame; the callers hold the whole 16-byte segment.
	dsegByteCount = 0 // 32 bits
	dsegLKey      = 4 // 32 bits
	dsegAddr      = 8 // 64 bits
)

// put8 ... get32 store and load a field of that width at byte offset off, bits of v above
// the width dropped (MLX5_SET).
func put8(b []byte, off int, v uint64)  { b[off] = byte(v) }
func put16(b []byte, off int, v uint64) { binary.BigEndian.PutUint16(b[off:], uint16(v)) }
func put32(b []byte, off int, v uint64) { binary.BigEndian.PutUint32(b[off:], uint32(v)) }
func put64(b []byte, off int, v uint64) { binary.BigEndian.PutUint64(b[off:], v) }
func get16(b []byte, off int) uint64    { return uint64(binary.BigEndian.Uint16(b[off:])) }
func get32(b []byte, off int) uint64    { return uint64(binary.BigEndian.Uint32(b[off:])) }
func get64(b []byte, off int) uint64    { return binary.BigEndian.Uint64(b[off:]) }
