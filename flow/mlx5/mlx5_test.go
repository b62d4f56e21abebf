package mlx5_test

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/flow/internal/frametest"
	flowmlx5 "github.com/daqiri-go/daqiri/flow/mlx5"
)

const nq = 4

// randRules makes n random rules that Check accepts; the ones it refuses must be refused
// for ErrNotExpressible.
func randRules(t *testing.T, r *rand.Rand, n int) []*flow.Rule {
	t.Helper()
	var out []*flow.Rule
	for tries := 0; len(out) < n && tries < 50*n; tries++ {
		f := frametest.RandRule(r, 1+r.IntN(1000), nq, frametest.Flex)
		rule := frametest.Compile(t, []config.Flow{f}, nq)[0]
		if err := flowmlx5.Check(rule); err != nil {
			if !errors.Is(err, flowmlx5.ErrNotExpressible) {
				t.Fatalf("Check(%+v): %v, not ErrNotExpressible", f, err)
			}
			continue
		}
		out = append(out, rule)
	}
	return out
}

// verdictOK says whether what the device did with a frame is what the reference decided.
func verdictOK(v flow.Verdict, g got) bool {
	switch v.Action {
	case flow.ActionSteer:
		return g.queue == v.Queue && g.tag == v.FlowID&0xffffff && !g.dropped && !g.missed
	case flow.ActionDrop:
		return g.queue < 0 && g.dropped
	default: // pass: the NIC's tables do not take it (on the model, a steering miss)
		return g.queue < 0 && g.missed
	}
}

// TestPropertyAgainstClassify: random rule tables compiled into the model's flow tables,
// random intact frames through the model's receive path, verdict for verdict (queue, flow
// id, drop, pass) against flow.Table.Classify — the RSS queue included, so the RQT and the
// Toeplitz TIR pick the queue flow.RSSIndex picks. Damaged frames (truncated, bad IHL,
// short tot_len) are run too: each is received, dropped or missed exactly once, and the
// agreement is logged (the model's parser reads to the frame's end, flow's to tot_len).
func TestPropertyAgainstClassify(t *testing.T) {
	tables, frames := 40, 400
	if testing.Short() {
		tables, frames = 4, 100
	}
	var steered, dropped, passed, diverged int
	// Frames a flex parser rule decided (flex.go): by class, so the test shows the
	// misc_parameters_4 sample matches were exercised, not just compiled.
	sampled := map[string]int{}
	for seed := range tables {
		r := rand.New(rand.NewPCG(uint64(seed), 0x5eed))
		rig := newRig(t, nq)
		rules := randRules(t, r, 1+r.IntN(12))
		if lr := rand.New(rand.NewPCG(uint64(seed), 0x1e4)); lr.IntN(2) == 0 {
			// An ipv4_len rule for a length RandUDPIPv4 makes often (no options: 28 +
			// payload), first, so that frames of that length meet it. Its own source
			// keeps r's sequence (the tables and frames) as it was.
			n := uint16(28 + lr.IntN(48))
			f := config.Flow{Name: "len", ID: 1 + lr.IntN(1000), Match: config.Match{IPv4Len: n}, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{lr.IntN(nq)}}}}
			rules = append(frametest.Compile(t, []config.Flow{f}, nq), rules...)
		}
		p := flowmlx5.Params{RQNs: rig.rqns, TD: rig.td, Isolation: r.IntN(2) == 0, DefaultQueue: r.IntN(nq), DropAll: r.IntN(6) == 0, Rules: rules}
		st, err := flowmlx5.New(rig.ch, p)
		if err != nil {
			t.Fatalf("seed %d: New: %v", seed, err)
		}
		tb := st.Table()
		for i := range frames {
			f := frametest.RandIntactFrame(r)
			v := tb.Classify(f)
			g := rig.receive(f)
			if !verdictOK(v, g) && vxlanWithoutI(f) {
				diverged++ // documented: VNI 0 rules take UDP/4789 frames without the VXLAN I flag
				continue
			}
			if !verdictOK(v, g) {
				t.Fatalf("seed %d frame %d % x:\nreference %+v\ndevice queue %d tag %d dropped %v missed %v\nrules: %s", seed, i, f, v, g.queue, g.tag, g.dropped, g.missed, describe(tb))
			}
			if v.Rule >= 0 {
				if c := sampleClass(tb.Slots[v.Rule]); c != "" {
					sampled[c]++
				}
			}
			switch v.Action {
			case flow.ActionSteer:
				steered++
			case flow.ActionDrop:
				dropped++
			default:
				passed++
			}
		}
		// Dynamic changes: clear some slots, set new rules in free and used ones, flip
		// drop-all; the installed table (Steering.Table) is again the reference.
		for range 1 + r.IntN(4) {
			slot := r.IntN(16)
			if r.IntN(3) == 0 {
				if err := st.Clear(slot); err != nil {
					t.Fatalf("seed %d: Clear(%d): %v", seed, slot, err)
				}
			} else if nr := randRules(t, r, 1); len(nr) == 1 {
				if err := st.Set(slot, nr[0]); err != nil {
					t.Fatalf("seed %d: Set(%d): %v", seed, slot, err)
				}
			}
		}
		if r.IntN(4) == 0 {
			if err := st.SetDropAll(!p.DropAll); err != nil {
				t.Fatal(err)
			}
		}
		tb = st.Table()
		for i := range frames / 2 {
			f := frametest.RandIntactFrame(r)
			v := tb.Classify(f)
			g := rig.receive(f)
			if !verdictOK(v, g) && vxlanWithoutI(f) {
				diverged++
				continue
			}
			if !verdictOK(v, g) {
				t.Fatalf("seed %d frame %d after changes % x:\nreference %+v\ndevice queue %d tag %d dropped %v missed %v\nrules: %s", seed, i, f, v, g.queue, g.tag, g.dropped, g.missed, describe(tb))
			}
		}
		agree := 0
		for range frames / 2 {
			f := frametest.RandFrame(r)
			v := tb.Classify(f)
			g := rig.receive(f)
			outcomes := 0
			for _, b := range []bool{g.queue >= 0, g.dropped, g.missed} {
				if b {
					outcomes++
				}
			}
			if outcomes != 1 {
				t.Fatalf("seed %d damaged frame % x: %d outcomes", seed, f, outcomes)
			}
			if verdictOK(v, g) {
				agree++
			}
		}
		t.Logf("seed %d: %d rules, damaged frames agreeing with the reference: %d/%d", seed, len(rules), agree, frames/2)
		if err := st.Close(); err != nil {
			t.Fatalf("seed %d: Close: %v", seed, err)
		}
		if n := rig.ch.alive(); n != 0 {
			t.Fatalf("seed %d: %d objects left after Close", seed, n)
		}
	}
	t.Logf("intact frames: %d steered, %d dropped, %d passed; %d UDP/4789 frames without the VXLAN I flag taken by VNI 0 rules (documented divergence)", steered, dropped, passed, diverged)
	if steered == 0 || dropped == 0 || passed == 0 {
		t.Fatal("the random tables did not exercise steer, drop and pass")
	}
	t.Logf("intact frames decided by flex parser matches: %v", sampled)
	for _, c := range []string{"flex-item", "eCPRI msg_type", "eCPRI pc_id", "ipv4_len"} {
		if sampled[c] == 0 && !testing.Short() { // -short's 4 tables may meet none of a class
			t.Errorf("no intact frame was decided by a %s rule", c)
		}
	}
}

