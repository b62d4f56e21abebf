// Package xdp is the XDP backend of package flow: it compiles flow's neutral rules into an
// eBPF program (built in Go with cilium/ebpf's assembler) that parses each frame, matches it
// against rule slots in a map, and steers it with metadata to an AF_XDP socket. The Go
// reference classifier (flow.Table.Classify) is its specification: tests run both on the
// same random frames. Other backends (a NIC flow-table compiler for mlx5) sit beside it as
// siblings of this package.
package xdp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/daqiri-go/daqiri/flow"
)

// IP protocol numbers (IANA) the program tests.
const (
	protoUDP = 17
	protoGRE = 47
)

// XDP program limits.
const (
	// MaxRules is the number of rule slots the XDP program scans (static + dynamic flows).
	MaxRules = 128
	// MaxQueues is the number of RX queues per port the program can steer to.
	MaxQueues = 32
	// MaxNICQueues bounds the XSKMAP: the NIC queues a port can bind AF_XDP sockets to.
	MaxNICQueues = 64
)

// Metadata the XDP program puts in front of each frame it steers (bpf_xdp_adjust_meta; the
// kernel copies it into the AF_XDP buffer right before the frame): the flow id, the target RX
// queue position, the transform bits and a magic word, MetaLen bytes ending at the frame.
const (
	MetaLen   = 8
	MetaMagic = 0xDA7A
)

// Meta is the decoded metadata of one frame.
type Meta struct {
	FlowID  uint32
	Queue   int
	VLANPop bool
	Decap   flow.Decap
}

// ParseMeta decodes the MetaLen bytes in front of a frame; ok is false when they do not carry
// the program's magic (the frame was not steered by it).
func ParseMeta(b []byte) (m Meta, ok bool) {
	if len(b) < MetaLen || binary.NativeEndian.Uint16(b[6:]) != MetaMagic {
		return Meta{}, false
	}
	x := b[5]
	return Meta{FlowID: binary.NativeEndian.Uint32(b[0:]), Queue: int(b[4]), VLANPop: x&1 != 0, Decap: flow.Decap(x >> 1 & 3)}, true
}

// Rule slot layout in the rules map (native byte order; addresses as the program loads them
// from the packet, i.e. the four network-order bytes read as one native word).
const (
	rFlags    = 0
	rFlow     = 4
	rSip      = 8
	rDip      = 12
	rSport    = 16 // lo | hi<<16
	rDport    = 20
	rLen      = 24
	rFlexPort = 28
	rFlexOff  = 32
	rFlexVal  = 36
	rFlexMask = 40
	rEType    = 44
	rPCID     = 48
	rTunKey   = 52
	rOSip     = 56
	rODip     = 60
	rNQ       = 64
	rQ        = 68 // MaxQueues bytes of queue positions
	ruleSize  = rQ + MaxQueues + 4
)

// Rule flag bits.
const (
	fValid   = 1 << 0
	fSip     = 1 << 1
	fDip     = 1 << 2
	fLen     = 1 << 3
	fSport   = 1 << 4
	fDport   = 1 << 5
	fFlex    = 1 << 6
	fECPRI   = 1 << 7
	fEType   = 1 << 8
	fPCID    = 1 << 9
	fVLANPop = 1 << 10
	fDecapSh = 11 // two bits
)

// Configuration word layout (one-entry conf map).
const (
	cNRules  = 0
	cIso     = 4
	cDefQ    = 8
	cDrop    = 12
	cVXPort  = 16
	confSize = 20
)

// Counter reasons (per-CPU counters map, indexed queue*numCounters + reason; the global
// slot is queue MaxQueues).
const (
	CounterFiltered = iota // dropped by drop_all_traffic
	CounterNoSocket        // steered to a NIC queue without an AF_XDP socket
	CounterPassed          // unmatched under flow isolation: given to the kernel
	numCounters
	counterStride = 4 // slots per queue in the map (a power of two the program can shift by)
)

// XDP return codes (enum xdp_action in include/uapi/linux/bpf.h).
const (
	xdpAborted  = 0
	xdpDrop     = 1
	xdpPass     = 2
	xdpRedirect = 4
)

// Stack layout of the program (offsets from R10).
const (
	sOut = -32 // outer tuple
	sIn  = -64 // inner tuple
	// tuple fields
	tFlags = 0
	tSip   = 4
	tDip   = 8
	tSport = 12
	tDport = 16
	tLen   = 20
	tL4    = 24
	tProto = 28

	sVlan    = -68
	sEcpri   = -72 // bit0 present, bit1 PC_ID present
	sEType   = -76
	sPCID    = -80
	sTun     = -84
	sTunKey  = -88
	sKey     = -92
	sNRules  = -96
	sIso     = -100
	sDefQ    = -104
	sDrop    = -108
	sVXPort  = -112
	sQ       = -116
	sFlow    = -120
	sXform   = -124
	sNQ      = -128
	stackLow = -128
	sCtx     = -136                   // the context while R6 points at the scratch value
	scrConf  = -stackLow              // configuration copy in the scratch value
	scrSize  = scrConf + confSize + 4 // + padding to a multiple of 8
)

// builder assembles instructions with symbolic labels.
type builder struct {
	insns   asm.Instructions
	pending []string
}

func (b *builder) emit(ins ...asm.Instruction) {
	for _, in := range ins {
		if len(b.pending) > 0 {
			// One symbol per instruction: extra labels get a no-op each (R10 = R10 is not
			// allowed, R6 is always initialised first).
			for len(b.pending) > 1 {
				b.insns = append(b.insns, asm.Mov.Reg(asm.R6, asm.R6).WithSymbol(b.pending[0]))
				b.pending = b.pending[1:]
			}
			in = in.WithSymbol(b.pending[0])
			b.pending = b.pending[:0]
		}
		b.insns = append(b.insns, in)
	}
}

