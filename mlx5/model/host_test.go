package model_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// host is a test's driver side: host memory mapped into the device's DMA space (as a VFIO
// container maps it), a bump allocator over it, BAR0 access and the command queue, written
// from the facts the model cites (kernel cmd.c, rdma-core mlx5_vfio.c), not from the model.
type host struct {
	t     testing.TB
	d     *model.Device
	mem   []byte
	base  uint64
	next  uint64
	token uint8
	cmdq  uint64
	queue bool // commands through the command queue (else Device.Exec)
	// mangle, when set, changes an entry and its mailboxes before the doorbell (tests of
	// delivery errors).
	mangle func(ent []byte, in, out []uint64)
}

const hostIOVA = 0x4000_0000

func newHost(t testing.TB, d *model.Device, size int) *host {
	t.Helper()
	h := &host{t: t, d: d, mem: make([]byte, size), base: hostIOVA}
	if err := d.DMA().Map(hostIOVA, h.mem, model.DMARead|model.DMAWrite); err != nil {
		t.Fatal(err)
	}
	return h
}

// alloc returns the I/O address of n zeroed bytes aligned to align.
func (h *host) alloc(n, align int) uint64 {
	h.t.Helper()
	off := (h.next + uint64(align) - 1) &^ (uint64(align) - 1)
	if off+uint64(n) > uint64(len(h.mem)) {
		h.t.Fatalf("host memory exhausted: %d bytes at %#x", n, off)
	}
	h.next = off + uint64(n)
	return h.base + off
}

func (h *host) at(iova uint64, n int) []byte { return h.mem[iova-h.base : iova-h.base+uint64(n)] }

func (h *host) r32(off int64) uint32 {
	h.t.Helper()
	var b [4]byte
	if _, err := h.d.BAR0().ReadAt(b[:], off); err != nil {
		h.t.Fatal(err)
	}
	return binary.BigEndian.Uint32(b[:])
}

func (h *host) w32(off int64, v uint32) {
	h.t.Helper()
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], v)
	if _, err := h.d.BAR0().WriteAt(b[:], off); err != nil {
		h.t.Fatal(err)
	}
}

// setupCmdq does what mlx5_core's mlx5_cmd_init does: check the command interface
// revision, read the queue geometry, give the queue's page address, and wait (bounded) for
// the initializing bit to clear.
func (h *host) setupCmdq() {
	h.t.Helper()
	if rev := h.r32(4) >> 16; rev != prm.CmdIfRev {
		h.t.Fatalf("cmdif revision %d, want %d", rev, prm.CmdIfRev)
	}
	l := h.r32(0x14)
	if logSz, logStride := l>>4&0xf, l&0xf; 1<<logSz > prm.MaxCommands || 1<<logStride < 64 {
		h.t.Fatalf("command queue geometry log size %d stride %d", logSz, logStride)
	}
	h.cmdq = h.alloc(4096, 4096)
	h.w32(0x10, uint32(h.cmdq>>32))
	h.w32(0x14, uint32(h.cmdq))
	for i := 0; ; i++ {
		if h.r32(0x1fc)>>31 == 0 {
			break
		}
		if i == 10 {
			h.t.Fatal("initializing bit still set after 10 reads")
		}
	}
	h.queue = true
}

// statusErr is a command that completed with a bad status.
type statusErr struct {
	op       prm.CmdOp
	status   prm.Status
	syndrome uint32
}

func (e *statusErr) Error() string {
	return fmt.Sprintf("%v: status %v syndrome %#x", e.op, e.status, e.syndrome)
}

// deliveryErr is a command the device could not carry.
type deliveryErr struct{ status uint8 }

func (e *deliveryErr) Error() string { return fmt.Sprintf("delivery status %#x", e.status) }

