package xdp

import (
	"encoding/binary"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"

	"github.com/daqiri-go/daqiri/flow"
)

// The program, stage by stage. Registers: R6 the context (the scratch value during
// matching), R7 the parse offset (the rule during matching), stack slots as laid out in
// xdp.go; every stage bounds-checks against data_end before each load, as the verifier
// requires.

// builder assembles instructions with symbolic labels.
type builder struct {
	insns   asm.Instructions
	pending []string
	labels  int // for fresh labels inside stages emitted more than once
}

// fresh returns a label no other call returns.
func (b *builder) fresh(name string) string {
	b.labels++
	return fmt.Sprintf("%s_%d", name, b.labels)
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
// after it, reading nothing past the packet: the header must fit in its tot_len and the UDP
// header must lie within it (and, for an inner header, within the outer packet, whose end the
// outer parse leaves in sOEnd). The outer parse also records the packet's end and whether it
// is a fragment. R7 ends as the L4 offset when the header was complete. Jumps to done when
// finished, whatever it found. Uses R0, R1, R4, R5, R8.
func ipv4(b *builder, base int16, done string) {
	outer := base == sOut
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
	)
	if !outer {
		// The inner header lies within the outer packet.
		b.emit(
			ldStack(asm.R0, sOEnd),
			asm.Mov.Reg(asm.R5, asm.R7),
			asm.Add.Reg(asm.R5, asm.R1),
			asm.JGT.Reg(asm.R5, asm.R0, done),
		)
	}
	b.emit(
		// R8 = the packet's end offset (header offset + tot_len); tot_len below the header
		// length is no IPv4 packet.
		asm.LoadMem(asm.R5, asm.R4, 2, asm.Half),
		be(asm.R5, asm.Half),
		asm.JLT.Reg(asm.R5, asm.R1, done),
		stStack(base+tLen, asm.R5),
		asm.Mov.Reg(asm.R8, asm.R7),
		asm.Add.Reg(asm.R8, asm.R5),
	)
	if outer {
		b.emit(stStack(sOEnd, asm.R8))
	} else {
		// An inner packet ends with the outer one at the latest.
		ok := b.fresh("ipv4_end_ok")
		b.emit(
			ldStack(asm.R0, sOEnd),
			asm.JLE.Reg(asm.R8, asm.R0, ok),
			asm.Mov.Reg(asm.R8, asm.R0),
		)
		b.label(ok)
	}
	b.emit(
		stStackImm(base+tFlags, 1),
		asm.LoadMem(asm.R5, asm.R4, 12, asm.Word),
		stStack(base+tSip, asm.R5),
		asm.LoadMem(asm.R5, asm.R4, 16, asm.Word),
		stStack(base+tDip, asm.R5),
		asm.LoadMem(asm.R5, asm.R4, 6, asm.Half),
		be(asm.R5, asm.Half),
	)
	if outer {
		// MF or a fragment offset: a fragment (the first one still has its L4 header).
		b.emit(
			asm.Mov.Reg(asm.R0, asm.R5),
			asm.And.Imm(asm.R0, 0x3fff),
			asm.JEq.Imm(asm.R0, 0, "ipv4_not_frag"),
			stStackImm(sOFrag, 1),
		)
		b.label("ipv4_not_frag")
	}
	b.emit(
		asm.And.Imm(asm.R5, 0x1fff),
		asm.JNE.Imm(asm.R5, 0, done), // a later fragment: no L4 header
		asm.LoadMem(asm.R5, asm.R4, 9, asm.Byte),
		stStack(base+tProto, asm.R5),
		asm.Add.Reg(asm.R7, asm.R1),
		stStack(base+tL4, asm.R7),
		asm.JNE.Imm(asm.R5, protoUDP, done),
		// The UDP header lies within the packet and within the frame.
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, 8),
		asm.JGT.Reg(asm.R1, asm.R8, done),
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

// instructions builds the XDP program against the maps, one stage after another in program
// order; stages reach each other through the labels named in their comments.
func instructions(m *maps) asm.Instructions {
	b := &builder{}
	emitPrologue(b, m)
	emitEthernet(b)
	emitIPv6(b)
	emitECPRI(b)
	emitVXLAN(b)
	emitGRE(b)
	emitScratch(b, m)
	emitRuleLoop(b, m)
	emitSteer(b, m)
	emitDeliver(b, m)
	emitUnmatched(b, m)
	return b.insns
}

// emitPrologue zeroes the stack slots the parse fills, saves the context in R6 and reads
// the VXLAN port from the configuration (no configuration: pass the frame to the kernel).
func emitPrologue(b *builder, m *maps) {
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
}

// emitEthernet parses the Ethernet header and up to two VLAN tags (R7 ends at the
// EtherType's payload), then dispatches: eCPRI, or the outer IPv4/UDP header into the outer
// tuple; anything else is parsed.
func emitEthernet(b *builder) {
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
		asm.JEq.Imm(asm.R5, flow.EtherTypeIPv6, "ipv6"),
		asm.JNE.Imm(asm.R5, flow.EtherTypeIPv4, "parsed"),
	)
	ipv4(b, sOut, "outer_done")
}