func (b *builder) label(l string) { b.pending = append(b.pending, l) }

// be16/be32 convert a loaded network-order value to host order.
func be(r asm.Register, size asm.Size) asm.Instruction { return asm.HostTo(asm.BE, r, size) }

// ldStack/stStack move 32-bit words between registers and the stack.
func ldStack(r asm.Register, off int16) asm.Instruction {
	return asm.LoadMem(r, asm.R10, off, asm.Word)
}

// ldScr loads the 32-bit word of the scratch copy (R6 during matching) that mirrors stack
// offset off.
func ldScr(r asm.Register, off int16) asm.Instruction {
	return asm.LoadMem(r, asm.R6, off-stackLow, asm.Word)
}

// ldConf loads a configuration word from its copy in the scratch value (R6).
func ldConf(r asm.Register, off int16) asm.Instruction {
	return asm.LoadMem(r, asm.R6, scrConf+off, asm.Word)
}

func stStack(off int16, r asm.Register) asm.Instruction {
	return asm.StoreMem(asm.R10, off, r, asm.Word)
}
func stStackImm(off int16, v int64) asm.Instruction {
	return asm.StoreImm(asm.R10, off, v, asm.Word)
}

// loadPkt reloads data (R2) and data_end (R3) from the context (R6).
func loadPkt(b *builder) {
	b.emit(asm.LoadMem(asm.R2, asm.R6, 0, asm.Word), asm.LoadMem(asm.R3, asm.R6, 4, asm.Word))
}

// ipv4 parses the IPv4 header at packet offset R7 into the tuple at base, and a UDP header
// after it. R7 ends as the L4 offset when the header was complete. Jumps to done when
// finished, whatever it found.
func ipv4(b *builder, base int16, done string) {
	loadPkt(b)
	b.emit(
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Reg(asm.R4, asm.R7),
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Imm(asm.R1, 20),
		asm.JGT.Reg(asm.R1, asm.R3, done),
		asm.LoadMem(asm.R1, asm.R4, 0, asm.Byte),
		asm.Mov.Reg(asm.R5, asm.R1),
		asm.RSh.Imm(asm.R5, 4),
		asm.JNE.Imm(asm.R5, 4, done),
		asm.And.Imm(asm.R1, 0x0f),
		asm.LSh.Imm(asm.R1, 2),
		asm.JLT.Imm(asm.R1, 20, done),
		asm.Mov.Reg(asm.R5, asm.R4),
		asm.Add.Reg(asm.R5, asm.R1),
		asm.JGT.Reg(asm.R5, asm.R3, done),
		stStackImm(base+tFlags, 1),
		asm.LoadMem(asm.R5, asm.R4, 12, asm.Word),
		stStack(base+tSip, asm.R5),
		asm.LoadMem(asm.R5, asm.R4, 16, asm.Word),
		stStack(base+tDip, asm.R5),
		asm.LoadMem(asm.R5, asm.R4, 2, asm.Half),
		be(asm.R5, asm.Half),
		stStack(base+tLen, asm.R5),
		asm.LoadMem(asm.R5, asm.R4, 6, asm.Half),
		be(asm.R5, asm.Half),
		asm.And.Imm(asm.R5, 0x1fff),
		asm.JNE.Imm(asm.R5, 0, done), // a later fragment: no L4 header
		asm.LoadMem(asm.R5, asm.R4, 9, asm.Byte),
		stStack(base+tProto, asm.R5),
		asm.Add.Reg(asm.R7, asm.R1),
		stStack(base+tL4, asm.R7),
		asm.JNE.Imm(asm.R5, protoUDP, done),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Reg(asm.R4, asm.R7),
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Imm(asm.R1, 8),
		asm.JGT.Reg(asm.R1, asm.R3, done),
		asm.LoadMem(asm.R1, asm.R4, 0, asm.Half),
		be(asm.R1, asm.Half),
		stStack(base+tSport, asm.R1),
		asm.LoadMem(asm.R1, asm.R4, 2, asm.Half),
		be(asm.R1, asm.Half),
		stStack(base+tDport, asm.R1),
		stStackImm(base+tFlags, 3),
		asm.Ja.Label(done),
	)
}

// bitClear jumps to label when bit is clear in r (uses R0).
func bitClear(b *builder, r asm.Register, bit int32, label string) {
	b.emit(asm.Mov.Reg(asm.R0, r), asm.And.Imm(asm.R0, bit), asm.JEq.Imm(asm.R0, 0, label))
}

// count adds one to counter (queue in sQ, or the global slot) for reason.
func count(b *builder, counters *ebpf.Map, global bool, reason int, pfx string) {
	if global {
		b.emit(asm.Mov.Imm(asm.R1, int32(MaxQueues*counterStride+reason)))
	} else {
		b.emit(
			ldStack(asm.R1, sQ),
			asm.And.Imm(asm.R1, MaxQueues-1),
			asm.LSh.Imm(asm.R1, 2), // × counterStride
			asm.Add.Imm(asm.R1, int32(reason)),
		)
	}
	b.emit(
		stStack(sKey, asm.R1),
		asm.LoadMapPtr(asm.R1, counters.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, sKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, pfx+"_cnt_done"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.DWord),
		asm.Add.Imm(asm.R1, 1),
		asm.StoreMem(asm.R0, 0, asm.R1, asm.DWord),
	)
	b.label(pfx + "_cnt_done")
}

// maps of one program instance.
type maps struct {
	rules, conf, rss, xsks, counters, scratch *ebpf.Map
}

