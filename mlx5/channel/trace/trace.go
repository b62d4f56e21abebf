// Package trace records every call a ConnectX command channel serves — on any transport:
// DevX, VFIO, the device model — as one line of text per call, for people studying the NIC
// and for tests that check what a driver asked of the device. It plays the part of
// mlx5_core's command tracepoints (drivers/net/ethernet/mellanox/mlx5/core/diag/
// fw_tracer and the mlx5_cmd_* trace events): the opcode and op_mod by name, the object
// ids, the full input and output bytes, the status and syndrome, and how long the call took.
//
// Wrap puts the recorder around a channel; WrapEnv does it when the environment variable
// DAQIRI_MLX5_TRACE names a file ("-" for standard error). Records are appended, so several
// channels (the ports of one run, or several runs) can share a file; each record names its
// channel. Doorbell stores (UAR.Write32/Write64) are datapath, not commands, and are not
// recorded.
//
// # Format (version 1)
//
// A line starting with "#" is a comment. Every other line is one record: the word
// "mlx5trace/1", then these fields in this order, separated by one space, each key=value
// with a value that holds no space (err's value is a Go-quoted string, which may):
//
//	seq      decimal: the record's number in its sink, from 1, in file order
//	t        the call's start, RFC 3339 with nanoseconds, UTC
//	ch       the channel's Name() ("devx:mlx5_0", "model:1")
//	call     exec | create | modify | query | destroy | umem_reg | umem_release |
//	         uar_alloc | uar_release | eqn | attach_root | detach_root | pp_alloc |
//	         pp_release | close
//	op       the PRM command's name as mlx5_ifc.h spells it without MLX5_CMD_OP_ (from
//	         package prm), or "-" for calls that carry no command. For destroy it is the
//	         destroy command the transport issues for the object (DESTROY_CQ for a CQ).
//	opcode   the opcode in hex (0x400), or "-"
//	op_mod   the op_mod in hex, or "-"
//	op_mod_name  what the op_mod means for this opcode when known (GENERAL/cur for
//	         QUERY_HCA_CAP, GIVE for MANAGE_PAGES, BOOT for QUERY_PAGES, …), else "-"
//	obj      the object id the call created or acted on (CQN, TIR number, flow table id,
//	         UMEM id, UAR index, EQN, …) in decimal, or "-"
//	arg      call-specific arguments as name:value pairs joined by "," (create: the
//	         objects its input names, e.g. cqn:5,tisn:2 for CREATE_SQ; umem_reg:
//	         bytes:N,access:0xA, or dmabuf_fd:F,offset:0xO,bytes:N,access:0xA; eqn:
//	         vector:N; destroy: created_by:OP; pp_alloc: dedicated:B), or "-"
//	status   the PRM status name (OK, BAD_PARAM_ERR, …) read from the output, or "-"
//	         where the call has no output
//	syndrome the output's syndrome in hex, or "-"
//	dur_ns   decimal nanoseconds the call took
//	in       the command input, lower-case hex, all bytes, or "-" (pp_alloc: the
//	         set_pp_rate_limit_context the index is for)
//	out      the command output as the call left it, lower-case hex, or "-"
//	err      "-" when the call succeeded, else the error text Go-quoted
//
// Package functions Parse and Decode read records back into Record values without the
// engine, and check what can be checked (the opcode and op_mod against the input bytes,
// status and syndrome against the output bytes, the names against the numbers); the
// daqiri-mlx5trace tool prints and checks trace files.
package trace

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// EnvVar names the trace file for WrapEnv.
const EnvVar = "DAQIRI_MLX5_TRACE"

// Magic starts every record line.
const Magic = "mlx5trace/1"

// Sink is where records go: one writer shared by the channels that trace into it, with the
// record numbering. Safe for concurrent use.
type Sink struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer
	seq    uint64
	err    error
}

// NewSink writes records to w.
func NewSink(w io.Writer) *Sink { return &Sink{w: w} }

