package prm

import (
	"math/rand/v2"
	"testing"
)

// refGet is the definition of MLX5_GET read bit by bit: bit i of the layout is bit 7-i%8 of
// byte i/8 (big-endian bit arrays, include/linux/mlx5/device.h __mlx5_dw_bit_off).
func refGet(b []byte, off, width uint32) uint64 {
	var v uint64
	for i := range width {
		bit := off + i
		v = v<<1 | uint64(b[bit/8]>>(7-bit%8)&1)
	}
	return v
}

func TestFieldGetSetRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	for range 20000 {
		buf := make([]byte, 64)
		for i := range buf {
			buf[i] = byte(r.Uint32())
		}
		width := 1 + r.Uint32N(64)
		off := r.Uint32N(uint32(len(buf))*8 - width + 1)
		if r.IntN(4) == 0 {
			// Byte-aligned bytes and words: GetBits's one-load paths.
			width = []uint32{8, 16, 32, 64}[r.IntN(4)]
			off = r.Uint32N(uint32(len(buf))-width/8+1) * 8
		}
		f := ifcField("t", "f", off, width)
		if got, want := f.Get(buf), refGet(buf, off, width); got != want {
			t.Fatalf("%v: Get = %#x, want %#x", f, got, want)
		}
		before := append([]byte(nil), buf...)
		v := r.Uint64()
		if !f.Set(buf, v) {
			t.Fatalf("%v: Set refused a field inside the buffer", f)
		}
		mask := ^uint64(0)
		if width < 64 {
			mask = 1<<width - 1
		}
		if got := f.Get(buf); got != v&mask {
			t.Fatalf("%v: Get after Set(%#x) = %#x", f, v, got)
		}
		// No bit outside the field moved.
		for bit := uint32(0); bit < uint32(len(buf))*8; bit++ {
			if bit >= off && bit < off+width {
				continue
			}
			if refGet(buf, bit, 1) != refGet(before, bit, 1) {
				t.Fatalf("%v: Set changed bit %d outside the field", f, bit)
			}
		}
	}
}

func TestFieldKnownValues(t *testing.T) {
	// A 16-bit opcode at bit 0 and an 8-bit status at bit 0 of the output: the command
	// header as MLX5_SET(create_cq_in, in, opcode, 0x400) lays it out.
	b := make([]byte, 16)
	ifcField("t", "opcode", 0, 16).Set(b, 0x400)
	if b[0] != 0x04 || b[1] != 0x00 {
		t.Fatalf("opcode bytes % x", b[:2])
	}
	// A 5-bit field at bit 3 of the first word (log_cq_size-like, mid-byte).
	f := ifcField("t", "x", 3, 5)
	f.Set(b[4:], 0x1f)
	if b[4] != 0x1f {
		t.Fatalf("5-bit field at bit 3: % x", b[4:6])
	}
	// 64-bit field split over two big-endian words.
	g := ifcField("t", "addr", 64, 64)
	g.Set(b, 0x0102030405060708)
	if b[8] != 1 || b[15] != 8 || g.Get(b) != 0x0102030405060708 {
		t.Fatalf("64-bit field: % x", b[8:16])
	}
}

func TestFieldBeyondBuffer(t *testing.T) {
	f := ifcField("t", "f", 120, 16)
	b := make([]byte, 16)
	if f.Set(b, 1) || f.Get(b) != 0 || f.In(b) {
		t.Fatal("a field past the buffer must not be read or written")
	}
	if s := ifcField("t", "mac", 16, 48).Slice(make([]byte, 8)); len(s) != 6 {
		t.Fatalf("Slice: %d bytes", len(s))
	}
	if ifcField("t", "odd", 3, 8).Slice(b) != nil {
		t.Fatal("Slice of an unaligned field must be nil")
	}
}

// TestDestroyCommand: each create's destroy carries the id from the create's output (or, for
// a flow table entry, its input), the table type/id where the PRM destroy names them, and the
// create's uid; a command that creates nothing has none.
func TestDestroyCommand(t *testing.T) {
	in := NewCmdIn(CmdOpCreateCQ, 0, 64)
	GeneralObjInCmdHdr.UID.Set(in, 7)
	out := make([]byte, 16)
	CreateCQOut.CQN.Set(out, 0x123)
	id, d, ok := DestroyCommand(in, out)
	if !ok || id != 0x123 || CmdOp(CmdIn.Opcode.Get(d)) != CmdOpDestroyCQ || DestroyCQIn.CQN.Get(d) != 0x123 || GeneralObjInCmdHdr.UID.Get(d) != 7 {
		t.Fatalf("CREATE_CQ: id %#x ok %v destroy % x", id, ok, d)
	}
	in = NewCmdIn(CmdOpSetFlowTableEntry, 0, int(SetFTEIn.FlowIndex.End()/8))
	SetFTEIn.TableType.Set(in, 1)
	SetFTEIn.TableID.Set(in, 9)
	SetFTEIn.FlowIndex.Set(in, 42)
	id, d, ok = DestroyCommand(in, out)
	if !ok || id != 42 || DeleteFTEIn.TableType.Get(d) != 1 || DeleteFTEIn.TableID.Get(d) != 9 || DeleteFTEIn.FlowIndex.Get(d) != 42 {
		t.Fatalf("SET_FLOW_TABLE_ENTRY: id %d destroy % x", id, d)
	}
	if _, _, ok := DestroyCommand(NewCmdIn(CmdOpQueryHCACap, 0, 16), out); ok || Destroyable(NewCmdIn(CmdOpQueryHCACap, 0, 16)) {
		t.Fatal("QUERY_HCA_CAP has a destroy command")
	}
}