// sampleClass names the flex parser match a rule needs ("" for none).
func sampleClass(r *flow.Rule) string {
	switch {
	case r.Flex != nil:
		return "flex-item"
	case r.ECPRI != nil && r.ECPRI.PCID != nil:
		return "eCPRI pc_id"
	case r.ECPRI != nil && r.ECPRI.MsgType != nil:
		return "eCPRI msg_type"
	case r.IPv4Len != 0:
		return "ipv4_len"
	}
	return ""
}

// vxlanWithoutI: an IPv4/UDP frame (up to two VLAN tags) to port 4789 that flow does not
// take as VXLAN (no I flag, or no room for the VXLAN header and an inner Ethernet header),
// which the NIC's vxlan_vni = 0 match cannot tell from a VXLAN frame with VNI 0.
func vxlanWithoutI(f []byte) bool {
	if len(f) < 14 {
		return false
	}
	l3, et := 14, binary.BigEndian.Uint16(f[12:])
	for k := 0; k < 2 && (et == flow.EtherTypeVLAN || et == flow.EtherTypeQinQ) && len(f) >= l3+4; k++ {
		et = binary.BigEndian.Uint16(f[l3+2:])
		l3 += 4
	}
	if et != flow.EtherTypeIPv4 || len(f) < l3+20 || f[l3+9] != 17 {
		return false
	}
	l4 := l3 + int(f[l3]&0xf)*4
	if len(f) < l4+8 || f[l4+2] != 0x12 || f[l4+3] != 0xb5 {
		return false
	}
	return len(f) < l4+8+8+14 || f[l4+8]&0x08 == 0
}

func describe(tb *flow.Table) string {
	s := ""
	for i, r := range tb.Slots {
		if r != nil {
			s += "\n  " + string(rune('0'+i%10)) + ": " + ruleString(r)
		}
	}
	return s
}

func ruleString(r *flow.Rule) string {
	return fmtRule(r)
}