func (m *maps) close() {
	for _, x := range []*ebpf.Map{m.rules, m.conf, m.rss, m.xsks, m.counters, m.scratch} {
		if x != nil {
			x.Close()
		}
	}
}

// instructions builds the XDP program against the maps.
func instructions(m *maps) asm.Instructions {
	b := &builder{}
	b.emit(asm.Mov.Reg(asm.R6, asm.R1), asm.Mov.Imm(asm.R1, 0))
	for off := int16(stackLow); off < 0; off += 8 {
		b.emit(asm.StoreMem(asm.R10, off, asm.R1, asm.DWord))
	}
	// Configuration.
	b.emit(
		asm.LoadMapPtr(asm.R1, m.conf.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, sKey),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "conf_ok"),
		asm.Mov.Imm(asm.R0, xdpPass),
		asm.Return(),
	)
	b.label("conf_ok")
	b.emit(asm.LoadMem(asm.R1, asm.R0, cVXPort, asm.Word), stStack(sVXPort, asm.R1))

	// Ethernet and up to two VLAN tags.
	loadPkt(b)
	b.emit(
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 14),
		asm.JGT.Reg(asm.R4, asm.R3, "parsed"),
		asm.LoadMem(asm.R5, asm.R2, 12, asm.Half),
		be(asm.R5, asm.Half),
		asm.Mov.Imm(asm.R7, 14),
		asm.JEq.Imm(asm.R5, flow.EtherTypeVLAN, "tag1"),
		asm.JNE.Imm(asm.R5, flow.EtherTypeQinQ, "tags_done"),
	)
	b.label("tag1")
	b.emit(
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 18),
		asm.JGT.Reg(asm.R4, asm.R3, "parsed"),
		stStackImm(sVlan, 1),
		asm.LoadMem(asm.R5, asm.R2, 16, asm.Half),
		be(asm.R5, asm.Half),
		asm.Mov.Imm(asm.R7, 18),
		asm.JEq.Imm(asm.R5, flow.EtherTypeVLAN, "tag2"),
		asm.JNE.Imm(asm.R5, flow.EtherTypeQinQ, "tags_done"),
	)
	b.label("tag2")
	b.emit(
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Imm(asm.R4, 22),
		asm.JGT.Reg(asm.R4, asm.R3, "parsed"),
		asm.LoadMem(asm.R5, asm.R2, 20, asm.Half),
		be(asm.R5, asm.Half),
		asm.Mov.Imm(asm.R7, 22),
		asm.JEq.Imm(asm.R5, flow.EtherTypeVLAN, "parsed"),
		asm.JEq.Imm(asm.R5, flow.EtherTypeQinQ, "parsed"),
	)
	b.label("tags_done")
	b.emit(
		asm.JEq.Imm(asm.R5, flow.EtherTypeECPRI, "ecpri"),
		asm.JNE.Imm(asm.R5, flow.EtherTypeIPv4, "parsed"),
	)
	ipv4(b, sOut, "outer_done")

	// eCPRI common header: revision/flags, message type, payload size, then PC_ID/RTC_ID.
	b.label("ecpri")
	b.emit(
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Reg(asm.R4, asm.R7),
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Imm(asm.R1, 2),
		asm.JGT.Reg(asm.R1, asm.R3, "parsed"),
		asm.LoadMem(asm.R1, asm.R4, 1, asm.Byte),
		stStack(sEType, asm.R1),
		stStackImm(sEcpri, 1),
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Imm(asm.R1, 6),
		asm.JGT.Reg(asm.R1, asm.R3, "parsed"),
		asm.LoadMem(asm.R1, asm.R4, 4, asm.Half),
		be(asm.R1, asm.Half),
		stStack(sPCID, asm.R1),
		stStackImm(sEcpri, 3),
		asm.Ja.Label("parsed"),
	)

	// Tunnels behind the outer IPv4 header.
	b.label("outer_done")
	b.emit(
		ldStack(asm.R1, sOut+tFlags),
		asm.JEq.Imm(asm.R1, 0, "parsed"),
		ldStack(asm.R7, sOut+tL4),
		asm.JEq.Imm(asm.R7, 0, "parsed"),
		asm.JGT.Imm(asm.R7, 100, "parsed"),
		ldStack(asm.R5, sOut+tProto),
		asm.JEq.Imm(asm.R5, protoGRE, "gre"),
		asm.JNE.Imm(asm.R1, 3, "parsed"), // not UDP
		ldStack(asm.R1, sVXPort),
		asm.JEq.Imm(asm.R1, 0, "parsed"),
		ldStack(asm.R5, sOut+tDport),
		asm.JNE.Reg(asm.R5, asm.R1, "parsed"),
	)
	// VXLAN: UDP(8) + VXLAN(8) + inner Ethernet(14).
	loadPkt(b)
	b.emit(
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Reg(asm.R4, asm.R7),
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Imm(asm.R1, 30),
		asm.JGT.Reg(asm.R1, asm.R3, "parsed"),
		asm.LoadMem(asm.R1, asm.R4, 8, asm.Byte),
		asm.And.Imm(asm.R1, 0x08),
		asm.JEq.Imm(asm.R1, 0, "parsed"),
		asm.LoadMem(asm.R1, asm.R4, 12, asm.Word),
		be(asm.R1, asm.Word),
		asm.RSh.Imm32(asm.R1, 8),
		stStack(sTunKey, asm.R1),
		stStackImm(sTun, int64(flow.DecapVXLAN)),
		asm.LoadMem(asm.R1, asm.R4, 28, asm.Half),
		be(asm.R1, asm.Half),
		asm.JNE.Imm(asm.R1, flow.EtherTypeIPv4, "parsed"),
		asm.Add.Imm(asm.R7, 30),
	)
	ipv4(b, sIn, "parsed")

	// GRE / NVGRE.
	b.label("gre")
	loadPkt(b)
	b.emit(
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Reg(asm.R4, asm.R7),
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Imm(asm.R1, 4),
		asm.JGT.Reg(asm.R1, asm.R3, "parsed"),
		asm.LoadMem(asm.R1, asm.R4, 0, asm.Half),
		be(asm.R1, asm.Half),
		asm.LoadMem(asm.R5, asm.R4, 2, asm.Half),
		be(asm.R5, asm.Half),
		// R8 = 4*C, R9 = K, R0 = header length
		asm.Mov.Reg(asm.R8, asm.R1),
		asm.RSh.Imm(asm.R8, 15),
		asm.And.Imm(asm.R8, 1),
		asm.LSh.Imm(asm.R8, 2),
		asm.Mov.Reg(asm.R9, asm.R1),
		asm.RSh.Imm(asm.R9, 13),
		asm.And.Imm(asm.R9, 1),
		asm.Mov.Reg(asm.R0, asm.R1),
		asm.RSh.Imm(asm.R0, 12),
		asm.And.Imm(asm.R0, 1),
		asm.LSh.Imm(asm.R0, 2),
		asm.Add.Reg(asm.R0, asm.R8),
		asm.Add.Imm(asm.R0, 4),
		asm.Mov.Reg(asm.R1, asm.R9),
		asm.LSh.Imm(asm.R1, 2),
		asm.Add.Reg(asm.R0, asm.R1),
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Reg(asm.R1, asm.R0),
		asm.JGT.Reg(asm.R1, asm.R3, "parsed"),
		asm.JEq.Imm(asm.R5, flow.EtherTypeTEB, "nvgre"),
		stStack(sTunKey, asm.R5),
		stStackImm(sTun, int64(flow.DecapGRE)),
		asm.JNE.Imm(asm.R5, flow.EtherTypeIPv4, "parsed"),
		asm.Add.Reg(asm.R7, asm.R0),
	)
	ipv4(b, sIn, "parsed")
	b.label("nvgre")
	b.emit(
		asm.JEq.Imm(asm.R9, 0, "parsed"),
		// key word at 4 + 4*C
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Reg(asm.R1, asm.R8),
		asm.Mov.Reg(asm.R5, asm.R1),
		asm.Add.Imm(asm.R5, 8),
		asm.JGT.Reg(asm.R5, asm.R3, "parsed"),
		asm.LoadMem(asm.R5, asm.R1, 4, asm.Word),
		be(asm.R5, asm.Word),
		asm.RSh.Imm32(asm.R5, 8),
		// inner Ethernet must fit before the tunnel counts (as the Go parser)
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Reg(asm.R1, asm.R0),
		asm.Mov.Reg(asm.R8, asm.R1),
		asm.Add.Imm(asm.R8, 14),
		asm.JGT.Reg(asm.R8, asm.R3, "parsed"),
		stStack(sTunKey, asm.R5),
		stStackImm(sTun, int64(flow.DecapNVGRE)),
		asm.LoadMem(asm.R5, asm.R1, 12, asm.Half),
		be(asm.R5, asm.Half),
		asm.JNE.Imm(asm.R5, flow.EtherTypeIPv4, "parsed"),
		asm.Add.Reg(asm.R7, asm.R0),
		asm.Add.Imm(asm.R7, 14),
	)
	ipv4(b, sIn, "parsed")

	// Rule loop: R9 slot, R7 rule, R8 tuple matched against.
	// The parse ends in many states (tag or not, tunnel kinds, ...) that differ only in the
	// constants on the stack. Copy the results into a per-CPU scratch value, which the
	// verifier does not track, and match from there: every parse outcome then reaches the
	// rule loop in one and the same verifier state, so the loop is verified once, not once
	// per outcome.
	b.label("parsed")
	b.emit(
		stStackImm(sKey, 0),
		asm.LoadMapPtr(asm.R1, m.scratch.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, sKey),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "scr_ok"),
		asm.Mov.Imm(asm.R0, xdpPass),
		asm.Return(),
	)
	b.label("scr_ok")
	b.emit(asm.StoreMem(asm.R10, sCtx, asm.R6, asm.DWord), asm.Mov.Reg(asm.R6, asm.R0))
	for off := int16(stackLow); off < 0; off += 4 {
		b.emit(ldStack(asm.R1, off), asm.StoreMem(asm.R6, off-stackLow, asm.R1, asm.Word))
	}
	b.emit(
		asm.LoadMapPtr(asm.R1, m.conf.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, sKey),
		asm.FnMapLookupElem.Call(),
		asm.JNE.Imm(asm.R0, 0, "conf2_ok"),
		asm.Mov.Imm(asm.R0, xdpPass),
		asm.Return(),
	)
	b.label("conf2_ok")
	for off := int16(0); off < confSize; off += 4 {
		b.emit(asm.LoadMem(asm.R1, asm.R0, off, asm.Word), asm.StoreMem(asm.R6, scrConf+off, asm.R1, asm.Word))
	}
	b.emit(asm.Mov.Imm(asm.R9, 0))
	b.label("loop")
	b.emit(
		asm.JGE.Imm(asm.R9, MaxRules, "unmatched"),
		ldConf(asm.R1, cNRules),
		asm.JGE.Reg(asm.R9, asm.R1, "unmatched"),
		stStack(sKey, asm.R9),
		asm.LoadMapPtr(asm.R1, m.rules.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, sKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "unmatched"),
		asm.Mov.Reg(asm.R7, asm.R0),
		asm.LoadMem(asm.R1, asm.R7, rFlags, asm.Word),
	)
	bitClear(b, asm.R1, fValid, "next")
	bitClear(b, asm.R1, fVLANPop, "vlan_ok")
	b.emit(ldScr(asm.R2, sVlan), asm.JEq.Imm(asm.R2, 0, "next"))
	b.label("vlan_ok")
	b.emit(
		asm.Mov.Reg(asm.R8, asm.R6),
		asm.Add.Imm(asm.R8, sOut-stackLow),
		asm.Mov.Reg(asm.R2, asm.R1),
		asm.RSh.Imm(asm.R2, fDecapSh),
		asm.And.Imm(asm.R2, 3),
		asm.JEq.Imm(asm.R2, 0, "tuple_ok"),
		ldScr(asm.R3, sTun),
		asm.JNE.Reg(asm.R2, asm.R3, "next"),
		ldScr(asm.R3, sTunKey),
		asm.LoadMem(asm.R4, asm.R7, rTunKey, asm.Word),
		asm.JNE.Reg(asm.R3, asm.R4, "next"),
		asm.LoadMem(asm.R4, asm.R7, rOSip, asm.Word),
		asm.JEq.Imm(asm.R4, 0, "osip_ok"),
		ldScr(asm.R3, sOut+tSip),
		asm.JNE.Reg(asm.R3, asm.R4, "next"),
	)
	b.label("osip_ok")
	b.emit(
		asm.LoadMem(asm.R4, asm.R7, rODip, asm.Word),
		asm.JEq.Imm(asm.R4, 0, "odip_ok"),
		ldScr(asm.R3, sOut+tDip),
		asm.JNE.Reg(asm.R3, asm.R4, "next"),
	)
	b.label("odip_ok")
	b.emit(asm.Mov.Reg(asm.R8, asm.R6), asm.Add.Imm(asm.R8, sIn-stackLow))
	b.label("tuple_ok")
	b.emit(asm.LoadMem(asm.R2, asm.R8, tFlags, asm.Word))
	// Exact IPv4 fields.
	for _, f := range []struct {
		bit      int32
		tf, rf   int16
		name     string
		needsUDP bool
	}{{fSip, tSip, rSip, "sip", false}, {fDip, tDip, rDip, "dip", false}, {fLen, tLen, rLen, "len", false}} {
		bitClear(b, asm.R1, f.bit, f.name+"_ok")
		b.emit(
			asm.Mov.Reg(asm.R0, asm.R2),
			asm.And.Imm(asm.R0, 1),
			asm.JEq.Imm(asm.R0, 0, "next"),
			asm.LoadMem(asm.R3, asm.R8, f.tf, asm.Word),
			asm.LoadMem(asm.R4, asm.R7, f.rf, asm.Word),
			asm.JNE.Reg(asm.R3, asm.R4, "next"),
		)
		b.label(f.name + "_ok")
	}
	// UDP port ranges.
	for _, f := range []struct {
		bit    int32
		tf, rf int16
		name   string
	}{{fSport, tSport, rSport, "sport"}, {fDport, tDport, rDport, "dport"}} {
		bitClear(b, asm.R1, f.bit, f.name+"_ok")
		b.emit(
			asm.Mov.Reg(asm.R0, asm.R2),
			asm.And.Imm(asm.R0, 2),
			asm.JEq.Imm(asm.R0, 0, "next"),
			asm.LoadMem(asm.R3, asm.R8, f.tf, asm.Word),
			asm.LoadMem(asm.R4, asm.R7, f.rf, asm.Word),
			asm.Mov.Reg(asm.R5, asm.R4),
			asm.And.Imm(asm.R5, 0xffff),
			asm.JLT.Reg(asm.R3, asm.R5, "next"),
			asm.RSh.Imm(asm.R4, 16),
			asm.JGT.Reg(asm.R3, asm.R4, "next"),
		)
		b.label(f.name + "_ok")
	}
	// Flex item: masked big-endian word at an offset after the outer UDP header.
	bitClear(b, asm.R1, fFlex, "flex_ok")
	b.emit(
		ldScr(asm.R3, sOut+tFlags),
		asm.JNE.Imm(asm.R3, 3, "next"),
		ldScr(asm.R3, sOut+tDport),
		asm.LoadMem(asm.R4, asm.R7, rFlexPort, asm.Word),
		asm.JNE.Reg(asm.R3, asm.R4, "next"),
		ldScr(asm.R3, sOut+tL4),
		asm.JGT.Imm(asm.R3, 200, "next"),
		asm.LoadMem(asm.R4, asm.R7, rFlexOff, asm.Word),
		asm.And.Imm(asm.R4, 28),
		asm.Add.Reg(asm.R3, asm.R4),
		asm.Add.Imm(asm.R3, 8),
		asm.LoadMem(asm.R5, asm.R10, sCtx, asm.DWord),
		asm.LoadMem(asm.R4, asm.R5, 0, asm.Word),
		asm.LoadMem(asm.R5, asm.R5, 4, asm.Word),
		asm.Add.Reg(asm.R4, asm.R3),
		asm.Mov.Reg(asm.R3, asm.R4),
		asm.Add.Imm(asm.R3, 4),
		asm.JGT.Reg(asm.R3, asm.R5, "next"),
		asm.LoadMem(asm.R3, asm.R4, 0, asm.Word),
		be(asm.R3, asm.Word),
		asm.LoadMem(asm.R4, asm.R7, rFlexMask, asm.Word),
		asm.And.Reg32(asm.R3, asm.R4),
		asm.LoadMem(asm.R4, asm.R7, rFlexVal, asm.Word),
		asm.JNE.Reg(asm.R3, asm.R4, "next"),
	)
	b.label("flex_ok")
	// eCPRI.
	bitClear(b, asm.R1, fECPRI, "ecpri_ok")
	b.emit(
		ldScr(asm.R3, sEcpri),
		asm.Mov.Reg(asm.R0, asm.R3),
		asm.And.Imm(asm.R0, 1),
		asm.JEq.Imm(asm.R0, 0, "next"),
	)
	bitClear(b, asm.R1, fEType, "etype_ok")
	b.emit(
		ldScr(asm.R4, sEType),
		asm.LoadMem(asm.R5, asm.R7, rEType, asm.Word),
		asm.JNE.Reg(asm.R4, asm.R5, "next"),
	)
	b.label("etype_ok")
	bitClear(b, asm.R1, fPCID, "ecpri_ok")
	b.emit(
		asm.Mov.Reg(asm.R0, asm.R3),
		asm.And.Imm(asm.R0, 2),
		asm.JEq.Imm(asm.R0, 0, "next"),
		ldScr(asm.R4, sPCID),
		asm.LoadMem(asm.R5, asm.R7, rPCID, asm.Word),
		asm.JNE.Reg(asm.R4, asm.R5, "next"),
	)
	b.label("ecpri_ok")
	b.emit(asm.Ja.Label("matched"))
	b.label("next")
	b.emit(asm.Add.Imm(asm.R9, 1), asm.Ja.Label("loop"))

	// A rule matched: flow id, transforms, queue (RSS when the rule has several).
	b.label("matched")
	b.emit(
		asm.LoadMem(asm.R1, asm.R7, rFlow, asm.Word),
		stStack(sFlow, asm.R1),
		asm.LoadMem(asm.R1, asm.R7, rFlags, asm.Word),
		asm.RSh.Imm(asm.R1, 10),
		asm.And.Imm(asm.R1, 7),
		stStack(sXform, asm.R1),
		asm.LoadMem(asm.R1, asm.R7, rNQ, asm.Word),
		asm.JGT.Imm(asm.R1, 1, "rss"),
		asm.LoadMem(asm.R1, asm.R7, rQ, asm.Byte),
		stStack(sQ, asm.R1),
		asm.Ja.Label("deliver"),
	)
	b.label("rss")
	b.emit(
		asm.JGT.Imm(asm.R1, MaxQueues, "unmatched"),
		stStack(sNQ, asm.R1),
		stStackImm(sKey, 0),
		asm.LoadMapPtr(asm.R1, m.rss.FD()),
		asm.Mov.Reg(asm.R2, asm.R10),
		asm.Add.Imm(asm.R2, sKey),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "unmatched"),
		asm.Mov.Imm(asm.R9, 0),
	)
	// Hash input bytes in order: source address, destination address, source port and
	// destination port in network order. Addresses sit on the stack as loaded (network byte
	// k at offset k); ports in host order (high byte at offset 1 on little-endian hosts).
	hi, lo := int16(1), int16(0)
	if binary.NativeEndian.Uint16([]byte{0, 1}) == 1 { // big-endian host
		hi, lo = 2, 3
	}
	src := []int16{tSip, tSip + 1, tSip + 2, tSip + 3, tDip, tDip + 1, tDip + 2, tDip + 3,
		tSport + hi, tSport + lo, tDport + hi, tDport + lo}
	for p, off := range src {
		b.emit(
			asm.LoadMem(asm.R1, asm.R8, off, asm.Byte),
			asm.LSh.Imm(asm.R1, 2),
			asm.Add.Imm(asm.R1, int32(p*1024)),
			asm.Mov.Reg(asm.R2, asm.R0),
			asm.Add.Reg(asm.R2, asm.R1),
			asm.LoadMem(asm.R2, asm.R2, 0, asm.Word),
			asm.Xor.Reg(asm.R9, asm.R2),
		)
	}
	b.emit(
		asm.And.Imm(asm.R9, flow.RETASize-1),
		ldStack(asm.R1, sNQ),
		asm.Mod.Reg(asm.R9, asm.R1),
		asm.And.Imm(asm.R9, MaxQueues-1),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Reg(asm.R1, asm.R9),
		asm.LoadMem(asm.R1, asm.R1, rQ, asm.Byte),
		stStack(sQ, asm.R1),
	)

	// Deliver: drop-all, metadata, redirect into the socket of the arrival queue.
	b.label("deliver")
	b.emit(
		ldConf(asm.R1, cDrop),
		asm.LoadMem(asm.R6, asm.R10, sCtx, asm.DWord), // R6 is the context again
		asm.JNE.Imm(asm.R1, 0, "dropped"),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, -MetaLen),
		asm.FnXdpAdjustMeta.Call(),
		asm.JNE.Imm(asm.R0, 0, "redirect"),
		asm.LoadMem(asm.R2, asm.R6, 8, asm.Word),
		asm.LoadMem(asm.R3, asm.R6, 0, asm.Word),
		asm.Mov.Reg(asm.R1, asm.R2),
		asm.Add.Imm(asm.R1, MetaLen),
		asm.JGT.Reg(asm.R1, asm.R3, "redirect"),
		ldStack(asm.R1, sFlow),
		asm.StoreMem(asm.R2, 0, asm.R1, asm.Word),
		ldStack(asm.R1, sQ),
		asm.StoreMem(asm.R2, 4, asm.R1, asm.Byte),
		ldStack(asm.R1, sXform),
		asm.StoreMem(asm.R2, 5, asm.R1, asm.Byte),
		asm.StoreImm(asm.R2, 6, MetaMagic, asm.Half),
	)
	b.label("redirect")
	b.emit(
		asm.LoadMapPtr(asm.R1, m.xsks.FD()),
		asm.LoadMem(asm.R2, asm.R6, 16, asm.Word), // rx_queue_index
		asm.Mov.Imm(asm.R3, 0),
		asm.FnRedirectMap.Call(),
		asm.JNE.Imm(asm.R0, xdpRedirect, "nosock"),
		asm.Return(),
	)
	b.label("nosock")
	count(b, m.counters, false, CounterNoSocket, "nosock")
	b.emit(asm.Mov.Imm(asm.R0, xdpDrop), asm.Return())
	b.label("dropped")
	count(b, m.counters, false, CounterFiltered, "dropped")
	b.emit(asm.Mov.Imm(asm.R0, xdpDrop), asm.Return())

	// No rule matched: the kernel (isolation) or the default queue.
	b.label("unmatched")
	b.emit(
		ldConf(asm.R1, cIso),
		asm.JEq.Imm(asm.R1, 0, "default"),
	)
	count(b, m.counters, true, CounterPassed, "passed")
	b.emit(asm.Mov.Imm(asm.R0, xdpPass), asm.Return())
	b.label("default")
	b.emit(
		ldConf(asm.R1, cDefQ),
		stStack(sQ, asm.R1),
		stStackImm(sFlow, 0),
		stStackImm(sXform, 0),
		asm.Ja.Label("deliver"),
	)
	return b.insns
}

