package model_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// eqRing is a test EQ: its ring in host memory with every owner bit 1 at first, as the
// kernel's eq.c init_eq_buf leaves it, so that the first lap's EQEs (owner 0) are new.
type eqRing struct {
	h       *host
	n       uint32
	uar     uint32
	ring    uint64
	logSize uint
	ci      uint32
}

func (h *host) createEQ(uar uint32, logSize uint, events ...prm.EventType) *eqRing {
	h.t.Helper()
	r := &eqRing{h: h, uar: uar, logSize: logSize}
	size := 64 << logSize
	r.ring = h.alloc(max(size, 4096), 4096)
	for i := 0; i < 1<<logSize; i++ {
		prm.EQE.Owner.Set(h.at(r.ring+uint64(i)*64, 64), 1)
	}
	base := prm.CreateEQIn.EQContextEntry.Off
	b := in(prm.CmdOpCreateEQ, 0, prm.CreateEQIn.PAS.ByteOff()+8,
		prm.EQC.LogEQSize.At(base), int(logSize), prm.EQC.UARPage.At(base), uar,
		prm.EQC.Intr.At(base), 3, prm.CreateEQIn.PAS, r.ring)
	var mask uint64
	for _, e := range events {
		mask |= 1 << e
	}
	prm.CreateEQIn.EventBitmask.Set(b, mask)
	out := h.mustCmd(b, 16)
	r.n = uint32(get(out, prm.CreateEQOut.EQNumber))
	return r
}

// next returns the next EQE if software owns it (owner bit equal to the lap parity, kernel
// eq.c next_eqe_sw), advancing the consumer index.
func (r *eqRing) next() []byte {
	e := r.h.at(r.ring+uint64(r.ci&(1<<r.logSize-1))*64, 64)
	if prm.EQE.Owner.Get(e) != uint64(r.ci>>r.logSize&1) {
		return nil
	}
	r.ci++
	return e
}

// arm writes the EQ doorbell that arms it (UAR offset 0x40: eqn << 24 | ci, kernel eq.c).
func (r *eqRing) arm() {
	r.h.w32(int64(r.uar)<<12+prm.UAREQDoorbellArm, r.n<<24|r.ci&0xffffff)
}

func (h *host) allocUAR() uint32 {
	h.t.Helper()
	return uint32(get(h.mustCmd(in(prm.CmdOpAllocUAR, 0, 16), 16), prm.AllocUAROut.UAR))
}

