package model_test

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// knownStatus reports whether s is one of the PRM's command statuses (device.h
// MLX5_CMD_STAT_*).
func knownStatus(s prm.Status) bool {
	switch s {
	case prm.StatusOK, prm.StatusIntErr, prm.StatusBadOpErr, prm.StatusBadParamErr, prm.StatusBadSysStateErr,
		prm.StatusBadResErr, prm.StatusResBusy, prm.StatusLimErr, prm.StatusBadResStateErr, prm.StatusIxErr,
		prm.StatusNoResErr, prm.StatusBadInpLenErr, prm.StatusBadOutpLenErr, prm.StatusBadQPStateErr,
		prm.StatusBadPktErr, prm.StatusBadSizeOutsCqesErr:
		return true
	}
	return false
}

// fuzzReady is the device state every fuzz input starts from: brought up, with a UAR, an EQ,
// a PD, a TD, a CQ, an RQ and a TIS, so that object commands reach their checks. Numbers and
// addresses are the same for every input (fresh device, same allocation order), so seeds
// can name them.
func fuzzReady(t testing.TB) *ready {
	r := newReadySize(t, model.Config{}, 2<<20)
	cq := r.createCQ(6)
	r.createRQ(cq)
	r.createTIS()
	return r
}

// FuzzExec feeds random command bytes to the direct command path. The first two input bytes
// are the output length (mod 8 KiB, at least 16), the rest is the command. Whatever the
// bytes, the device must not panic, must answer with a PRM status (never an unknown one),
// and Exec's error must agree with the status and syndrome it wrote.
func FuzzExec(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 2 {
			return
		}
		r := fuzzReady(t)
		outLen := 16 + int(binary.BigEndian.Uint16(data))%(8<<10)
		cmd := data[2:]
		out := make([]byte, outLen)
		err := r.d.Exec(cmd, out)
		st := prm.Status(prm.CmdOut.Status.Get(out))
		if !knownStatus(st) {
			t.Fatalf("status %#x is not a PRM status", st)
		}
		var ce *model.CmdError
		switch {
		case err == nil && st != prm.StatusOK:
			t.Fatalf("Exec returned nil with status %v", st)
		case err != nil && !errors.As(err, &ce):
			t.Fatalf("Exec error %v is not a *CmdError", err)
		case err != nil && (ce.Status != st || ce.Syndrome != uint32(prm.CmdOut.Syndrome.Get(out))):
			t.Fatalf("CmdError %v disagrees with the output (status %v)", ce, st)
		}
		// The device still answers afterwards.
		q := make([]byte, 0x70)
		if err := r.d.Exec(in(prm.CmdOpQueryISSI, 0, 16), q); err != nil {
			var ce *model.CmdError
			if !errors.As(err, &ce) || ce.Status != prm.StatusBadSysStateErr {
				t.Fatalf("QUERY_ISSI after the fuzzed command: %v", err)
			}
		}
	})
}

// FuzzCmdQueue writes random bytes over a command-queue entry and its first input and
// output mailboxes (with the ownership bit set) and rings the doorbell: the device must not
// panic, must hand the entry back (ownership 0) or leave it alone, and never write outside
// the mapped memory (the DMA space refuses that without panicking).
func FuzzCmdQueue(f *testing.F) {
	f.Fuzz(func(t *testing.T, entry []byte, inBox []byte, outBox []byte) {
		d := model.New(model.Config{})
		h := newHost(t, d, 1<<20)
		h.setupCmdq()
		h.mustCmd(in(prm.CmdOpEnableHCA, 0, 16), 16)
		ent := h.at(h.cmdq, 64)
		copy(ent, entry)
		// Point the entry's mailboxes at two real blocks whose contents are fuzzed.
		ib, ob := h.alloc(576, 1024), h.alloc(576, 1024)
		copy(h.at(ib, 576), inBox)
		copy(h.at(ob, 576), outBox)
		q := prm.CmdQueueEntry
		if len(entry) > 0 && entry[0]&1 != 0 {
			q.InputMailboxPointerHi.Set(ent, ib>>32)
			q.InputMailboxPointerLo.Set(ent, ib>>9)
			q.OutputMailboxPointerHi.Set(ent, ob>>32)
			q.OutputMailboxPointerLo.Set(ent, ob>>9)
		}
		q.Ownership.Set(ent, prm.CmdOwnerHW)
		h.w32(0x18, 1)
		if q.Ownership.Get(ent) != prm.CmdOwnerSW {
			t.Fatal("entry not handed back")
		}
		st := q.Status.Get(ent)
		if st > uint64(prm.DeliveryCmdDescrErr) {
			t.Fatalf("delivery status %#x", st)
		}
		if st == 0 && q.OutputLength.Get(ent) >= 16 {
			out := ent[q.CommandOutputInlineData.ByteOff():]
			if s := prm.Status(prm.CmdOut.Status.Get(out)); !knownStatus(s) {
				t.Fatalf("status %#x is not a PRM status", s)
			}
		}
	})
}