// Program is one port's XDP steering program and its maps.
type Program struct {
	prog *ebpf.Program
	m    maps
	conf Conf
}

// Conf is the program's global configuration.
type Conf struct {
	NRules       int // slots scanned: highest used slot + 1
	Isolation    bool
	DefaultQueue int
	DropAll      bool
	VXLANPort    uint16
}

// NewProgram creates the maps and loads the program. key is the Toeplitz key (nil: the
// default key). The verifier log is included in errors.
func NewProgram(key []byte) (*Program, error) {
	if key == nil {
		key = flow.DefaultRSSKey[:]
	}
	if len(key) < 16 {
		return nil, fmt.Errorf("flow: Toeplitz key of %d bytes; the 12-byte IPv4/UDP input needs at least 16", len(key))
	}
	p := &Program{}
	var err error
	mk := func(name string, t ebpf.MapType, k, v, n uint32) *ebpf.Map {
		if err != nil {
			return nil
		}
		var m *ebpf.Map
		m, err = ebpf.NewMap(&ebpf.MapSpec{Name: name, Type: t, KeySize: k, ValueSize: v, MaxEntries: n})
		if err != nil {
			err = fmt.Errorf("flow: create map %s: %w", name, err)
		}
		return m
	}
	p.m.rules = mk("dq_rules", ebpf.Array, 4, ruleSize, MaxRules)
	p.m.conf = mk("dq_conf", ebpf.Array, 4, confSize, 1)
	p.m.rss = mk("dq_rss", ebpf.Array, 4, 12*256*4, 1)
	p.m.xsks = mk("dq_xsks", ebpf.XSKMap, 4, 4, MaxNICQueues)
	p.m.counters = mk("dq_counters", ebpf.PerCPUArray, 4, 8, (MaxQueues+1)*counterStride)
	p.m.scratch = mk("dq_scratch", ebpf.PerCPUArray, 4, scrSize, 1)
	if err != nil {
		p.m.close()
		return nil, err
	}
	tbl := flow.ToeplitzTable(key)
	buf := make([]byte, len(tbl)*4)
	for i, v := range tbl {
		binary.NativeEndian.PutUint32(buf[i*4:], v)
	}
	if err := p.m.rss.Update(uint32(0), buf, ebpf.UpdateAny); err != nil {
		p.m.close()
		return nil, fmt.Errorf("flow: fill RSS table: %w", err)
	}
	if err := p.SetConf(Conf{}); err != nil {
		p.m.close()
		return nil, err
	}
	p.prog, err = ebpf.NewProgramWithOptions(&ebpf.ProgramSpec{
		Name:         "daqiri_steer",
		Type:         ebpf.XDP,
		License:      "GPL", // needed for nothing it calls, but harmless and conventional
		Instructions: instructions(&p.m),
	}, ebpf.ProgramOptions{LogSizeStart: 1 << 26})
	if err != nil {
		p.m.close()
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("flow: load XDP program: %+v", ve)
		}
		return nil, fmt.Errorf("flow: load XDP program: %w", err)
	}
	return p, nil
}