// TestBringUpThroughCommandQueue drives the whole bring-up as mlx5_core (main.c
// mlx5_function_setup, cmd.c) and rdma-core's mlx5_vfio.c do it, every command through the
// command queue in BAR0 with mailbox chains (QUERY_HCA_CAP's 4 KiB page comes back over 9
// output mailboxes; 64 init pages go in over 2), then events, page requests, health,
// teardown and page reclaim.
func TestBringUpThroughCommandQueue(t *testing.T) {
	var irqs []uint16
	d := model.New(model.Config{Interrupt: func(v uint16) { irqs = append(irqs, v) }})
	h := newHost(t, d, 8<<20)

	// Init segment at reset (device.h struct mlx5_init_seg / mlx5_ifc.h initial_seg):
	// fw_rev is minor<<16 | major, cmdif_rev_fw_sub is cmdif<<16 | subminor, and the
	// initializing bit (bit 31 at 0x1fc) is set on the first read only.
	if v := h.r32(0); v != 35<<16|16 {
		t.Fatalf("fw_rev %#x", v)
	}
	if v := h.r32(4); v != prm.CmdIfRev<<16|4030 {
		t.Fatalf("cmdif_rev_fw_sub %#x", v)
	}
	if h.r32(0x1fc)>>31 != 1 || h.r32(0x1fc)>>31 != 0 {
		t.Fatal("initializing bit: want set on the first read, clear on the second")
	}
	h.setupCmdq()

	// Before ENABLE_HCA firmware takes nothing else (mlx5_core enables first).
	h.wantStatus(in(prm.CmdOpQueryISSI, 0, 16), 0x70, prm.StatusBadSysStateErr)
	pages := h.bringUp()
	if len(pages) != 32+64 {
		t.Fatalf("gave %d pages, want the default 32 boot + 64 init", len(pages))
	}
	if n := h.queryPages(prm.QueryPagesInit); n != 0 {
		t.Fatalf("QUERY_PAGES init after INIT_HCA: %d", n)
	}
	if h.capability(prm.CapTypeGeneral, prm.CmdHCACap.PortType) != prm.PortTypeEth {
		t.Fatal("port_type is not Ethernet")
	}

	// Vport context: permanent MAC, MTU, and MODIFY with field_select.mtu.
	vq := func() []byte {
		return h.mustCmd(in(prm.CmdOpQueryNICVportContext, 0, 16), int(prm.QueryNICVportContextOut.NICVportContext.End()/8))
	}
	vbase := prm.QueryNICVportContextOut.NICVportContext.Off
	out := vq()
	mac := prm.NICVportContext.PermanentAddress.Off + vbase
	if hi, lo := get(out, prm.MACAddressLayout.MACAddrHi.At(mac)), get(out, prm.MACAddressLayout.MACAddrLo.At(mac)); hi != 0x0200 || lo != 1 {
		t.Fatalf("MAC %04x%08x", hi, lo)
	}
	if mtu := get(out, prm.NICVportContext.MTU.At(vbase)); mtu != 1522 {
		t.Fatalf("mtu %d", mtu)
	}
	mbase := prm.ModifyNICVportContextIn.NICVportContext.Off
	h.mustCmd(in(prm.CmdOpModifyNICVportContext, 0, int(prm.ModifyNICVportContextIn.NICVportContext.End()/8),
		prm.ModifyNICVportFieldSelect.MTU.At(prm.ModifyNICVportContextIn.FieldSelect.Off), 1,
		prm.NICVportContext.MTU.At(mbase), 9000), 16)
	if mtu := get(vq(), prm.NICVportContext.MTU.At(vbase)); mtu != 9000 {
		t.Fatalf("mtu after MODIFY %d", mtu)
	}

	// An EQ for command completions and page requests, armed.
	uar := h.allocUAR()
	if uar < 2 {
		t.Fatalf("UAR index %d overlaps the init segment's pages", uar)
	}
	eq := h.createEQ(uar, 4, prm.EventTypeCmd, prm.EventTypePageRequest)
	eq.arm()
	h.mustCmd(in(prm.CmdOpNop, 0, 16), 16)
	e := eq.next()
	if e == nil || prm.EventType(get(e, prm.EQE.EventType)) != prm.EventTypeCmd {
		t.Fatalf("no command-completion EQE after NOP: % x", e)
	}
	if v := get(prm.EQE.EventData.Slice(e), prm.CmdInterCompEvent.CommandCompletionVector); v != 1 {
		t.Fatalf("command completion vector %#x, want entry 0", v)
	}
	if !slices.Equal(irqs, []uint16{3}) {
		t.Fatalf("interrupts %v, want one on vector 3 (armed EQ)", irqs)
	}

	// Page request: an EQE with num_pages, QUERY_PAGES regular reports it, MANAGE_PAGES
	// satisfies it.
	if !d.RequestPages(8) {
		t.Fatal("no EQ took the page request")
	}
	for e = eq.next(); e != nil && prm.EventType(get(e, prm.EQE.EventType)) == prm.EventTypeCmd; e = eq.next() {
	}
	if e == nil || prm.EventType(get(e, prm.EQE.EventType)) != prm.EventTypePageRequest ||
		get(prm.EQE.EventData.Slice(e), prm.EQEPageReq.NumPages) != 8 {
		t.Fatalf("page request EQE: % x", e)
	}
	if n := h.queryPages(prm.QueryPagesRegular); n != 8 {
		t.Fatalf("QUERY_PAGES regular %d, want 8", n)
	}
	pages = append(pages, h.givePages(8)...)
	if n := h.queryPages(prm.QueryPagesRegular); n != 0 {
		t.Fatalf("QUERY_PAGES regular after giving %d", n)
	}
	// Firmware offering 4 pages back: a negative num_pages (device.h mlx5_eqe_page_req is
	// signed), reclaimed with MANAGE_PAGES take.
	d.RequestPages(-4)
	for e = eq.next(); e != nil && prm.EventType(get(e, prm.EQE.EventType)) == prm.EventTypeCmd; e = eq.next() {
	}
	if e == nil || int32(get(prm.EQE.EventData.Slice(e), prm.EQEPageReq.NumPages)) != -4 {
		t.Fatalf("page return EQE: % x", e)
	}
	if n := h.queryPages(prm.QueryPagesRegular); n != -4 {
		t.Fatalf("QUERY_PAGES regular %d, want -4", n)
	}
	out = h.mustCmd(in(prm.CmdOpManagePages, prm.ManagePagesTake, 16, prm.ManagePagesIn.InputNumEntries, 4), prm.ManagePagesOut.PAS.ByteOff()+4*8)
	if n := get(out, prm.ManagePagesOut.OutputNumEntries); n != 4 {
		t.Fatalf("MANAGE_PAGES take returned %d pages, want 4", n)
	}
	for i := range 4 {
		pa := get(out, prm.ManagePagesOut.PAS.At(uint32(i)*64))
		j := slices.Index(pages, pa)
		if j < 0 {
			t.Fatalf("firmware returned page %#x it was never given", pa)
		}
		pages = slices.Delete(pages, j, j+1)
	}
	if n := h.queryPages(prm.QueryPagesRegular); n != 0 {
		t.Fatalf("QUERY_PAGES regular after the return: %d", n)
	}

	// Health: the counter (low 24 bits at 0x1010) ticks with device time, the internal timer
	// counts device_frequency_khz.
	c0, t0 := h.r32(0x1010)&0xffffff, uint64(h.r32(0x1000))<<32|uint64(h.r32(0x1004))
	d.Advance(time.Second)
	c1, t1 := h.r32(0x1010)&0xffffff, uint64(h.r32(0x1000))<<32|uint64(h.r32(0x1004))
	if c1 <= c0 {
		t.Fatalf("health counter %d → %d over a second", c0, c1)
	}
	if t1-t0 != 1_000_000_000 {
		t.Fatalf("internal timer moved %d ticks in 1 s at 1 GHz", t1-t0)
	}

	// Fast teardown as mlx5_vfio.c does it: PREPARE_FAST_TEARDOWN answers state 0 (not
	// failed), then the NIC interface state (cmdq_addr_l_sz bits 10:8) is set to
	// disabled (1) and read back, with the queue address and geometry kept.
	out = h.mustCmd(in(prm.CmdOpTeardownHCA, 0, 16, prm.TeardownHCAIn.Profile, prm.TeardownPrepareFast), 16)
	if get(out, prm.TeardownHCAOut.State) != 0 {
		t.Fatal("fast teardown reported failure")
	}
	l := h.r32(0x14)
	h.w32(0x14, l&0xfffff000|1<<8)
	if got := h.r32(0x14); got>>8&7 != 1 || got&0xfffff000 != l&0xfffff000 || got&0xff != l&0xff {
		t.Fatalf("cmdq_addr_l_sz %#x after setting the NIC state disabled (was %#x)", got, l)
	}
	// Reclaim every page (mlx5_core's reclaim_pages_cmd loop).
	h.wantStatus(in(prm.CmdOpAllocPD, 0, 16), 16, prm.StatusBadSysStateErr)
	var back []uint64
	for range 10 {
		out := h.mustCmd(in(prm.CmdOpManagePages, prm.ManagePagesTake, 16, prm.ManagePagesIn.InputNumEntries, 64), prm.ManagePagesOut.PAS.ByteOff()+64*8)
		n := int(get(out, prm.ManagePagesOut.OutputNumEntries))
		for i := range n {
			back = append(back, get(out, prm.ManagePagesOut.PAS.At(uint32(i)*64)))
		}
		if n == 0 {
			break
		}
	}
	slices.Sort(back)
	slices.Sort(pages)
	if !slices.Equal(back, pages) {
		t.Fatalf("reclaimed %d pages, gave %d (or different ones)", len(back), len(pages))
	}
	h.mustCmd(in(prm.CmdOpDisableHCA, 0, 16), 16)
	h.wantStatus(in(prm.CmdOpQueryISSI, 0, 16), 0x70, prm.StatusBadSysStateErr)
}

