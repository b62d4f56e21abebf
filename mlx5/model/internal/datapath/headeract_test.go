package datapath

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestHeaderActions: flow entries' header actions change the frame steering delivers —
// VLAN_POP removes the outer tag, VLAN_PUSH inserts flow_context push_vlan after the MAC
// addresses, DECAP leaves a VXLAN or NVGRE packet's inner Ethernet frame, an L3_TUNNEL_TO_L2
// reformat puts the context's Ethernet header in front of a GRE packet's inner IP packet
// (whose headers the parser now reads); and a disconnected root (ClearRoot) makes RX frames
// miss again. A frame that met a header action is marked rewritten (the RX decision cache
// does not keep its decision), one that met none is not.
func TestHeaderActions(t *testing.T) {
	e := newEnv(t)
	n := e.nic
	inner := udpFrame([4]byte{10, 0, 0, 1}, [4]byte{10, 0, 0, 2}, 1000, 2000, 10, 1)
	ft := e.id()
	must(t, n.CreateFlowTable(FlowTableParams{Type: TableNICRX, ID: ft, LogSize: 4}))
	g := e.id()
	must(t, n.CreateFlowGroup(FlowGroupParams{Type: TableNICRX, Table: ft, ID: g, Start: 0, End: 0}))
	rq := e.newRQ(e.newCQ(4, nil), 2, 256, 0, 0)
	tir := e.id()
	must(t, n.CreateTIR(TIRParams{TIRN: tir, InlineRQ: rq.rqn}))
	must(t, n.SetRoot(TableNICRX, ft))
	entry := func(action, reformat, push uint32) {
		must(t, n.SetFTE(FTEParams{Type: TableNICRX, Table: ft, Group: g, Index: 0, Action: ActionFwdDest | action, Reformat: reformat, PushVLAN: push, Dests: []Dest{{Type: DestTIR, ID: tir}}}))
	}
	outerIP := func(proto uint8, payload []byte) []byte {
		f := make([]byte, 34, 34+len(payload))
		copy(f, inner[:12])
		binary.BigEndian.PutUint16(f[12:], etherIPv4)
		f[14], f[22], f[23] = 0x45, 64, proto
		binary.BigEndian.PutUint16(f[16:], uint16(20+len(payload)))
		copy(f[26:], []byte{172, 16, 0, 1, 172, 16, 0, 2})
		return append(f, payload...)
	}
	tagged := append(append(append([]byte{}, inner[:12]...), 0x81, 0, 0x00, 0x07), inner[12:]...)
	vxlan := outerIP(protoUDP, append([]byte{0xc0, 0, 0x12, 0xb5, 0, 0, 0, 0, 0x08, 0, 0, 0, 0, 0, 5, 0}, inner...))
	nvgre := outerIP(protoGRE, append([]byte{0x20, 0, 0x65, 0x58, 0, 0, 7, 0}, inner...))
	gre := outerIP(protoGRE, append([]byte{0, 0, 0x08, 0x00}, inner[14:]...))
	newL2 := append(make([]byte, 12), 0x08, 0x00)
	rf := e.id()
	must(t, n.AllocReformat(ReformatParams{ID: rf, Type: 3, Data: newL2}))
	for _, c := range []struct {
		name           string
		action, rf, vl uint32
		in, want       []byte
	}{
		{"vlan pop", ActionVLANPop, 0, 0, tagged, inner},
		{"vlan push", ActionVLANPush, 0, 0x81000007, inner, tagged},
		{"vxlan decap", ActionDecap, 0, 0, vxlan, inner},
		{"nvgre decap", ActionDecap, 0, 0, nvgre, inner},
		{"gre decap", ActionReformat, rf, 0, gre, append(bytes.Clone(newL2), inner[14:]...)},
		{"decap of a frame that is no tunnel", ActionDecap, 0, 0, inner, inner},
		{"pop of an untagged frame", ActionVLANPop, 0, 0, inner, inner},
	} {
		entry(c.action, c.rf, c.vl)
		v := n.steer(TableNICRX, bytes.Clone(c.in))
		if !v.haveTIR || v.tir != tir {
			t.Fatalf("%s: not steered to the TIR: %+v", c.name, v)
		}
		if !bytes.Equal(v.frame, c.want) {
			t.Errorf("%s:\n got % x\nwant % x", c.name, v.frame, c.want)
		}
		if !v.rewritten {
			t.Errorf("%s: not marked rewritten", c.name)
		}
	}
	entry(0, 0, 0)
	if v := n.steer(TableNICRX, bytes.Clone(tagged)); !v.haveTIR || v.rewritten {
		t.Errorf("no header action: %+v, want steered to the TIR and not rewritten", v)
	}
	if p := parse(gre); !p.tunneled || !p.innerL3 || p.inner.dport != 2000 {
		t.Errorf("GRE carrying IPv4: inner headers not parsed: %+v", p.inner)
	}
	must(t, n.ClearRoot(TableNICRX))
	if v := n.steer(TableNICRX, inner); !v.miss || !v.drop {
		t.Errorf("after ClearRoot: %+v, want a miss", v)
	}
}
