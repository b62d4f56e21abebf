package model_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/mlx5/model"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// TestUnimplementedCommands: an opcode the model does not implement is answered with the
// PRM's bad-opcode status (device.h MLX5_CMD_STAT_BAD_OP_ERR) through both the command queue
// and Exec; a register or capability page it does not model, and an op_mod a command does not
// have, with BAD_PARAM and a syndrome the log names. Each is counted in Unimplemented with its
// opcode, op_mod and register, in the order first seen, and every command reaches the
// CommandLog hook, which may call back into the device.
func TestUnimplementedCommands(t *testing.T) {
	var log []model.CommandRecord
	var d *model.Device
	d = model.New(model.Config{CommandLog: func(r model.CommandRecord) {
		log = append(log, r)
		_ = d.Unimplemented() // the hook runs without the device's locks
	}})
	h := newHost(t, d, 8<<20)
	h.setupCmdq()
	h.bringUp()

	// CREATE_DCT (0x710; QPs are ib.go's now) twice and CREATE_GENERAL_OBJECT (0xa00) once, through the queue.
	for range 2 {
		if s := h.wantStatus(in(prm.CmdOp(0x710), 0, 16), 16, prm.StatusBadOpErr); s != model.SyndromeBadOpcode {
			t.Fatalf("CREATE_DCT syndrome %#x", s)
		}
	}
	h.wantStatus(in(prm.CmdOpCreateGeneralObject, 0x13, 16), 16, prm.StatusBadOpErr)
	// An unmodelled register (PCAM, which mlx5_core reads only with pcam_reg), a bad
	// ACCESS_REG op_mod, a capability page the model lacks (ODP, type 2), a QUERY_PAGES op_mod.
	pcam := in(prm.CmdOpAccessReg, prm.AccessRegRead, 16+0x50, prm.AccessRegisterIn.RegisterID, prm.RegPCAM)
	if s := h.wantStatus(pcam, 16+0x50, prm.StatusBadParamErr); s != model.SyndromeNotModelled {
		t.Fatalf("PCAM syndrome %#x (%s)", s, model.SyndromeName(s))
	}
	if s := h.wantStatus(in(prm.CmdOpAccessReg, 7, 32, prm.AccessRegisterIn.RegisterID, prm.RegPTYS), 32, prm.StatusBadParamErr); s != model.SyndromeBadOpMod {
		t.Fatalf("ACCESS_REG op_mod 7 syndrome %#x (%s)", s, model.SyndromeName(s))
	}
	h.wantStatus(in(prm.CmdOpQueryHCACap, 2<<1|1, 16), 4112, prm.StatusBadParamErr)
	if s := h.wantStatus(in(prm.CmdOpQueryPages, 9, 16), 16, prm.StatusBadParamErr); s != model.SyndromeBadOpMod {
		t.Fatalf("QUERY_PAGES op_mod 9 syndrome %#x", s)
	}
	// A bad field is a bad parameter, not an unimplemented command.
	h.wantStatus(in(prm.CmdOpSetISSI, 0, 16, prm.SetISSIIn.CurrentISSI, 7), 16, prm.StatusBadParamErr)
	// Exec counts the same way.
	var ce *model.CmdError
	if err := d.Exec(in(prm.CmdOp(0x710), 0, 16), make([]byte, 16)); !errors.As(err, &ce) || ce.Status != prm.StatusBadOpErr {
		t.Fatalf("Exec CREATE_DCT: %v", err)
	}

	got := d.Unimplemented()
	want := []struct {
		op    prm.CmdOp
		opMod uint16
		reg   uint16
		synd  uint32
		count int
	}{
		{0x710, 0, 0, model.SyndromeBadOpcode, 3},
		{prm.CmdOpCreateGeneralObject, 0x13, 0, model.SyndromeBadOpcode, 1},
		{prm.CmdOpAccessReg, prm.AccessRegRead, prm.RegPCAM, model.SyndromeNotModelled, 1},
		{prm.CmdOpAccessReg, 7, prm.RegPTYS, model.SyndromeBadOpMod, 1},
		{prm.CmdOpQueryHCACap, 2<<1 | 1, 0, model.SyndromeNotModelled, 1},
		{prm.CmdOpQueryPages, 9, 0, model.SyndromeBadOpMod, 1},
	}
	if len(got) != len(want) {
		t.Fatalf("Unimplemented: %v", got)
	}
	for i, w := range want {
		u := got[i]
		if u.Op != w.op || u.OpMod != w.opMod || u.Register != w.reg || u.Syndrome != w.synd || u.Count != w.count || u.First == "" {
			t.Fatalf("entry %d: %v, want %v op_mod %#x register %#x ×%d", i, u, w.op, w.opMod, w.reg, w.count)
		}
	}
	if s := got[2].String(); !strings.Contains(s, "ACCESS_REG") || !strings.Contains(s, "register 0x507f") || !strings.Contains(s, "not-modelled") {
		t.Fatalf("String: %q", s)
	}
	// The hook saw every command, the failures with their status, syndrome and message.
	var bad int
	for _, r := range log {
		if r.Status != prm.StatusOK {
			bad++
			if r.Msg == "" || !strings.Contains(r.String(), r.Op.String()) {
				t.Fatalf("record %v", r)
			}
		}
	}
	if bad != 9 {
		t.Fatalf("%d failed commands logged, want 9", bad)
	}
	// Teardown does not clear the list: it describes the drivers, not the device's state.
	h.mustCmd(in(prm.CmdOpTeardownHCA, 0, 16), 16)
	if len(d.Unimplemented()) != len(want) {
		t.Fatal("TEARDOWN_HCA cleared the list")
	}
}