// Program is the loaded XDP program (to attach, or to run with BPF_PROG_TEST_RUN).
func (p *Program) Program() *ebpf.Program { return p.prog }

// Close unloads the program and its maps (an attached program stays until detached).
func (p *Program) Close() error {
	if p.prog != nil {
		p.prog.Close()
	}
	p.m.close()
	return nil
}

// SetConf writes the global configuration.
func (p *Program) SetConf(c Conf) error {
	if c.NRules < 0 || c.NRules > MaxRules || c.DefaultQueue < 0 || c.DefaultQueue >= MaxQueues {
		return fmt.Errorf("flow: configuration out of range (%d rules, default queue %d)", c.NRules, c.DefaultQueue)
	}
	v := make([]byte, confSize)
	ne := binary.NativeEndian
	ne.PutUint32(v[cNRules:], uint32(c.NRules))
	if c.Isolation {
		ne.PutUint32(v[cIso:], 1)
	}
	ne.PutUint32(v[cDefQ:], uint32(c.DefaultQueue))
	if c.DropAll {
		ne.PutUint32(v[cDrop:], 1)
	}
	ne.PutUint32(v[cVXPort:], uint32(c.VXLANPort))
	if err := p.m.conf.Update(uint32(0), v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("flow: write configuration: %w", err)
	}
	p.conf = c
	return nil
}

