package model

import (
	"fmt"
	"sync"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// CommandRecord is one command the firmware model completed, as Config.CommandLog sees it:
// what the driver asked for and what the model answered.
type CommandRecord struct {
	Op    prm.CmdOp
	OpMod uint16
	// Register is the register id of an ACCESS_REG (driver.h MLX5_REG_*), 0 for other
	// commands.
	Register uint16
	Status   prm.Status // StatusOK, or the PRM status of the failure
	Syndrome uint32     // the model's syndrome (SyndromeName names it), 0 when OK
	Msg      string     // the model's explanation of a failure, "" when OK
}

// String is one log line: the command, its op_mod and register, and the answer.
func (r CommandRecord) String() string {
	s := fmt.Sprintf("%v(%#x) op_mod %#x", r.Op, uint16(r.Op), r.OpMod)
	if r.Op == prm.CmdOpAccessReg {
		s += fmt.Sprintf(" register %#x", r.Register)
	}
	if r.Status == prm.StatusOK {
		return s + ": ok"
	}
	name := SyndromeName(r.Syndrome)
	if name == "" {
		name = "syndrome"
	}
	return fmt.Sprintf("%s: %v, %s %#x: %s", s, r.Status, name, r.Syndrome, r.Msg)
}

// Unimplemented is a command the model answered as not implemented — an opcode it does not
// know (BAD_OP, SyndromeBadOpcode), or an op_mod, register or mode of a known command that it
// does not model (SyndromeNotModelled, SyndromeBadOpMod) — with how often a driver sent it.
// The list is what a real driver asked of the model that the model could not give.
type Unimplemented struct {
	Op       prm.CmdOp
	OpMod    uint16
	Register uint16 // ACCESS_REG's register id; 0 for other commands
	Status   prm.Status
	Syndrome uint32
	Count    int
	First    string // the model's message the first time
}

// String is one line of the list.
func (u Unimplemented) String() string {
	s := fmt.Sprintf("%v(%#x) op_mod %#x", u.Op, uint16(u.Op), u.OpMod)
	if u.Op == prm.CmdOpAccessReg {
		s += fmt.Sprintf(" register %#x", u.Register)
	}
	return fmt.Sprintf("%s: %v (%s) ×%d: %s", s, u.Status, SyndromeName(u.Syndrome), u.Count, u.First)
}

type unimplKey struct {
	op       prm.CmdOp
	opMod    uint16
	register uint16
}

// cmdLog counts the unimplemented commands; it outlives resets (DISABLE_HCA, TEARDOWN_HCA),
// as it describes the drivers that used the device, not the device's state.
type cmdLog struct {
	mu    sync.Mutex
	order []unimplKey
	seen  map[unimplKey]*Unimplemented
}

func isUnimplemented(r CommandRecord) bool {
	switch r.Syndrome {
	case SyndromeBadOpcode, SyndromeNotModelled, SyndromeBadOpMod:
		return r.Status != prm.StatusOK
	}
	return false
}

// logCommand reports r to Config.CommandLog and counts it if it was not implemented. It runs
// without the device's locks held, so the hook may call back into the Device.
func (d *Device) logCommand(r CommandRecord) {
	if isUnimplemented(r) {
		k := unimplKey{r.Op, r.OpMod, r.Register}
		l := &d.cmdLog
		l.mu.Lock()
		if l.seen == nil {
			l.seen = map[unimplKey]*Unimplemented{}
		}
		u := l.seen[k]
		if u == nil {
			u = &Unimplemented{Op: r.Op, OpMod: r.OpMod, Register: r.Register, Status: r.Status, Syndrome: r.Syndrome, First: r.Msg}
			l.seen[k] = u
			l.order = append(l.order, k)
		}
		u.Count++
		l.mu.Unlock()
	}
	if d.cfg.CommandLog != nil {
		d.cfg.CommandLog(r)
	}
}

// Unimplemented lists the commands drivers sent that the model does not implement, in the
// order they were first seen, each with its count.
func (d *Device) Unimplemented() []Unimplemented {
	l := &d.cmdLog
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Unimplemented, 0, len(l.order))
	for _, k := range l.order {
		out = append(out, *l.seen[k])
	}
	return out
}