// emitIPv6 parses the outer IPv6 fixed header at R7: the addresses into sV6Src/sV6Dst, the
// next header, and a UDP header right after it when it lies within the payload length and the
// frame (outer tuple flags 4, or 6 with UDP). No extension headers, no tunnels.
func emitIPv6(b *builder) {
	b.label("ipv6")
	loadPkt(b)
	b.emit(
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Reg(asm.R4, asm.R7),
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Imm(asm.R1, 40),
		asm.JGT.Reg(asm.R1, asm.R3, "parsed"),
		asm.LoadMem(asm.R1, asm.R4, 0, asm.Byte),
		asm.RSh.Imm(asm.R1, 4),
		asm.JNE.Imm(asm.R1, 6, "parsed"),
		stStackImm(sOut+tFlags, 4),
	)
	for k := int16(0); k < 16; k += 4 {
		b.emit(
			asm.LoadMem(asm.R5, asm.R4, 8+k, asm.Word),
			stStack(sV6Src+k, asm.R5),
			asm.LoadMem(asm.R5, asm.R4, 24+k, asm.Word),
			stStack(sV6Dst+k, asm.R5),
		)
	}
	b.emit(
		// R8 = the packet's end offset: header offset + 40 + payload length.
		asm.LoadMem(asm.R5, asm.R4, 4, asm.Half),
		be(asm.R5, asm.Half),
		asm.Mov.Reg(asm.R8, asm.R7),
		asm.Add.Imm(asm.R8, 40),
		asm.Add.Reg(asm.R8, asm.R5),
		asm.LoadMem(asm.R5, asm.R4, 6, asm.Byte),
		stStack(sOut+tProto, asm.R5),
		asm.Add.Imm(asm.R7, 40),
		stStack(sOut+tL4, asm.R7),
		asm.JNE.Imm(asm.R5, protoUDP, "parsed"),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, 8),
		asm.JGT.Reg(asm.R1, asm.R8, "parsed"),
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Reg(asm.R4, asm.R7),
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Imm(asm.R1, 8),
		asm.JGT.Reg(asm.R1, asm.R3, "parsed"),
		asm.LoadMem(asm.R1, asm.R4, 0, asm.Half),
		be(asm.R1, asm.Half),
		stStack(sOut+tSport, asm.R1),
		asm.LoadMem(asm.R1, asm.R4, 2, asm.Half),
		be(asm.R1, asm.Half),
		stStack(sOut+tDport, asm.R1),
		stStackImm(sOut+tFlags, 6),
		asm.Ja.Label("parsed"),
	)
}

// emitECPRI parses the eCPRI common header: revision/flags, message type, payload size,
// then PC_ID/RTC_ID.
func emitECPRI(b *builder) {
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
}

// emitVXLAN looks behind the outer IPv4 header for tunnels (GRE goes to emitGRE's label)
// and parses VXLAN on the configured UDP port: UDP(8) + VXLAN(8) + inner Ethernet(14), the
// inner IPv4/UDP header into the inner tuple.
func emitVXLAN(b *builder) {
	b.label("outer_done")
	b.emit(
		ldStack(asm.R1, sOut+tFlags),
		asm.JEq.Imm(asm.R1, 0, "parsed"),
		ldStack(asm.R5, sOFrag),
		asm.JNE.Imm(asm.R5, 0, "parsed"), // a fragment's tunnel payload is incomplete
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
		ldStack(asm.R0, sOEnd),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, 30),
		asm.JGT.Reg(asm.R1, asm.R0, "parsed"), // UDP + VXLAN + inner Ethernet within the packet
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
}