// cmd runs one command: through the command queue (entry 0, inline 16 bytes, the rest in a
// chain of 1 KiB-aligned mailboxes with block numbers and the token, kernel cmd.c) or
// through Exec. The error is a *statusErr or *deliveryErr.
func (h *host) cmd(in []byte, outLen int) ([]byte, error) {
	h.t.Helper()
	op := prm.CmdOp(prm.CmdIn.Opcode.Get(in))
	if !h.queue {
		out := make([]byte, outLen)
		err := h.d.Exec(in, out)
		var ce *model.CmdError
		if errors.As(err, &ce) {
			return out, &statusErr{op, ce.Status, ce.Syndrome}
		}
		if err != nil {
			h.t.Fatal(err)
		}
		return out, nil
	}
	h.token++
	if h.token == 0 {
		h.token = 1
	}
	q := prm.CmdQueueEntry
	ent := h.at(h.cmdq, 64)
	clear(ent)
	q.Type.Set(ent, prm.CmdQueueEntryTypePCIe)
	q.InputLength.Set(ent, uint64(len(in)))
	q.OutputLength.Set(ent, uint64(outLen))
	q.Token.Set(ent, uint64(h.token))
	copy(ent[q.CommandInputInlineData.ByteOff():q.CommandInputInlineData.ByteOff()+16], in)
	inBoxes := h.chain(max(len(in)-16, 0))
	outBoxes := h.chain(max(outLen-16, 0))
	if len(inBoxes) > 0 {
		q.InputMailboxPointerHi.Set(ent, inBoxes[0]>>32)
		q.InputMailboxPointerLo.Set(ent, inBoxes[0]>>9)
		rest := in[16:]
		for _, b := range inBoxes {
			n := copy(h.at(b, 512), rest)
			rest = rest[n:]
		}
	}
	if len(outBoxes) > 0 {
		q.OutputMailboxPointerHi.Set(ent, outBoxes[0]>>32)
		q.OutputMailboxPointerLo.Set(ent, outBoxes[0]>>9)
	}
	if h.mangle != nil {
		h.mangle(ent, inBoxes, outBoxes)
	}
	q.Ownership.Set(ent, prm.CmdOwnerHW)
	h.w32(0x18, 1) // doorbell for entry 0
	if q.Ownership.Get(ent) != prm.CmdOwnerSW {
		h.t.Fatalf("%v: entry still owned by hardware after the doorbell", op)
	}
	if st := q.Status.Get(ent); st != 0 {
		return nil, &deliveryErr{uint8(st)}
	}
	out := make([]byte, outLen)
	oo := q.CommandOutputInlineData.ByteOff()
	copy(out, ent[oo:oo+16])
	rest := out[min(16, outLen):]
	for _, b := range outBoxes {
		n := copy(rest, h.at(b, 512))
		rest = rest[n:]
	}
	if st := prm.Status(prm.CmdOut.Status.Get(out)); st != prm.StatusOK {
		return out, &statusErr{op, st, uint32(prm.CmdOut.Syndrome.Get(out))}
	}
	return out, nil
}

// chain allocates mailboxes for n bytes, numbered and stamped with the current token.
func (h *host) chain(n int) []uint64 {
	var boxes []uint64
	for i := 0; i*512 < n; i++ {
		boxes = append(boxes, h.alloc(576, 1024))
	}
	b := prm.CmdIfBox
	for i, a := range boxes {
		box := h.at(a, 576)
		b.BlockNumber.Set(box, uint64(i))
		b.Token.Set(box, uint64(h.token))
		if i+1 < len(boxes) {
			b.NextPointerHi.Set(box, boxes[i+1]>>32)
			b.NextPointerLo.Set(box, boxes[i+1]>>10)
		}
	}
	return boxes
}

// mustCmd runs a command that must succeed.
func (h *host) mustCmd(in []byte, outLen int) []byte {
	h.t.Helper()
	out, err := h.cmd(in, outLen)
	if err != nil {
		h.t.Fatalf("%v", err)
	}
	return out
}

// wantStatus runs a command that must fail with status.
func (h *host) wantStatus(in []byte, outLen int, status prm.Status) uint32 {
	h.t.Helper()
	_, err := h.cmd(in, outLen)
	var se *statusErr
	if !errors.As(err, &se) || se.status != status {
		h.t.Fatalf("%v: got %v, want status %v", prm.CmdOp(prm.CmdIn.Opcode.Get(in)), err, status)
	}
	return se.syndrome
}