// TestWriteFuzzSeeds regenerates the committed seed corpora (testdata/fuzz): one valid
// command per opcode the model implements, as the object tests build them, plus truncations.
// It runs only with MLX5_WRITE_SEEDS=1.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("MLX5_WRITE_SEEDS") != "1" {
		t.Skip("set MLX5_WRITE_SEEDS=1 to rewrite testdata/fuzz")
	}
	r := fuzzReady(t)
	// Numbers fuzzReady's objects got, and fresh memory past its allocations.
	seeds := map[string][]byte{}
	add := func(name string, outLen int, cmd []byte) {
		b := binary.BigEndian.AppendUint16(nil, uint16(outLen-16))
		seeds[name] = append(b, cmd...)
		if len(cmd) > 24 {
			seeds[name+"-short"] = append(append([]byte(nil), b...), cmd[:len(cmd)/2]...)
		}
	}
	capLen := int(prm.QueryHCACapOut.Capability.End() / 8)
	add("query_issi", 0x70, in(prm.CmdOpQueryISSI, 0, 16))
	add("set_issi", 16, in(prm.CmdOpSetISSI, 0, 16, prm.SetISSIIn.CurrentISSI, 1))
	add("query_pages", 16, in(prm.CmdOpQueryPages, prm.QueryPagesRegular, 16))
	add("manage_pages_take", 0x100, in(prm.CmdOpManagePages, prm.ManagePagesTake, 16, prm.ManagePagesIn.InputNumEntries, 8))
	add("manage_pages_give", 16, in(prm.CmdOpManagePages, prm.ManagePagesGive, 24, prm.ManagePagesIn.InputNumEntries, 1, prm.ManagePagesIn.PAS, r.alloc(4096, 4096)))
	add("access_reg", 0x20, in(prm.CmdOpAccessReg, prm.AccessRegWrite, 0x20, prm.AccessRegisterIn.RegisterID, prm.RegHostEndianness))
	add("query_hca_cap", capLen, in(prm.CmdOpQueryHCACap, uint16(prm.CapTypeFlowTable)<<1|1, 16))
	add("teardown", 16, in(prm.CmdOpTeardownHCA, 0, 16))
	add("query_vport", 0x200, in(prm.CmdOpQueryNICVportContext, 0, 16))
	add("alloc_pd", 16, in(prm.CmdOpAllocPD, 0, 16))
	add("alloc_uar", 16, in(prm.CmdOpAllocUAR, 0, 16))
	add("create_mkey", 16, func() []byte {
		base := prm.CreateMKeyIn.MemoryKeyMKeyEntry.Off
		return in(prm.CmdOpCreateMKey, 0, prm.CreateMKeyIn.KlmPASMtt.ByteOff(), withCtx(base, kv{
			prm.MKC.AccessMode10, prm.MKeyAccessPA, prm.MKC.Lr, 1, prm.MKC.PD, r.pd, prm.MKC.StartAddr, r.base, prm.MKC.Len, 4096})...)
	}())
	add("create_cq", 16, r.cqIn(6))
	add("create_rq", 16, r.rqIn(1, nil, nil))
	add("create_rq_striding", 16, r.rqIn(1, nil, kv{prm.WQ.WQType, prm.WQTypeCyclicStriding}))
	add("create_sq", 16, r.sqIn(1, 1, nil, nil))
	add("create_rqt", 16, rqtIn(prm.CmdOpCreateRQT, prm.CreateRQTIn.RQTContext, 2, []uint32{1}))
	add("create_tir", 16, in(prm.CmdOpCreateTIR, 0, int(prm.CreateTIRIn.Ctx.End()/8), prm.TIRC.TransportDomain.At(prm.CreateTIRIn.Ctx.Off), r.td, prm.TIRC.InlineRQN.At(prm.CreateTIRIn.Ctx.Off), 1))
	add("create_flow_table", 16, in(prm.CmdOpCreateFlowTable, 0, int(prm.CreateFlowTableIn.FlowTableContext.End()/8), prm.FlowTableContext.LogSize.At(prm.CreateFlowTableIn.FlowTableContext.Off), 4))
	add("create_flow_group", 16, in(prm.CmdOpCreateFlowGroup, 0, int(prm.CreateFlowGroupIn.MatchCriteria.End()/8), prm.CreateFlowGroupIn.TableID, 1, prm.CreateFlowGroupIn.EndFlowIndex, 3))
	add("set_fte", 16, in(prm.CmdOpSetFlowTableEntry, 0, int(prm.SetFTEIn.FlowContext.End()/8)+16, prm.SetFTEIn.TableID, 1,
		prm.FlowContext.Action.At(prm.SetFTEIn.FlowContext.Off), prm.FlowActionDrop))
	add("reformat", 16, in(prm.CmdOpAllocPacketReformatContext, 0, 0x60,
		prm.PacketReformatContextIn.ReformatDataSize.At(prm.AllocPacketReformatContextIn.PacketReformatContext.Off), 50))
	add("set_pp", 16, in(prm.CmdOpSetPPRateLimit, 0, int(prm.SetPPRateLimitIn.Ctx.End()/8), prm.SetPPRateLimitIn.RateLimitIndex, 1,
		prm.SetPPRateLimitContext.RateLimit.At(prm.SetPPRateLimitIn.Ctx.Off), 5000))
	add("create_eq", 16, in(prm.CmdOpCreateEQ, 0, prm.CreateEQIn.PAS.ByteOff()+8, prm.EQC.UARPage.At(prm.CreateEQIn.EQContextEntry.Off), r.uar, prm.CreateEQIn.PAS, r.alloc(4096, 4096)))
	add("modify_rq", 16, in(prm.CmdOpModifyRQ, 0, int(prm.ModifyRQIn.Ctx.End()/8), prm.ModifyRQIn.RQN, 1, prm.RQC.State.At(prm.ModifyRQIn.Ctx.Off), 1))
	add("query_vport_state", 16, in(prm.CmdOpQueryVportState, 0, 16))
	add("query_vport_counter", 0x200, in(prm.CmdOpQueryVportCounter, 0, 0x20))
	add("modify_flow_table", 16, in(prm.CmdOpModifyFlowTable, 0, int(prm.ModifyFlowTableIn.FlowTableContext.End()/8), prm.ModifyFlowTableIn.TableID, 1,
		prm.ModifyFlowTableIn.ModifyFieldSelect, prm.ModifyFlowTableMissTableID))
	add("modify_tir", 16, in(prm.CmdOpModifyTIR, 0, int(prm.ModifyTIRIn.Ctx.End()/8), prm.ModifyTIRIn.TIRN, 1, prm.ModifyTIRIn.Bitmask, 4))
	add("query_q_counter", 0x100, in(prm.CmdOpQueryQCounter, 0, 0x20, prm.QueryQCounterIn.CounterSetID, 1))
	dir := filepath.Join("testdata", "fuzz", "FuzzExec")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range seeds {
		writeSeed(t, filepath.Join(dir, name), b)
	}
	// Command-queue seeds: a good entry (type 7, 16-byte input inline, output 16, mailbox
	// pointers set by the fuzz function when byte 0 is odd) and a broken one.
	qdir := filepath.Join("testdata", "fuzz", "FuzzCmdQueue")
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		t.Fatal(err)
	}
	ent := make([]byte, 64)
	q := prm.CmdQueueEntry
	q.Type.Set(ent, prm.CmdQueueEntryTypePCIe)
	q.InputLength.Set(ent, 16)
	q.OutputLength.Set(ent, 16)
	copy(ent[q.CommandInputInlineData.ByteOff():], in(prm.CmdOpQueryISSI, 0, 16))
	writeSeed(t, filepath.Join(qdir, "inline"), ent, nil, nil)
	long := append([]byte(nil), ent...)
	q.Type.Set(long, prm.CmdQueueEntryTypePCIe)
	q.InputLength.Set(long, 300)
	q.OutputLength.Set(long, 300)
	box := make([]byte, 576)
	writeSeed(t, filepath.Join(qdir, "mailboxes"), long, box, box)
}

// writeSeed writes one corpus file in the "go test fuzz v1" format.
func writeSeed(t *testing.T, path string, args ...[]byte) {
	t.Helper()
	s := "go test fuzz v1\n"
	for _, a := range args {
		s += "[]byte(" + quoteBytes(a) + ")\n"
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func quoteBytes(b []byte) string {
	const hex = "0123456789abcdef"
	s := []byte{'"'}
	for _, c := range b {
		s = append(s, '\\', 'x', hex[c>>4], hex[c&15])
	}
	return string(append(s, '"'))
}
