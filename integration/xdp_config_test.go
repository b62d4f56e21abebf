package integration

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/netns"
)

// TestXDPBadConfig checks that configurations engine xdp cannot serve fail at Open with an
// error naming the key and the reason.
func TestXDPBadConfig(t *testing.T) {
	p := netns.NewPairWith(t, netns.PairOptions{Queues: 1})
	open := func(c *config.Config) error {
		return p.B.Do(func() error {
			s, err := daqiri.Open(t.Context(), c)
			if err == nil {
				s.Close()
			}
			return err
		})
	}
	for _, c := range []struct {
		name string
		mod  func(c *config.Config)
		want []string
	}{
		// Above the UMEM chunk limit is jumbo mode, where a buffer must hold a whole frame.
		{"jumbo buffers below the MTU's frames", func(c *config.Config) {
			c.MemoryRegions[0].BufSize = 8192
			c.MemoryRegions = append(c.MemoryRegions, config.MemoryRegion{Name: "small", Kind: config.KindHost, NumBufs: 64, BufSize: 1400})
			c.Interfaces[0].RX.Queues = append(c.Interfaces[0].RX.Queues, config.Queue{Name: "q1", ID: 1, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{"small"}})
		}, []string{"memory_regions", "buf_size 1400 but frames at the interface MTU 1500 need 1522"}},
		{"buf_size below it", func(c *config.Config) { c.MemoryRegions[0].BufSize = 1024 }, []string{"memory_regions", "2048 to 4096"}},
		{"no such netdev", func(c *config.Config) { c.Interfaces[0].Address = "nosuchdev0" }, []string{"interfaces[0].address", "nosuchdev0"}},
		{"two segments", func(c *config.Config) {
			c.MemoryRegions = append(c.MemoryRegions, config.MemoryRegion{Name: "d", Kind: config.KindHost, NumBufs: 64, BufSize: 2048})
			c.Interfaces[0].RX.Queues[0].MemoryRegions = []string{"rx0", "d"}
		}, []string{"exactly one memory region"}},
		{"more TX queues than the veth has", func(c *config.Config) {
			c.Interfaces[0].TX = &config.TxConfig{Queues: []config.Queue{
				{Name: "t0", ID: 0, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{"rx0"}},
				{Name: "t1", ID: 1, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{"rx0"}}}}
		}, []string{"tx.queues", "needs 2"}},
	} {
		cfg := rawConfig(xdpIface("rx", p.VethB, 1, nil, true, false))
		c.mod(cfg)
		err := open(cfg)
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %v, want it to mention %q", c.name, err, w)
			}
		}
	}
	// An MTU the buffers cannot hold.
	if err := p.B.Do(func() error {
		_, err := netns.RunIn(p.B, "ip", "link", "set", p.VethB, "mtu", "3000")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := open(rawConfig(xdpIface("rx", p.VethB, 1, nil, true, false))); err == nil || !strings.Contains(err.Error(), "MTU 3000") {
		t.Errorf("MTU 3000 with 2048-byte buffers: %v", err)
	}
}

// TestXDPDirectMode receives through a poll_mode direct queue: the caller's RxBurst reads the
// socket; a second concurrent poller is told ErrNotReady rather than sharing the rings.
func TestXDPDirectMode(t *testing.T) {
	netns.RequireScapy(t)
	p := netns.NewPairWith(t, netns.PairOptions{Queues: 1})
	ifc := xdpIface("rx", p.VethB, 1, []config.Flow{queueFlow("f", 3, config.Match{UDPDst: config.PortRange{Lo: 9000, Hi: 9000}}, 0)}, true, false)
	q := &ifc.RX.Queues[0]
	q.PollMode, q.CPUCore, q.BatchSize, q.TimeoutUs = config.PollDirect, "", 0, 0
	s := openXDP(t, p.B, rawConfig(ifc))
	script := scapyHeader(p) + `
sendp([E()/IP(src=A, dst=B)/UDP(sport=1, dport=9000)/P("d%d" % i) for i in range(50)], iface=IFACE)
`
	var got []rxPkt
	sendWhile(t, p.A, script, func() { got = collect(t, s, 0, 50, 8*time.Second) })
	if len(got) != 50 {
		t.Fatalf("direct queue: %d of 50", len(got))
	}
	for _, g := range got {
		if g.flow != 3 {
			t.Fatalf("flow %d", g.flow)
		}
	}
	if _, err := s.RxBurst(0, 0); !errors.Is(err, daqiri.ErrNotReady) {
		t.Fatalf("empty direct queue: %v", err)
	}
}