// TestCommandQueueDeliveryErrors checks the delivery statuses of the entry's status field
// (kernel cmd.c MLX5_CMD_DELIVERY_STAT_*): a mailbox with another token, a block out of
// order, a bad entry type and an output too short for the header are not delivered.
func TestCommandQueueDeliveryErrors(t *testing.T) {
	d := model.New(model.Config{})
	h := newHost(t, d, 4<<20)
	h.setupCmdq()
	h.mustCmd(in(prm.CmdOpEnableHCA, 0, 16), 16)
	long := in(prm.CmdOpSetISSI, 0, 1200, prm.SetISSIIn.CurrentISSI, 1) // 3 input mailboxes
	for _, c := range []struct {
		name   string
		mangle func(ent []byte, in, out []uint64)
		outLen int
		want   prm.DeliveryStatus
	}{
		{"token", func(_ []byte, in, _ []uint64) { prm.CmdIfBox.Token.Set(h.at(in[1], 576), 0x5a) }, 16, prm.DeliveryTokenErr},
		{"block number", func(_ []byte, in, _ []uint64) { prm.CmdIfBox.BlockNumber.Set(h.at(in[2], 576), 7) }, 16, prm.DeliveryBadBlockNumErr},
		{"entry type", func(ent []byte, _, _ []uint64) { prm.CmdQueueEntry.Type.Set(ent, 1) }, 16, prm.DeliveryCmdDescrErr},
		{"short output", func(ent []byte, _, _ []uint64) { prm.CmdQueueEntry.OutputLength.Set(ent, 4) }, 16, prm.DeliveryOutLengthErr},
		{"unmapped chain", func(_ []byte, in, _ []uint64) {
			prm.CmdIfBox.NextPointerHi.Set(h.at(in[0], 576), 0x7)
		}, 16, prm.DeliveryInPtrAlignErr},
		{"output token", func(_ []byte, _, out []uint64) { prm.CmdIfBox.Token.Set(h.at(out[0], 576), 0x5a) }, 600, prm.DeliveryTokenErr},
		{"output chain cut", func(_ []byte, _, out []uint64) {
			prm.CmdIfBox.NextPointerLo.Set(h.at(out[0], 576), 0)
		}, 1200, prm.DeliveryOutPtrAlignErr},
	} {
		h.mangle = c.mangle
		_, err := h.cmd(long, c.outLen)
		h.mangle = nil
		var de *deliveryErr
		if !errors.As(err, &de) || prm.DeliveryStatus(de.status) != c.want {
			t.Errorf("%s: got %v, want delivery status %#x", c.name, err, c.want)
		}
	}
	// None of them ran: SET_ISSI 1 did not take, even where only the output was bad.
	if out := h.mustCmd(in(prm.CmdOpQueryISSI, 0, 16), 0x70); get(out, prm.QueryISSIOut.CurrentISSI) != 0 {
		t.Fatal("a command that was not delivered took effect")
	}
	// The queue still works afterwards, and the long command went through intact.
	h.mustCmd(long, 16)
	out := h.mustCmd(in(prm.CmdOpQueryISSI, 0, 16), 0x70)
	if get(out, prm.QueryISSIOut.CurrentISSI) != 1 {
		t.Fatal("SET_ISSI through three input mailboxes did not take")
	}
}