// OpenFile appends records to the file at path (created if missing), or to standard error
// for "-".
func OpenFile(path string) (*Sink, error) {
	if path == "-" {
		return NewSink(os.Stderr), nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("mlx5 trace: %w", err)
	}
	return &Sink{w: f, closer: f}, nil
}

// Err is the first write error, if any: tracing never fails a command.
func (s *Sink) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close closes the file OpenFile opened (nothing for NewSink's writer) and reports the
// first write error.
func (s *Sink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	err := s.err
	if s.closer != nil {
		if cerr := s.closer.Close(); err == nil {
			err = cerr
		}
		s.closer = nil
	}
	return err
}

// write numbers the record and writes it as one line in one Write, so lines of channels
// sharing a file through O_APPEND never interleave.
func (s *Sink) write(r *Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	r.Seq = s.seq
	if s.err != nil {
		return
	}
	if _, err := io.WriteString(s.w, r.String()+"\n"); err != nil {
		s.err = err
	}
}

// Record is one traced call (see the package doc for each field).
type Record struct {
	Seq       uint64
	Time      time.Time
	Channel   string
	Call      string
	Op        string // "" when the call carries no command
	Opcode    uint16
	OpMod     uint16
	OpModName string
	Obj       uint32
	HasObj    bool
	Arg       string
	Status    string // "" when there is no output
	Syndrome  uint32
	Dur       time.Duration
	In, Out   []byte
	Err       string // "" when the call succeeded
}

// dash writes an empty value as "-", and any white space in one as "_", so that a value is
// one token.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return '_'
		}
		return r
	}, s)
}

// hexOrDash writes an empty buffer as "-" too: a value is never empty.
func hexOrDash(b []byte) string {
	if len(b) == 0 {
		return "-"
	}
	return hex.EncodeToString(b)
}

// String is the record's line (without the newline).
func (r *Record) String() string {
	var b strings.Builder
	b.Grow(160 + 2*len(r.In) + 2*len(r.Out))
	fmt.Fprintf(&b, "%s seq=%d t=%s ch=%s call=%s", Magic, r.Seq, r.Time.UTC().Format(time.RFC3339Nano), dash(r.Channel), r.Call)
	if r.Op == "" {
		b.WriteString(" op=- opcode=- op_mod=- op_mod_name=-")
	} else {
		fmt.Fprintf(&b, " op=%s opcode=%#x op_mod=%#x op_mod_name=%s", r.Op, r.Opcode, r.OpMod, dash(r.OpModName))
	}
	if r.HasObj {
		fmt.Fprintf(&b, " obj=%d", r.Obj)
	} else {
		b.WriteString(" obj=-")
	}
	fmt.Fprintf(&b, " arg=%s", dash(r.Arg))
	if r.Status == "" {
		b.WriteString(" status=- syndrome=-")
	} else {
		fmt.Fprintf(&b, " status=%s syndrome=%#x", r.Status, r.Syndrome)
	}
	fmt.Fprintf(&b, " dur_ns=%d in=%s out=%s err=", r.Dur.Nanoseconds(), hexOrDash(r.In), hexOrDash(r.Out))
	if r.Err == "" {
		b.WriteString("-")
	} else {
		b.WriteString(strconv.Quote(r.Err))
	}
	return b.String()
}

