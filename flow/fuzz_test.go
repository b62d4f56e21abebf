package flow_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/flow/internal/frametest"
)

// FuzzClassify: the flow model and the reference parser on any frame under a random rule
// table: no panic, a verdict that names a rule of the table and one of its queues, bytes
// after the outer IPv4 packet (past tot_len) never change the verdict, and the software
// transforms stay inside the frame. Seeds: testdata/fuzz/FuzzClassify.
func FuzzClassify(f *testing.F) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 16; i++ {
		f.Add(frametest.RandFrame(r), uint64(i))
	}
	for i := 0; i < 4; i++ { // IPv6, with and without a VLAN tag
		f.Add(frametest.Eth(flow.EtherTypeIPv6, frametest.RandUDPIPv6(r)), uint64(100+i))
		f.Add(frametest.Eth(flow.EtherTypeVLAN, append([]byte{0, 9, 0x86, 0xdd}, frametest.RandUDPIPv6(r)...)), uint64(200+i))
	}
	f.Fuzz(func(t *testing.T, frame []byte, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 3))
		nq := 1 + r.IntN(8)
		var flows []config.Flow
		for i := 0; i < 1+r.IntN(8); i++ {
			flows = append(flows, frametest.RandRule(r, 1+i, nq, frametest.Flex))
		}
		tb := &flow.Table{Slots: frametest.Compile(t, flows, nq), Isolation: r.IntN(2) == 0, DefaultQueue: r.IntN(nq), DropAll: r.IntN(6) == 0}
		v := tb.Classify(frame)
		if v.Rule >= len(tb.Slots) || v.Rule < -1 {
			t.Fatalf("verdict names rule %d of %d", v.Rule, len(tb.Slots))
		}
		if v.Rule >= 0 {
			rule := tb.Slots[v.Rule]
			found := false
			for _, q := range rule.Queues {
				found = found || q == v.Queue
			}
			if !found || v.FlowID != rule.FlowID {
				t.Fatalf("verdict %+v does not follow rule %+v", v, rule)
			}
		}
		// Bytes past an untagged IPv4 packet's tot_len are not part of it.
		if len(frame) >= 14+20 && binary.BigEndian.Uint16(frame[12:]) == flow.EtherTypeIPv4 {
			end := 14 + int(binary.BigEndian.Uint16(frame[16:]))
			// (Only when tot_len covers the header: otherwise the header's own bytes, tot_len
			// among them, lie past it.)
			if end < len(frame) && end >= 14+int(frame[14]&0x0f)*4 && end >= 14+20 {
				g := append([]byte(nil), frame...)
				for i := end; i < len(g); i++ {
					g[i] ^= 0xa5
				}
				if w := tb.Classify(g); w != v {
					t.Fatalf("bytes past tot_len %d changed the verdict: %+v → %+v", end-14, v, w)
				}
				if w := tb.Classify(frame[:end]); w != v {
					t.Fatalf("cutting the frame at tot_len changed the verdict: %+v → %+v", v, w)
				}
			}
		}
		// Bytes past an untagged IPv6 packet's payload length are not part of it either.
		if len(frame) >= 14+40 && binary.BigEndian.Uint16(frame[12:]) == flow.EtherTypeIPv6 && frame[14]>>4 == 6 {
			end := 14 + 40 + int(binary.BigEndian.Uint16(frame[18:]))
			if end < len(frame) {
				g := append([]byte(nil), frame...)
				for i := end; i < len(g); i++ {
					g[i] ^= 0x5a
				}
				if w := tb.Classify(g); w != v {
					t.Fatalf("bytes past the IPv6 payload length %d changed the verdict: %+v → %+v", end-54, v, w)
				}
			}
		}
		for _, k := range []flow.Decap{flow.DecapVXLAN, flow.DecapGRE, flow.DecapNVGRE} {
			g := append([]byte(nil), frame...)
			if s, l, ok := flow.Decapsulate(g, k); ok && (s < 0 || l < 0 || s+l > len(g)) {
				t.Fatalf("flow.Decapsulate(%v) = %d+%d of %d bytes", k, s, l, len(g))
			}
		}
		g := append([]byte(nil), frame...)
		if sh, ok := flow.PopVLAN(g); ok && (sh < 0 || sh > len(g)) {
			t.Fatalf("flow.PopVLAN shift %d of %d bytes", sh, len(g))
		}
	})
}
