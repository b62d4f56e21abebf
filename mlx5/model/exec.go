package model

import (
	"errors"
	"fmt"

	"github.com/daqiri-go/daqiri/mlx5/model/internal/datapath"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// CmdError is a command that firmware completed with a status other than OK: the PRM status
// and syndrome it put in the output, and the model's explanation (firmware gives none; the
// text is for people reading test failures and must not be parsed).
type CmdError struct {
	Op       prm.CmdOp
	OpMod    uint16
	Status   prm.Status
	Syndrome uint32
	Msg      string
}

// Error implements error.
func (e *CmdError) Error() string {
	return fmt.Sprintf("mlx5 model: %v op_mod %#x: status %v syndrome %#x: %s", e.Op, e.OpMod, e.Status, e.Syndrome, e.Msg)
}

// Syndromes of the model's own checks. Real firmware's syndromes are opaque values that no
// public source documents, so these are the model's (inferred) and a driver must act on the
// status; each names one kind of check so that tests can tell failures apart.
const (
	SyndromeBadOpcode uint32 = 0x1c0de000 + iota
	SyndromeBadState
	SyndromeBadLength
	SyndromeBadParam
	SyndromeUnknownObject
	SyndromeLimit
	SyndromeBusy
	SyndromeBadUID
	SyndromePages
	SyndromeNotModelled
	SyndromeBadMemory
	SyndromeBadOpMod
)

// SyndromeName names one of the model's syndromes for logs ("bad-opcode", "not-modelled"),
// or returns "" for a value that is not one of them (a datapath's or an injected one).
func SyndromeName(s uint32) string {
	switch s {
	case SyndromeBadOpcode:
		return "bad-opcode"
	case SyndromeBadState:
		return "bad-state"
	case SyndromeBadLength:
		return "bad-length"
	case SyndromeBadParam:
		return "bad-param"
	case SyndromeUnknownObject:
		return "unknown-object"
	case SyndromeLimit:
		return "limit"
	case SyndromeBusy:
		return "busy"
	case SyndromeBadUID:
		return "bad-uid"
	case SyndromePages:
		return "pages"
	case SyndromeNotModelled:
		return "not-modelled"
	case SyndromeBadMemory:
		return "bad-memory"
	case SyndromeBadOpMod:
		return "bad-op-mod"
	}
	return ""
}

// fwErr is a handler's failure before it becomes output bytes.
type fwErr struct {
	status prm.Status
	synd   uint32
	msg    string
}

func (e *fwErr) Error() string { return e.msg }

func fail(status prm.Status, synd uint32, format string, args ...any) error {
	return &fwErr{status: status, synd: synd, msg: fmt.Sprintf(format, args...)}
}

// badOpMod is an op_mod the command does not have (or the model does not implement): the
// opcode is known, so the status is BAD_PARAM, with its own syndrome so that logs can tell it
// from a bad field.
func badOpMod(c *cmd, format string, args ...any) error {
	return fail(prm.StatusBadParamErr, SyndromeBadOpMod, "%v op_mod %#x: %s", c.op, c.opMod, fmt.Sprintf(format, args...))
}

// badParam is the commonest failure: a field out of range.
func badParam(format string, args ...any) error {
	return fail(prm.StatusBadParamErr, SyndromeBadParam, format, args...)
}

// noObject is a reference to an object that does not exist (or belongs to another uid).
func noObject(format string, args ...any) error {
	return fail(prm.StatusBadResErr, SyndromeUnknownObject, format, args...)
}

// Exec runs one command given as PRM bytes, as the DevX ioctls hand the kernel's command
// buffer to firmware: in is the command input (it starts with the opcode), out receives the
// output (it starts with status and syndrome) and must hold at least 16 bytes. A status other
// than OK is returned as *CmdError as well as written to out.
func (d *Device) Exec(in, out []byte) error {
	if len(out) < 16 {
		return fmt.Errorf("mlx5 model: command output buffer of %d bytes; at least 16 needed for status and syndrome", len(out))
	}
	return d.execute(in, out)
}

// execute runs a command and writes its status; the error is the *CmdError for a bad status.
// Every command is then reported to Config.CommandLog, and one the model does not implement
// is counted for Unimplemented.
func (d *Device) execute(in, out []byte) error {
	clear(out)
	c := &cmd{d: d, in: in, out: out}
	var err error
	if len(in) < 8 {
		err = fail(prm.StatusBadInpLenErr, SyndromeBadLength, "command input of %d bytes has no header", len(in))
	} else {
		c.op = prm.CmdOp(prm.CmdIn.Opcode.Get(in))
		c.opMod = uint16(prm.CmdIn.OpMod.Get(in))
		c.uid = uint16(prm.GeneralObjInCmdHdr.UID.Get(in))
		d.mu.Lock()
		err = d.dispatch(c)
		d.mu.Unlock()
	}
	rec := CommandRecord{Op: c.op, OpMod: c.opMod}
	if c.op == prm.CmdOpAccessReg {
		rec.Register = uint16(prm.AccessRegisterIn.RegisterID.Get(in))
	}
	if err == nil {
		d.logCommand(rec)
		return nil
	}
	fe := toFWErr(err)
	clear(out)
	prm.CmdOut.Status.Set(out, uint64(fe.status))
	prm.CmdOut.Syndrome.Set(out, uint64(fe.synd))
	rec.Status, rec.Syndrome, rec.Msg = fe.status, fe.synd, fe.msg
	d.logCommand(rec)
	return &CmdError{Op: c.op, OpMod: c.opMod, Status: fe.status, Syndrome: fe.synd, Msg: fe.msg}
}

// toFWErr turns any handler error into a status: the datapath's errors carry theirs; anything
// else is an internal error (a model bug, reported rather than hidden).
func toFWErr(err error) *fwErr {
	var fe *fwErr
	if errors.As(err, &fe) {
		return fe
	}
	var de *datapath.Error
	if errors.As(err, &de) {
		return &fwErr{status: prm.Status(de.Status), synd: de.Syndrome, msg: de.Msg}
	}
	return &fwErr{status: prm.StatusIntErr, synd: SyndromeBadState, msg: err.Error()}
}

// cmd is one command being executed.
type cmd struct {
	d     *Device
	in    []byte
	out   []byte
	op    prm.CmdOp
	opMod uint16
	uid   uint16
}

// need checks that the input holds every listed input field and the output every listed
// output field, before the handler acts: firmware answers a short input with
// BAD_INP_LEN and a short output with BAD_OUTP_LEN (device.h MLX5_CMD_STAT_*).
func (c *cmd) need(in []prm.Field, out ...prm.Field) error {
	for _, f := range in {
		if !f.In(c.in) {
			return fail(prm.StatusBadInpLenErr, SyndromeBadLength, "%v: input of %d bytes ends before %s.%s (bit %#x)", c.op, len(c.in), f.Layout, f.Name, f.End())
		}
	}
	for _, f := range out {
		if !f.In(c.out) {
			return fail(prm.StatusBadOutpLenErr, SyndromeBadLength, "%v: output of %d bytes ends before %s.%s (bit %#x)", c.op, len(c.out), f.Layout, f.Name, f.End())
		}
	}
	return nil
}

// ins is a shorthand for need's input list.
func ins(f ...prm.Field) []prm.Field { return f }

func (c *cmd) get(f prm.Field) uint64 { return f.Get(c.in) }

func (c *cmd) set(f prm.Field, v uint64) { f.Set(c.out, v) }

// dispatch checks the function's state and runs the command's handler.
func (d *Device) dispatch(c *cmd) error {
	if d.iseg.failed {
		return fail(prm.StatusIntErr, SyndromeBadState, "%v: the device is in a fatal error state (health syndrome %#x)", c.op, d.iseg.healthSyndrome)
	}
	h := handlerFor(c.op)
	if h == nil {
		// device.h MLX5_CMD_STAT_BAD_OP_ERR: what firmware answers an opcode it does not
		// know, and what mlx5_core treats as "not supported" where a command is optional.
		return fail(prm.StatusBadOpErr, SyndromeBadOpcode, "opcode %v (%#x) is not implemented by the model", c.op, uint16(c.op))
	}
	switch d.state {
	case hcaDisabled:
		if c.op != prm.CmdOpEnableHCA {
			return fail(prm.StatusBadSysStateErr, SyndromeBadState, "%v before ENABLE_HCA", c.op)
		}
	case hcaEnabled:
		switch c.op {
		case prm.CmdOpEnableHCA, prm.CmdOpDisableHCA, prm.CmdOpQueryISSI, prm.CmdOpSetISSI,
			prm.CmdOpQueryPages, prm.CmdOpManagePages, prm.CmdOpAccessReg, prm.CmdOpQueryHCACap,
			prm.CmdOpSetHCACap, prm.CmdOpInitHCA, prm.CmdOpTeardownHCA, prm.CmdOpSetDriverVersion,
			prm.CmdOpQueryAdapter, prm.CmdOpNop:
		default:
			return fail(prm.StatusBadSysStateErr, SyndromeBadState, "%v before INIT_HCA", c.op)
		}
	}
	return h(d, c)
}

type handler func(*Device, *cmd) error

// handlerFor maps an opcode to its handler.
func handlerFor(op prm.CmdOp) handler {
	switch op {
	case prm.CmdOpEnableHCA:
		return (*Device).enableHCA
	case prm.CmdOpDisableHCA:
		return (*Device).disableHCA
	case prm.CmdOpQueryISSI:
		return (*Device).queryISSI
	case prm.CmdOpSetISSI:
		return (*Device).setISSI
	case prm.CmdOpQueryPages:
		return (*Device).queryPages
	case prm.CmdOpManagePages:
		return (*Device).managePages
	case prm.CmdOpAccessReg:
		return (*Device).accessReg
	case prm.CmdOpQueryHCACap:
		return (*Device).queryHCACap
	case prm.CmdOpSetHCACap:
		return (*Device).setHCACap
	case prm.CmdOpInitHCA:
		return (*Device).initHCA
	case prm.CmdOpTeardownHCA:
		return (*Device).teardownHCA
	case prm.CmdOpQueryAdapter:
		return (*Device).queryAdapter
	case prm.CmdOpAddVXLANUDPDport:
		return (*Device).addVXLANPort
	case prm.CmdOpDeleteVXLANUDPDport:
		return (*Device).deleteVXLANPort
	case prm.CmdOpSetDriverVersion, prm.CmdOpNop:
		return func(*Device, *cmd) error { return nil }
	case prm.CmdOpQueryNICVportContext:
		return (*Device).queryNICVport
	case prm.CmdOpModifyNICVportContext:
		return (*Device).modifyNICVport
	case prm.CmdOpQueryVportState:
		return (*Device).queryVportState
	case prm.CmdOpQueryVportCounter:
		return (*Device).queryVportCounter
	case prm.CmdOpAllocUAR:
		return (*Device).allocUAR
	case prm.CmdOpDeallocUAR:
		return (*Device).deallocUAR
	case prm.CmdOpAllocPD:
		return (*Device).allocPD
	case prm.CmdOpDeallocPD:
		return (*Device).deallocPD
	case prm.CmdOpAllocTransportDomain:
		return (*Device).allocTD
	case prm.CmdOpDeallocTransportDomain:
		return (*Device).deallocTD
	case prm.CmdOpCreateUMEM:
		return (*Device).createUMEM
	case prm.CmdOpDestroyUMEM:
		return (*Device).destroyUMEM
	case prm.CmdOpCreateMKey:
		return (*Device).createMKey
	case prm.CmdOpQueryMKey:
		return (*Device).queryMKey
	case prm.CmdOpDestroyMKey:
		return (*Device).destroyMKey
	case prm.CmdOpCreateEQ:
		return (*Device).createEQ
	case prm.CmdOpQueryEQ:
		return (*Device).queryEQ
	case prm.CmdOpDestroyEQ:
		return (*Device).destroyEQ
	case prm.CmdOpAllocQCounter:
		return (*Device).allocQCounter
	case prm.CmdOpDeallocQCounter:
		return (*Device).deallocQCounter
	case prm.CmdOpQueryQCounter:
		return (*Device).queryQCounter
	}
	return queueHandler(op)
}
