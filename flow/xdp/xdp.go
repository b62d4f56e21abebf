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
	"golang.org/x/sys/unix"

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
	rDmacLo   = 64 // destination MAC bytes 0-3 as loaded from the packet
	rDmacHi   = 68 // bytes 4-5 (a loaded half word, zero-extended)
	rSmacLo   = 72 // source MAC
	rSmacHi   = 76
	rV6Src    = 80 // IPv6 source address: four words as loaded from the packet
	rV6Dst    = 96
	rNQ       = 112
	rQ        = 116 // MaxQueues bytes of queue positions
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
	fEthDst  = 1 << 13
	fEthSrc  = 1 << 14
	fV6Src   = 1 << 15
	fV6Dst   = 1 << 16
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

	sVlan   = -68
	sEcpri  = -72 // bit0 present, bit1 PC_ID present
	sEType  = -76
	sPCID   = -80
	sTun    = -84
	sTunKey = -88
	sKey    = -92
	sNRules = -96
	sIso    = -100
	sDefQ   = -104
	sDrop   = -108
	sVXPort = -112
	sQ      = -116
	sFlow   = -120
	sXform  = -124
	sNQ     = -128
	// The outer IPv4 packet's end (its header offset + tot_len) and whether it is a fragment
	// (MF or an offset): the tunnel parse and the flex match read nothing past the packet,
	// and a fragment is never decapsulated (flow's reference parser, issue 19 items 9, 16).
	sOEnd    = -132
	sOFrag   = -136
	sV6Src   = -152 // outer IPv6 source address, 16 bytes as loaded
	sV6Dst   = -168 // and destination
	stackLow = -168
	sCtx     = -176                   // the context while R6 points at the scratch value
	scrConf  = -stackLow              // configuration copy in the scratch value
	scrSize  = scrConf + confSize + 4 // + padding to a multiple of 8
)

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
	p.m.rss = mk("dq_rss", ebpf.Array, 4, flow.ToeplitzPositions*256*4, 1)
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
	spec := &ebpf.ProgramSpec{
		Name:         "daqiri_steer",
		Type:         ebpf.XDP,
		License:      "GPL", // needed for nothing it calls, but harmless and conventional
		Instructions: instructions(&p.m),
		// Frags-aware (xdp.frags): the program reads only the frame's first buffer, which
		// holds every header it parses, so it is correct for multi-buffer frames too; and a
		// driver lets a frags-aware program run at an MTU above a page (veth at 9000).
		Flags: unix.BPF_F_XDP_HAS_FRAGS,
	}
	p.prog, err = ebpf.NewProgramWithOptions(spec, ebpf.ProgramOptions{LogSizeStart: 1 << 26})
	if err != nil && !errors.As(err, new(*ebpf.VerifierError)) {
		// Kernels before 5.18 know no frags flag: load the plain program.
		spec.Flags = 0
		p.prog, err = ebpf.NewProgramWithOptions(spec, ebpf.ProgramOptions{LogSizeStart: 1 << 26})
	}
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
	for _, a := range []struct {
		addr netip.Addr
		bit  uint32
		at   int
	}{{r.IPv6Src, fV6Src, rV6Src}, {r.IPv6Dst, fV6Dst, rV6Dst}} {
		if a.addr.IsValid() {
			fl |= a.bit
			b := a.addr.As16()
			copy(v[a.at:a.at+16], b[:]) // the words as the program loads them
		}
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
	for _, m := range []struct {
		mac    []byte
		bit    uint32
		lo, hi int
	}{{r.EthDst, fEthDst, rDmacLo, rDmacHi}, {r.EthSrc, fEthSrc, rSmacLo, rSmacHi}} {
		switch len(m.mac) {
		case 0:
			continue
		case 6:
		default:
			return nil, fmt.Errorf("flow: rule %q: MAC address of %d octets", r.Name, len(m.mac))
		}
		fl |= m.bit
		ne.PutUint32(v[m.lo:], ne.Uint32(m.mac[0:4]))
		ne.PutUint32(v[m.hi:], uint32(ne.Uint16(m.mac[4:6])))
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