// OpModName says what op_mod means for opcode, when it is one of the opcodes whose op_mod
// selects something (mlx5_ifc.h and the kernel's users of each), else "".
func OpModName(opcode, opMod uint16) string {
	switch prm.CmdOp(opcode) {
	case prm.CmdOpQueryHCACap:
		which := "max"
		if opMod&1 == prm.CapOpModCur {
			which = "cur"
		}
		return prm.CapType(opMod>>1).String() + "/" + which
	case prm.CmdOpSetHCACap:
		return prm.CapType(opMod >> 1).String()
	case prm.CmdOpQueryPages:
		switch opMod {
		case prm.QueryPagesBoot:
			return "BOOT"
		case prm.QueryPagesInit:
			return "INIT"
		case 3: // MLX5_QUERY_PAGES_IN_OP_MOD_REGULAR_PAGES (kernel pagealloc.c)
			return "REGULAR"
		}
	case prm.CmdOpManagePages:
		switch opMod {
		case prm.ManagePagesCantGive:
			return "CANT_GIVE"
		case prm.ManagePagesGive:
			return "GIVE"
		case prm.ManagePagesTake:
			return "TAKE"
		}
	case prm.CmdOpAccessReg:
		switch opMod {
		case prm.AccessRegWrite:
			return "WRITE"
		case prm.AccessRegRead:
			return "READ"
		}
	case prm.CmdOpSetFlowTableEntry:
		switch opMod {
		case 0:
			return "SET"
		case 1:
			return "MODIFY"
		}
	}
	return ""
}

// destroyOf names the command that destroys what op created (the pairs of the kernel's
// devx.c devx_obj_build_destroy_cmd).
func destroyOf(op prm.CmdOp) prm.CmdOp {
	switch op {
	case prm.CmdOpCreateMKey:
		return prm.CmdOpDestroyMKey
	case prm.CmdOpCreateEQ:
		return prm.CmdOpDestroyEQ
	case prm.CmdOpCreateCQ:
		return prm.CmdOpDestroyCQ
	case prm.CmdOpCreateRQ:
		return prm.CmdOpDestroyRQ
	case prm.CmdOpCreateSQ:
		return prm.CmdOpDestroySQ
	case prm.CmdOpCreateTIR:
		return prm.CmdOpDestroyTIR
	case prm.CmdOpCreateTIS:
		return prm.CmdOpDestroyTIS
	case prm.CmdOpCreateRQT:
		return prm.CmdOpDestroyRQT
	case prm.CmdOpAllocPD:
		return prm.CmdOpDeallocPD
	case prm.CmdOpAllocUAR:
		return prm.CmdOpDeallocUAR
	case prm.CmdOpAllocTransportDomain:
		return prm.CmdOpDeallocTransportDomain
	case prm.CmdOpAllocQCounter:
		return prm.CmdOpDeallocQCounter
	case prm.CmdOpAllocFlowCounter:
		return prm.CmdOpDeallocFlowCounter
	case prm.CmdOpAllocPacketReformatContext:
		return prm.CmdOpDeallocPacketReformatContext
	case prm.CmdOpCreateFlowTable:
		return prm.CmdOpDestroyFlowTable
	case prm.CmdOpCreateFlowGroup:
		return prm.CmdOpDestroyFlowGroup
	case prm.CmdOpSetFlowTableEntry:
		return prm.CmdOpDeleteFlowTableEntry
	case prm.CmdOpCreateGeneralObject:
		return prm.CmdOpDestroyGeneralObject
	case prm.CmdOpCreateUMEM:
		return prm.CmdOpDestroyUMEM
	}
	return 0
}

// Channel is a channel whose calls are recorded.
type Channel struct {
	ch   channel.Channel
	sink *Sink
	own  bool // the sink was opened by WrapEnv and closes with the channel
	now  func() time.Time
}

var _ channel.Channel = (*Channel)(nil)

// Wrap records every call of ch into sink. Close the sink after the channel.
func Wrap(ch channel.Channel, sink *Sink) *Channel {
	return &Channel{ch: ch, sink: sink, now: time.Now}
}

// WrapEnv wraps ch when DAQIRI_MLX5_TRACE names a file (appending to it; "-": standard
// error), with a sink that closes with the channel; otherwise it returns ch as it is.
func WrapEnv(ch channel.Channel) (channel.Channel, error) {
	path := os.Getenv(EnvVar)
	if path == "" {
		return ch, nil
	}
	s, err := OpenFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s=%s: %w", EnvVar, path, err)
	}
	t := Wrap(ch, s)
	t.own = true
	return t, nil
}

