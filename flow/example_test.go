package flow_test

import (
	"encoding/binary"
	"fmt"
	"net/netip"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
)

// udpFrame is an Ethernet/IPv4/UDP frame from src:sport to dst:dport with an 8-byte payload.
func udpFrame(src, dst string, sport, dport uint16) []byte {
	f := make([]byte, 14+20+8+8)
	binary.BigEndian.PutUint16(f[12:], flow.EtherTypeIPv4)
	ip := f[14:]
	ip[0], ip[8], ip[9] = 0x45, 64, 17
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	s, d := netip.MustParseAddr(src).As4(), netip.MustParseAddr(dst).As4()
	copy(ip[12:], s[:])
	copy(ip[16:], d[:])
	binary.BigEndian.PutUint16(ip[20:], sport)
	binary.BigEndian.PutUint16(ip[22:], dport)
	binary.BigEndian.PutUint16(ip[24:], 16)
	return f
}

// A port's RX flows, compiled into a Table, steer frames to queues the way the XDP program
// and the NIC do; Classify is the Go reference of that decision. Flow 10 spreads one UDP
// port over queues 0 and 1 by Toeplitz RSS (flow-affine: one 4-tuple always lands on the
// same queue); flow 20 sends another port to queue 2; with flow isolation, anything else
// goes to the kernel (pass).
func ExampleTable_Classify() {
	queueIDs := []int{0, 1, 2} // the port's RX queue ids, in configuration order
	flows := []config.Flow{
		{Name: "rss", ID: 10, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0, 1}}},
			Match: config.Match{UDPDst: config.PortRange{Lo: 5000, Hi: 5000}}},
		{Name: "control", ID: 20, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{2}}},
			Match: config.Match{UDPDst: config.PortRange{Lo: 6000, Hi: 6099}}},
	}
	t := &flow.Table{Isolation: true}
	for i := range flows {
		r, err := flow.Compile(nil, fmt.Sprintf("flows[%d]", i), &flows[i], queueIDs, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		t.Slots = append(t.Slots, r)
	}
	for _, f := range [][]byte{
		udpFrame("66.9.149.187", "161.142.100.80", 2794, 5000),
		udpFrame("38.27.205.30", "209.142.163.6", 48228, 5000),
		udpFrame("10.0.0.1", "10.0.0.2", 4000, 6042),
		udpFrame("10.0.0.1", "10.0.0.2", 4000, 53),
	} {
		v := t.Classify(f)
		fmt.Printf("to port %d: %s queue %d flow %d\n", binary.BigEndian.Uint16(f[36:]), v.Action, v.Queue, v.FlowID)
	}
	// Output:
	// to port 5000: steer queue 0 flow 10
	// to port 5000: steer queue 1 flow 10
	// to port 6042: steer queue 2 flow 20
	// to port 53: pass queue 0 flow 0
}

// A flow that cannot be compiled says which flow and what is wrong with it.
func ExampleCompile_errors() {
	queueIDs := []int{0, 1}
	for _, f := range []config.Flow{
		{Name: "to_nowhere", ID: 1, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{7}}},
			Match: config.Match{UDPDst: config.PortRange{Lo: 5000, Hi: 5000}}},
		{Name: "no_action", ID: 2, Match: config.Match{UDPDst: config.PortRange{Lo: 5000, Hi: 5000}}},
		{Name: "two_classes", ID: 3, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0}}},
			Match: config.Match{UDPDst: config.PortRange{Lo: 5000, Hi: 5000}, ECPRI: &config.ECPRIMatch{}}},
	} {
		_, err := flow.Compile(nil, "rx.flows["+f.Name+"]", &f, queueIDs, nil)
		fmt.Println(err)
	}
	// Output:
	// rx.flows[to_nowhere].actions[0]: queue id 7 is not an RX queue of this interface (have [0 1])
	// rx.flows[no_action].actions: a flow needs at least one action
	// rx.flows[two_classes].match.ecpri: an eCPRI match cannot be combined with UDP/IPv4 or flex item match fields
}

// Tuple.Hash is the Toeplitz RSS hash NICs compute over the IPv4/UDP 4-tuple; with the
// default key it gives the values of Microsoft's RSS verification table, and RSSIndex maps a
// hash onto the queues of a flow the way the indirection table does.
func ExampleTuple_Hash() {
	tu := flow.Tuple{
		Src: netip.MustParseAddr("66.9.149.187"), SrcPort: 2794,
		Dst: netip.MustParseAddr("161.142.100.80"), DstPort: 1766,
	}
	h := tu.Hash(flow.DefaultRSSKey[:])
	fmt.Printf("%#x → queue %d of 4\n", h, flow.RSSIndex(h, 4))
	// Output:
	// 0x51ccc178 → queue 0 of 4
}