// Conf is the configuration last written.
func (p *Program) Conf() Conf { return p.conf }

func addrWord(a netip.Addr) uint32 {
	b := a.As4()
	return binary.NativeEndian.Uint32(b[:])
}

// encode lays a rule out as its map value, with or without the valid bit.
func encode(r *flow.Rule, valid bool) ([]byte, error) {
	v := make([]byte, ruleSize)
	ne := binary.NativeEndian
	var fl uint32
	if valid {
		fl |= fValid
	}
	if r.IPv4Src.IsValid() {
		fl |= fSip
		ne.PutUint32(v[rSip:], addrWord(r.IPv4Src))
	}
	if r.IPv4Dst.IsValid() {
		fl |= fDip
		ne.PutUint32(v[rDip:], addrWord(r.IPv4Dst))
	}
	if r.IPv4Len != 0 {
		fl |= fLen
		ne.PutUint32(v[rLen:], uint32(r.IPv4Len))
	}
	if !r.UDPSrc.Any() {
		fl |= fSport
		ne.PutUint32(v[rSport:], uint32(r.UDPSrc.Lo)|uint32(r.UDPSrc.Hi)<<16)
	}
	if !r.UDPDst.Any() {
		fl |= fDport
		ne.PutUint32(v[rDport:], uint32(r.UDPDst.Lo)|uint32(r.UDPDst.Hi)<<16)
	}
	if f := r.Flex; f != nil {
		fl |= fFlex
		ne.PutUint32(v[rFlexPort:], uint32(f.UDPPort))
		ne.PutUint32(v[rFlexOff:], uint32(f.Offset))
		ne.PutUint32(v[rFlexVal:], f.Value&f.Mask)
		ne.PutUint32(v[rFlexMask:], f.Mask)
	}
	if e := r.ECPRI; e != nil {
		fl |= fECPRI
		if e.MsgType != nil {
			fl |= fEType
			ne.PutUint32(v[rEType:], uint32(*e.MsgType))
		}
		if e.PCID != nil {
			fl |= fPCID
			ne.PutUint32(v[rPCID:], uint32(*e.PCID))
		}
	}
	if r.VLANPop {
		fl |= fVLANPop
	}
	if r.Decap != flow.DecapNone {
		fl |= uint32(r.Decap) << fDecapSh
		ne.PutUint32(v[rTunKey:], r.TunnelKey)
		if r.OuterSrc.IsValid() {
			ne.PutUint32(v[rOSip:], addrWord(r.OuterSrc))
		}
		if r.OuterDst.IsValid() {
			ne.PutUint32(v[rODip:], addrWord(r.OuterDst))
		}
	}
	ne.PutUint32(v[rFlags:], fl)
	ne.PutUint32(v[rFlow:], r.FlowID)
	if len(r.Queues) == 0 || len(r.Queues) > MaxQueues {
		return nil, fmt.Errorf("flow: rule %q has %d queues (1..%d)", r.Name, len(r.Queues), MaxQueues)
	}
	ne.PutUint32(v[rNQ:], uint32(len(r.Queues)))
	for i, q := range r.Queues {
		if q < 0 || q >= MaxQueues {
			return nil, fmt.Errorf("flow: rule %q: queue position %d out of range", r.Name, q)
		}
		v[rQ+i] = byte(q)
	}
	return v, nil
}