// TestExecErrors checks the PRM statuses of malformed commands on the direct path: short
// input, unknown opcode, a command before its state, INIT_HCA without pages (device.h
// MLX5_CMD_STAT_*), and an output buffer without room for the status.
func TestExecErrors(t *testing.T) {
	d := model.New(model.Config{})
	h := newHost(t, d, 1<<20)
	if err := d.Exec(make([]byte, 16), make([]byte, 8)); err == nil {
		t.Fatal("Exec with an 8-byte output buffer succeeded")
	}
	h.wantStatus(make([]byte, 4), 16, prm.StatusBadInpLenErr)
	h.mustCmd(in(prm.CmdOpEnableHCA, 0, 16), 16)
	h.wantStatus(in(0x7ff, 0, 16), 16, prm.StatusBadOpErr)
	h.wantStatus(in(prm.CmdOpSetISSI, 0, 16, prm.SetISSIIn.CurrentISSI, 2), 16, prm.StatusBadParamErr)
	h.wantStatus(in(prm.CmdOpCreateCQ, 0, 16), 16, prm.StatusBadSysStateErr)
	if s := h.wantStatus(in(prm.CmdOpInitHCA, 0, 16), 16, prm.StatusNoResErr); s != model.SyndromePages {
		t.Fatalf("INIT_HCA without pages: syndrome %#x", s)
	}
	h.wantStatus(in(prm.CmdOpQueryPages, 7, 16), 16, prm.StatusBadParamErr)
	h.wantStatus(in(prm.CmdOpAccessReg, prm.AccessRegRead, 16, prm.AccessRegisterIn.RegisterID, 0x5001), 0x20, prm.StatusBadParamErr)
	// Pages must be mapped, aligned and given once.
	bad := in(prm.CmdOpManagePages, prm.ManagePagesGive, 24, prm.ManagePagesIn.InputNumEntries, 1, prm.ManagePagesIn.PAS, 0x1000)
	h.wantStatus(bad, 16, prm.StatusBadParamErr)
	p := h.givePages(1)
	h.wantStatus(in(prm.CmdOpManagePages, prm.ManagePagesGive, 24, prm.ManagePagesIn.InputNumEntries, 1, prm.ManagePagesIn.PAS, p[0]), 16, prm.StatusBadParamErr)
	h.wantStatus(in(prm.CmdOpManagePages, prm.ManagePagesGive, 24, prm.ManagePagesIn.InputNumEntries, 1, prm.ManagePagesIn.PAS, p[0]+8), 16, prm.StatusBadParamErr)
	// A truncated page list is a short input.
	h.wantStatus(in(prm.CmdOpManagePages, prm.ManagePagesGive, 24, prm.ManagePagesIn.InputNumEntries, 4), 16, prm.StatusBadInpLenErr)
}