// Unwrap is the traced channel.
func (c *Channel) Unwrap() channel.Channel { return c.ch }

// Name implements channel.Channel.
func (c *Channel) Name() string { return c.ch.Name() }

// cmdRecord fills a record for a command with input in and output out.
func (c *Channel) cmdRecord(call string, start time.Time, in, out []byte, err error) *Record {
	r := &Record{Time: start, Channel: c.ch.Name(), Call: call, Dur: c.now().Sub(start)}
	// A command shorter than its header (op_mod ends at byte 8) failed on its input; the
	// record then names no command but keeps the bytes and the error.
	if len(in) >= 8 {
		op := prm.CmdOp(prm.CmdIn.Opcode.Get(in))
		r.Op, r.Opcode = op.String(), uint16(op)
		r.OpMod = uint16(prm.CmdIn.OpMod.Get(in))
		r.OpModName = OpModName(r.Opcode, r.OpMod)
	}
	r.In = append([]byte{}, in...)
	r.Out = append([]byte{}, out...)
	// The output's status is the device's answer when the call succeeded or the device
	// failed it; a transport error before the device answered leaves no status.
	var ce *channel.CommandError
	if len(out) >= 8 && (err == nil || errors.As(err, &ce) || prm.CmdOut.Status.Get(out) != 0) {
		r.Status = prm.Status(prm.CmdOut.Status.Get(out)).String()
		r.Syndrome = uint32(prm.CmdOut.Syndrome.Get(out))
	}
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

func (c *Channel) plain(call string, start time.Time, err error) *Record {
	r := &Record{Time: start, Channel: c.ch.Name(), Call: call, Dur: c.now().Sub(start)}
	if err != nil {
		r.Err = err.Error()
	}
	return r
}

// Exec implements channel.Channel.
func (c *Channel) Exec(in, out []byte) error {
	start := c.now()
	err := c.ch.Exec(in, out)
	c.sink.write(c.cmdRecord("exec", start, in, out, err))
	return err
}

// Create implements channel.Channel.
func (c *Channel) Create(in, out []byte) (channel.Object, error) {
	start := c.now()
	o, err := c.ch.Create(in, out)
	r := c.cmdRecord("create", start, in, out, err)
	r.Arg = refs(in)
	if err != nil {
		c.sink.write(r)
		return nil, err
	}
	r.Obj, r.HasObj = o.ID(), true
	c.sink.write(r)
	var op prm.CmdOp
	if len(in) >= 2 {
		op = prm.CmdOp(prm.CmdIn.Opcode.Get(in))
	}
	return &object{c: c, o: o, create: op}, nil
}

type object struct {
	c      *Channel
	o      channel.Object
	create prm.CmdOp
}

func (o *object) ID() uint32 { return o.o.ID() }

func (o *object) Modify(in, out []byte) error {
	start := o.c.now()
	err := o.o.Modify(in, out)
	r := o.c.cmdRecord("modify", start, in, out, err)
	r.Obj, r.HasObj = o.o.ID(), true
	o.c.sink.write(r)
	return err
}

func (o *object) Query(in, out []byte) error {
	start := o.c.now()
	err := o.o.Query(in, out)
	r := o.c.cmdRecord("query", start, in, out, err)
	r.Obj, r.HasObj = o.o.ID(), true
	o.c.sink.write(r)
	return err
}

func (o *object) Destroy() error {
	start := o.c.now()
	err := o.o.Destroy()
	r := o.c.plain("destroy", start, err)
	if d := destroyOf(o.create); d != 0 {
		r.Op, r.Opcode = d.String(), uint16(d)
	}
	r.Obj, r.HasObj = o.o.ID(), true
	r.Arg = "created_by:" + o.create.String()
	o.c.sink.write(r)
	return err
}

// RegisterMemory implements channel.Channel.
func (c *Channel) RegisterMemory(mem []byte, access channel.Access) (channel.UMEM, error) {
	start := c.now()
	u, err := c.ch.RegisterMemory(mem, access)
	r := c.plain("umem_reg", start, err)
	r.Arg = fmt.Sprintf("bytes:%d,access:%#x", len(mem), uint32(access))
	if err == nil {
		r.Obj, r.HasObj = u.ID(), true
	}
	c.sink.write(r)
	if err != nil {
		return nil, err
	}
	return &umem{c: c, u: u}, nil
}

type umem struct {
	c *Channel
	u channel.UMEM
}

func (u *umem) ID() uint32 { return u.u.ID() }

func (u *umem) Release() error {
	start := u.c.now()
	err := u.u.Release()
	r := u.c.plain("umem_release", start, err)
	r.Obj, r.HasObj = u.u.ID(), true
	u.c.sink.write(r)
	return err
}

// AllocUAR implements channel.Channel.
func (c *Channel) AllocUAR() (channel.UAR, error) {
	start := c.now()
	u, err := c.ch.AllocUAR()
	r := c.plain("uar_alloc", start, err)
	if err == nil {
		r.Obj, r.HasObj = u.Index(), true
	}
	c.sink.write(r)
	if err != nil {
		return nil, err
	}
	return &uar{UAR: u, c: c}, nil
}

type uar struct {
	channel.UAR
	c *Channel
}

func (u *uar) Release() error {
	start := u.c.now()
	err := u.UAR.Release()
	r := u.c.plain("uar_release", start, err)
	r.Obj, r.HasObj = u.UAR.Index(), true
	u.c.sink.write(r)
	return err
}

// EQN implements channel.Channel.
func (c *Channel) EQN(vector int) (uint32, error) {
	start := c.now()
	eqn, err := c.ch.EQN(vector)
	r := c.plain("eqn", start, err)
	r.Arg = fmt.Sprintf("vector:%d", vector)
	if err == nil {
		r.Obj, r.HasObj = eqn, true
	}
	c.sink.write(r)
	return eqn, err
}

// AttachRoot implements channel.Channel.
func (c *Channel) AttachRoot(table uint32) (func() error, error) {
	start := c.now()
	detach, err := c.ch.AttachRoot(table)
	r := c.plain("attach_root", start, err)
	r.Obj, r.HasObj = table, true
	c.sink.write(r)
	if err != nil {
		return nil, err
	}
	return func() error {
		start := c.now()
		err := detach()
		r := c.plain("detach_root", start, err)
		r.Obj, r.HasObj = table, true
		c.sink.write(r)
		return err
	}, nil
}

// Close implements channel.Channel; a sink WrapEnv opened is closed after the record.
func (c *Channel) Close() error {
	start := c.now()
	err := c.ch.Close()
	c.sink.write(c.plain("close", start, err))
	if c.own {
		if serr := c.sink.Close(); err == nil && serr != nil {
			err = fmt.Errorf("mlx5 trace: %w", serr)
		}
	}
	return err
}

var _ channel.Pacer = (*Channel)(nil)

// AllocPacing implements channel.Pacer when the traced channel does; otherwise it returns
// channel.ErrUnsupported (and the engine falls back to SET_PP_RATE_LIMIT through Exec,
// which is traced as a command).
func (c *Channel) AllocPacing(ctx []byte, dedicated bool) (channel.Pacing, error) {
	p, ok := c.ch.(channel.Pacer)
	if !ok {
		return nil, fmt.Errorf("%s: %w", c.ch.Name(), channel.ErrUnsupported)
	}
	start := c.now()
	pc, err := p.AllocPacing(ctx, dedicated)
	r := c.plain("pp_alloc", start, err)
	r.In = append([]byte{}, ctx...)
	r.Arg = fmt.Sprintf("dedicated:%v", dedicated)
	if err == nil {
		r.Obj, r.HasObj = uint32(pc.Index()), true
	}
	c.sink.write(r)
	if err != nil {
		return nil, err
	}
	return &pacing{Pacing: pc, c: c}, nil
}

type pacing struct {
	channel.Pacing
	c *Channel
}

func (p *pacing) Release() error {
	start := p.c.now()
	err := p.Pacing.Release()
	r := p.c.plain("pp_release", start, err)
	r.Obj, r.HasObj = uint32(p.Pacing.Index()), true
	p.c.sink.write(r)
	return err
}

var _ channel.DMABufRegistrar = (*Channel)(nil)

// RegisterDMABuf implements channel.DMABufRegistrar when the traced channel does;
// otherwise it returns channel.ErrUnsupported.
func (c *Channel) RegisterDMABuf(fd int, offset, length uint64, access channel.Access) (channel.UMEM, error) {
	d, ok := c.ch.(channel.DMABufRegistrar)
	if !ok {
		return nil, fmt.Errorf("%s: DMA-BUF memory: %w", c.ch.Name(), channel.ErrUnsupported)
	}
	start := c.now()
	u, err := d.RegisterDMABuf(fd, offset, length, access)
	r := c.plain("umem_reg", start, err)
	r.Arg = fmt.Sprintf("dmabuf_fd:%d,offset:%#x,bytes:%d,access:%#x", fd, offset, length, uint32(access))
	if err == nil {
		r.Obj, r.HasObj = u.ID(), true
	}
	c.sink.write(r)
	if err != nil {
		return nil, err
	}
	return &umem{c: c, u: u}, nil
}

// refs names the objects a create command's input refers to, as name:id pairs joined by
// "," (for a reader following which queue feeds which: an SQ's CQ and TIS, a TIR's RQ or
// RQT, an entry's table and group), or "" for commands not listed. Fields from package prm.
func refs(in []byte) string {
	if len(in) < 8 {
		return ""
	}
	type ref struct {
		name string
		f    prm.Field
	}
	var rs []ref
	switch prm.CmdOp(prm.CmdIn.Opcode.Get(in)) {
	case prm.CmdOpCreateSQ:
		b := prm.CreateSQIn.Ctx.Off
		rs = []ref{{"cqn", prm.SQC.CQN.At(b)}, {"tisn", prm.SQC.TISNum0.At(b)}}
	case prm.CmdOpCreateRQ:
		rs = []ref{{"cqn", prm.RQC.CQN.At(prm.CreateRQIn.Ctx.Off)}}
	case prm.CmdOpCreateTIR:
		b := prm.CreateTIRIn.Ctx.Off
		rs = []ref{{"rqn", prm.TIRC.InlineRQN.At(b)}, {"rqtn", prm.TIRC.IndirectTable.At(b)}, {"td", prm.TIRC.TransportDomain.At(b)}}
	case prm.CmdOpCreateCQ:
		b := prm.CreateCQIn.CQContext.Off
		rs = []ref{{"eqn", prm.CQC.CEQNOrApuElement.At(b)}, {"uar", prm.CQC.UARPage.At(b)}}
	case prm.CmdOpCreateMKey:
		rs = []ref{{"pd", prm.MKC.PD.At(prm.CreateMKeyIn.MemoryKeyMKeyEntry.Off)}}
	case prm.CmdOpCreateFlowGroup:
		rs = []ref{{"table", prm.CreateFlowGroupIn.TableID}}
	case prm.CmdOpSetFlowTableEntry:
		rs = []ref{{"table", prm.SetFTEIn.TableID}, {"group", prm.FlowContext.GroupID.At(prm.SetFTEIn.FlowContext.Off)}, {"flow_tag", prm.FlowContext.FlowTag.At(prm.SetFTEIn.FlowContext.Off)}}
	}
	var parts []string
	for _, r := range rs {
		if r.f.In(in) {
			parts = append(parts, fmt.Sprintf("%s:%d", r.name, r.f.Get(in)))
		}
	}
	return strings.Join(parts, ",")
}