// emitGRE parses GRE (inner IPv4 keyed by the GRE protocol) and NVGRE (TNI from the key
// word, inner Ethernet then IPv4) into the inner tuple.
func emitGRE(b *builder) {
	b.label("gre")
	loadPkt(b)
	b.emit(
		asm.Mov.Reg(asm.R4, asm.R2),
		asm.Add.Reg(asm.R4, asm.R7),
		asm.Mov.Reg(asm.R1, asm.R4),
		asm.Add.Imm(asm.R1, 4),
		asm.JGT.Reg(asm.R1, asm.R3, "parsed"),
		ldStack(asm.R0, sOEnd),
		asm.Mov.Reg(asm.R1, asm.R7),
		asm.Add.Imm(asm.R1, 4),
		asm.JGT.Reg(asm.R1, asm.R0, "parsed"),
		asm.LoadMem(asm.R1, asm.R4, 0, asm.Half),
		be(asm.R1, asm.Half),
		// Version (low 3 bits of the flags word) must be 0: version 1 is PPTP's enhanced
		// GRE (RFC 2637), not a tunnel this program decapsulates.
		asm.Mov.Reg(asm.R5, asm.R1),
		asm.And.Imm(asm.R5, 7),
		asm.JNE.Imm(asm.R5, 0, "parsed"),
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
		// The GRE header lies within the outer packet (R1 = its end offset).
		// (R2, the data pointer, is free here: ipv4 reloads it.)
		asm.Mov.Reg(asm.R2, asm.R7),
		asm.Add.Reg(asm.R2, asm.R0),
		ldStack(asm.R1, sOEnd),
		asm.JGT.Reg(asm.R2, asm.R1, "parsed"),
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
		// ... and within the outer packet.
		asm.Mov.Reg(asm.R8, asm.R7),
		asm.Add.Reg(asm.R8, asm.R0),
		asm.Add.Imm(asm.R8, 14),
		ldStack(asm.R2, sOEnd),
		asm.JGT.Reg(asm.R8, asm.R2, "parsed"),
		stStack(sTunKey, asm.R5),
		stStackImm(sTun, int64(flow.DecapNVGRE)),
		asm.LoadMem(asm.R5, asm.R1, 12, asm.Half),
		be(asm.R5, asm.Half),
		asm.JNE.Imm(asm.R5, flow.EtherTypeIPv4, "parsed"),
		asm.Add.Reg(asm.R7, asm.R0),
		asm.Add.Imm(asm.R7, 14),
	)
	ipv4(b, sIn, "parsed")
}

// emitScratch ends the parse ("parsed"). The parse ends in many states (tag or not, tunnel
// kinds, ...) that differ only in the constants on the stack. Copy the results into a per-CPU
// scratch value, which the verifier does not track, and match from there: every parse
// outcome then reaches the rule loop in one and the same verifier state, so the loop is
// verified once, not once per outcome. The configuration is copied next to them; R6 points
// at the scratch value from here to delivery.
func emitScratch(b *builder, m *maps) {
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
}

// emitRuleLoop scans the rule slots (R9 slot, R7 rule, R8 tuple matched against): a slot
// matches when it is valid, its VLAN and tunnel conditions hold (selecting the outer or inner
// tuple) and every field it sets matches; the first match goes to "matched", none to
// "unmatched".
func emitRuleLoop(b *builder, m *maps) {
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
	emitMatchEthernet(b)
	emitMatchIPv4UDP(b)
	emitMatchFlex(b)
	emitMatchECPRI(b)
	b.emit(asm.Ja.Label("matched"))
	b.label("next")
	b.emit(asm.Add.Imm(asm.R9, 1), asm.Ja.Label("loop"))
}

// emitMatchEthernet compares the rule's (R7, flags in R1) MAC addresses with the outer
// Ethernet header, read from the packet (the context is saved at sCtx); a frame shorter than
// an Ethernet header matches no address.
func emitMatchEthernet(b *builder) {
	b.emit(
		asm.Mov.Reg(asm.R0, asm.R1),
		asm.And.Imm(asm.R0, fEthDst|fEthSrc),
		asm.JEq.Imm(asm.R0, 0, "eth_ok"),
		asm.LoadMem(asm.R5, asm.R10, sCtx, asm.DWord),
		asm.LoadMem(asm.R4, asm.R5, 0, asm.Word),
		asm.LoadMem(asm.R5, asm.R5, 4, asm.Word),
		asm.Mov.Reg(asm.R3, asm.R4),
		asm.Add.Imm(asm.R3, 14),
		asm.JGT.Reg(asm.R3, asm.R5, "next"),
	)
	for _, f := range []struct {
		bit    int32
		off    int16
		lo, hi int16
		name   string
	}{{fEthDst, 0, rDmacLo, rDmacHi, "edst"}, {fEthSrc, 6, rSmacLo, rSmacHi, "esrc"}} {
		bitClear(b, asm.R1, f.bit, f.name+"_ok")
		b.emit(
			asm.LoadMem(asm.R3, asm.R4, f.off, asm.Word),
			asm.LoadMem(asm.R5, asm.R7, f.lo, asm.Word),
			asm.JNE.Reg(asm.R3, asm.R5, "next"),
			asm.LoadMem(asm.R3, asm.R4, f.off+4, asm.Half),
			asm.LoadMem(asm.R5, asm.R7, f.hi, asm.Word),
			asm.JNE.Reg(asm.R3, asm.R5, "next"),
		)
		b.label(f.name + "_ok")
	}
	b.label("eth_ok")
	b.emit(asm.Mov.Reg(asm.R0, asm.R0)) // a home for the labels
}