// in builds a command input of n bytes with the opcode and op_mod set and fields set.
func in(op prm.CmdOp, opMod uint16, n int, kv ...any) []byte {
	b := make([]byte, n)
	prm.CmdIn.Opcode.Set(b, uint64(op))
	prm.CmdIn.OpMod.Set(b, uint64(opMod))
	for i := 0; i+1 < len(kv); i += 2 {
		f := kv[i].(prm.Field)
		var v uint64
		switch x := kv[i+1].(type) {
		case int:
			v = uint64(x)
		case uint64:
			v = x
		case uint32:
			v = uint64(x)
		case bool:
			if x {
				v = 1
			}
		default:
			panic(fmt.Sprintf("value %T", x))
		}
		if !f.Set(b, v) {
			panic(fmt.Sprintf("%v beyond %d bytes", f, n))
		}
	}
	return b
}

// get reads an output field.
func get(out []byte, f prm.Field) uint64 { return f.Get(out) }

// pages gives n pages to firmware with MANAGE_PAGES, returning their addresses.
func (h *host) givePages(n int) []uint64 {
	h.t.Helper()
	if n == 0 {
		return nil
	}
	pas := prm.ManagePagesIn.PAS
	b := in(prm.CmdOpManagePages, prm.ManagePagesGive, pas.ByteOff()+8*n,
		prm.ManagePagesIn.InputNumEntries, n)
	var pages []uint64
	for i := 0; i < n; i++ {
		p := h.alloc(4096, 4096)
		pas.At(uint32(i)*64).Set(b, p)
		pages = append(pages, p)
	}
	h.mustCmd(b, 16)
	return pages
}

// queryPages asks how many pages firmware wants for op_mod.
func (h *host) queryPages(opMod uint16) int32 {
	h.t.Helper()
	out := h.mustCmd(in(prm.CmdOpQueryPages, opMod, 16), 16)
	return int32(uint32(get(out, prm.QueryPagesOut.NumPages)))
}

// bringUp runs the bring-up sequence in mlx5_vfio.c's order and returns the pages given.
func (h *host) bringUp() []uint64 {
	h.t.Helper()
	h.mustCmd(in(prm.CmdOpEnableHCA, 0, 16), 16)
	out := h.mustCmd(in(prm.CmdOpQueryISSI, 0, 16), 0x70)
	if get(out, prm.QueryISSIOut.SupportedISSIDw0)&2 == 0 {
		h.t.Fatal("ISSI 1 not supported")
	}
	h.mustCmd(in(prm.CmdOpSetISSI, 0, 16, prm.SetISSIIn.CurrentISSI, 1), 16)
	pages := h.givePages(int(h.queryPages(prm.QueryPagesBoot)))
	reg := in(prm.CmdOpAccessReg, prm.AccessRegWrite, 0x20, prm.AccessRegisterIn.RegisterID, prm.RegHostEndianness)
	h.mustCmd(reg, 0x20)
	capOut := h.mustCmd(in(prm.CmdOpQueryHCACap, uint16(prm.CapTypeGeneral)<<1|prm.CapOpModCur, 16), int(prm.QueryHCACapOut.Capability.End()/8))
	set := in(prm.CmdOpSetHCACap, uint16(prm.CapTypeGeneral)<<1, int(prm.SetHCACapIn.Capability.End()/8))
	copy(prm.SetHCACapIn.Capability.Slice(set), prm.QueryHCACapOut.Capability.Slice(capOut))
	h.mustCmd(set, 16)
	pages = append(pages, h.givePages(int(h.queryPages(prm.QueryPagesInit)))...)
	h.mustCmd(in(prm.CmdOpInitHCA, 0, 16), 16)
	return pages
}

// capability reads a current capability.
func (h *host) capability(t prm.CapType, f prm.Field) uint64 {
	h.t.Helper()
	out := h.mustCmd(in(prm.CmdOpQueryHCACap, uint16(t)<<1|prm.CapOpModCur, 16), int(prm.QueryHCACapOut.Capability.End()/8))
	return f.At(prm.QueryHCACapOut.Capability.Off).Get(out)
}

// bringUpRest finishes a bring-up begun with ENABLE_HCA: pages and INIT_HCA.
func (h *host) bringUpRest() {
	h.t.Helper()
	h.givePages(int(h.queryPages(prm.QueryPagesBoot)))
	h.givePages(int(h.queryPages(prm.QueryPagesInit)))
	h.mustCmd(in(prm.CmdOpInitHCA, 0, 16), 16)
}