// SetRule installs r in a slot while traffic runs. The slot is written in two steps — all
// fields with the valid bit clear, then the same value with it set — so a packet classified
// during the update sees either the old state of the slot or the complete new rule, never a
// mix of the two (a map update is a plain copy, not atomic for readers).
func (p *Program) SetRule(slot int, r *flow.Rule) error {
	if slot < 0 || slot >= MaxRules {
		return fmt.Errorf("flow: slot %d out of range (0..%d)", slot, MaxRules-1)
	}
	for _, valid := range []bool{false, true} {
		v, err := encode(r, valid)
		if err != nil {
			return err
		}
		if err := p.m.rules.Update(uint32(slot), v, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("flow: write rule slot %d: %w", slot, err)
		}
	}
	return nil
}

// ClearRule disables a slot: only the valid bit changes, so readers see the old rule or none.
func (p *Program) ClearRule(slot int) error {
	if slot < 0 || slot >= MaxRules {
		return fmt.Errorf("flow: slot %d out of range", slot)
	}
	v := make([]byte, ruleSize)
	if err := p.m.rules.Lookup(uint32(slot), &v); err != nil {
		return fmt.Errorf("flow: read rule slot %d: %w", slot, err)
	}
	fl := binary.NativeEndian.Uint32(v[rFlags:]) &^ fValid
	binary.NativeEndian.PutUint32(v[rFlags:], fl)
	if err := p.m.rules.Update(uint32(slot), v, ebpf.UpdateAny); err != nil {
		return fmt.Errorf("flow: clear rule slot %d: %w", slot, err)
	}
	return nil
}

// SetSocket points NIC queue nicQueue's XSKMAP entry at an AF_XDP socket.
func (p *Program) SetSocket(nicQueue, fd int) error {
	if err := p.m.xsks.Update(uint32(nicQueue), uint32(fd), ebpf.UpdateAny); err != nil {
		return fmt.Errorf("flow: XSKMAP entry %d: %w", nicQueue, err)
	}
	return nil
}

// Counters reads the per-queue drop counters summed over CPUs: [queue][reason], and the
// global ones (queue MaxQueues).
func (p *Program) Counters() ([MaxQueues + 1][numCounters]uint64, error) {
	var out [MaxQueues + 1][numCounters]uint64
	var vals []uint64
	for k := 0; k < (MaxQueues+1)*counterStride; k++ {
		if k%counterStride >= numCounters {
			continue
		}
		if err := p.m.counters.Lookup(uint32(k), &vals); err != nil {
			return out, fmt.Errorf("flow: read counter %d: %w", k, err)
		}
		var s uint64
		for _, v := range vals {
			s += v
		}
		out[k/counterStride][k%counterStride] = s
	}
	return out, nil
}