// emitMatchIPv4UDP compares the exact IPv4 fields (source, destination, total length) and
// the UDP port ranges of the rule (R7) with the tuple (R8, flags in R2).
func emitMatchIPv4UDP(b *builder) {
	// IPv6 addresses (outer tuple flag 4; an inner tuple never has it).
	for _, f := range []struct {
		bit    int32
		sf, rf int16
		name   string
	}{{fV6Src, sV6Src, rV6Src, "v6src"}, {fV6Dst, sV6Dst, rV6Dst, "v6dst"}} {
		bitClear(b, asm.R1, f.bit, f.name+"_ok")
		b.emit(
			asm.Mov.Reg(asm.R0, asm.R2),
			asm.And.Imm(asm.R0, 4),
			asm.JEq.Imm(asm.R0, 0, "next"),
		)
		for k := int16(0); k < 16; k += 4 {
			b.emit(
				ldScr(asm.R3, f.sf+k),
				asm.LoadMem(asm.R4, asm.R7, f.rf+k, asm.Word),
				asm.JNE.Reg(asm.R3, asm.R4, "next"),
			)
		}
		b.label(f.name + "_ok")
	}
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
}

// emitMatchFlex compares the flex item: a masked big-endian word at an offset after the
// outer UDP header, read from the packet (the context is saved at sCtx).
func emitMatchFlex(b *builder) {
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
		// The word lies within the outer IPv4 packet, not only within the frame.
		asm.Mov.Reg(asm.R0, asm.R3),
		asm.Add.Imm(asm.R0, 4),
		ldScr(asm.R4, sOEnd),
		asm.JGT.Reg(asm.R0, asm.R4, "next"),
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
}

// emitMatchECPRI compares the eCPRI message type and PC_ID.
func emitMatchECPRI(b *builder) {
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
}

// emitSteer takes the matched rule's flow id and transform bits and picks its queue: the
// only one, or by RSS (Toeplitz over the tuple through the per-byte table in the rss map,
// then the indirection into the rule's queue list).
func emitSteer(b *builder, m *maps) {
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
	type in struct {
		base asm.Register // R8: the tuple; R6: the scratch copy of the stack
		off  int16
	}
	hash := func(src []in) {
		for p, x := range src {
			b.emit(
				asm.LoadMem(asm.R1, x.base, x.off, asm.Byte),
				asm.LSh.Imm(asm.R1, 2),
				asm.Add.Imm(asm.R1, int32(p*1024)),
				asm.Mov.Reg(asm.R2, asm.R0),
				asm.Add.Reg(asm.R2, asm.R1),
				asm.LoadMem(asm.R2, asm.R2, 0, asm.Word),
				asm.Xor.Reg(asm.R9, asm.R2),
			)
		}
	}
	ports := []in{{asm.R8, tSport + hi}, {asm.R8, tSport + lo}, {asm.R8, tDport + hi}, {asm.R8, tDport + lo}}
	b.emit(
		asm.LoadMem(asm.R1, asm.R8, tFlags, asm.Word),
		asm.And.Imm(asm.R1, 4),
		asm.JNE.Imm(asm.R1, 0, "rss6"),
	)
	var v4 []in
	for _, off := range []int16{tSip, tSip + 1, tSip + 2, tSip + 3, tDip, tDip + 1, tDip + 2, tDip + 3} {
		v4 = append(v4, in{asm.R8, off})
	}
	hash(append(v4, ports...))
	b.emit(asm.Ja.Label("rss_done"))
	// IPv6: 16 + 16 address bytes from the scratch copy, then the ports.
	b.label("rss6")
	var v6 []in
	for _, base := range []int16{sV6Src, sV6Dst} {
		for k := int16(0); k < 16; k++ {
			v6 = append(v6, in{asm.R6, base + k - stackLow})
		}
	}
	hash(append(v6, ports...))
	b.label("rss_done")
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
}

// emitDeliver applies drop-all, writes the metadata in front of the frame and redirects it
// into the AF_XDP socket of its arrival queue; no socket or drop-all counts and drops.
func emitDeliver(b *builder, m *maps) {
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
}

// emitUnmatched handles a frame no rule matched: the kernel under flow isolation (counted),
// else the default queue with flow id 0.
func emitUnmatched(b *builder, m *maps) {
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
}