// TestHealthFailure: a device that fails shows the health syndrome in the init segment and
// the health buffer, its health counter stops (what mlx5_core's poll_health watches), and
// commands complete with INT_ERR.
func TestHealthFailure(t *testing.T) {
	d := model.New(model.Config{})
	h := newHost(t, d, 4<<20)
	h.setupCmdq()
	h.mustCmd(in(prm.CmdOpEnableHCA, 0, 16), 16)
	d.Advance(time.Second)
	d.Fail(prm.InitialSegHealthFWInternalErr)
	c0 := h.r32(0x1010)
	d.Advance(10 * time.Second)
	c1 := h.r32(0x1010)
	if c0 != c1 || c1>>24 != prm.InitialSegHealthFWInternalErr {
		t.Fatalf("health word %#x then %#x: want a frozen counter under syndrome %#x", c0, c1, prm.InitialSegHealthFWInternalErr)
	}
	var hb [64]byte
	if _, err := d.BAR0().ReadAt(hb[:], 0x200); err != nil {
		t.Fatal(err)
	}
	if s := prm.HealthBuffer.Synd.Get(hb[:]); s != prm.InitialSegHealthFWInternalErr {
		t.Fatalf("health buffer synd %#x", s)
	}
	h.wantStatus(in(prm.CmdOpNop, 0, 16), 16, prm.StatusIntErr)
}

// TestCommandQueueTwoEntries rings two entries with one doorbell (bits 0 and 1, kernel cmd.c
// writes 1 << index per command and may have several in flight): both complete and one
// command-completion EQE carries both bits in its vector.
func TestCommandQueueTwoEntries(t *testing.T) {
	d := model.New(model.Config{})
	h := newHost(t, d, 8<<20)
	h.setupCmdq()
	h.bringUp()
	eq := h.createEQ(h.allocUAR(), 4, prm.EventTypeCmd)
	for e := eq.next(); e != nil; e = eq.next() { // completions of the set-up commands
	}
	q := prm.CmdQueueEntry
	ops := []prm.CmdOp{prm.CmdOpNop, prm.CmdOpQueryPages}
	for i, op := range ops {
		ent := h.at(h.cmdq+uint64(i)*64, 64)
		clear(ent)
		q.Type.Set(ent, prm.CmdQueueEntryTypePCIe)
		q.InputLength.Set(ent, 16)
		q.OutputLength.Set(ent, 16)
		q.Token.Set(ent, uint64(0x40+i))
		opMod := uint16(0)
		if op == prm.CmdOpQueryPages {
			opMod = prm.QueryPagesInit
		}
		copy(ent[q.CommandInputInlineData.ByteOff():], in(op, opMod, 16))
		q.Ownership.Set(ent, prm.CmdOwnerHW)
	}
	h.w32(0x18, 3)
	for i, op := range ops {
		ent := h.at(h.cmdq+uint64(i)*64, 64)
		out := ent[q.CommandOutputInlineData.ByteOff():]
		if q.Ownership.Get(ent) != prm.CmdOwnerSW || q.Status.Get(ent) != 0 || prm.CmdOut.Status.Get(out) != 0 {
			t.Fatalf("entry %d (%v) not completed OK: % x", i, op, ent)
		}
	}
	e := eq.next()
	if e == nil || get(prm.EQE.EventData.Slice(e), prm.CmdInterCompEvent.CommandCompletionVector) != 3 {
		t.Fatalf("command-completion EQE % x, want vector 0b11", e)
	}
	if eq.next() != nil {
		t.Fatal("more than one completion EQE for one doorbell")
	}
}
