package integration

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/netns"
)

// xdpIface is a raw interface on netdev with nq RX queues (ids 0..nq-1) on region "rx<i>".
func xdpIface(name, netdev string, nq int, flows []config.Flow, iso bool, sharedRegion bool) config.Interface {
	ifc := config.Interface{Name: name, Address: netdev, RX: &config.RxConfig{FlowIsolation: iso, Flows: flows}}
	for i := 0; i < nq; i++ {
		mr := fmt.Sprintf("rx%d", i)
		if sharedRegion {
			mr = "rx0"
		}
		ifc.RX.Queues = append(ifc.RX.Queues, config.Queue{Name: fmt.Sprintf("q%d", i), ID: i, CPUCore: "0", BatchSize: 32, TimeoutUs: 200, MemoryRegions: []string{mr}})
	}
	return ifc
}

func rawConfig(ifcs ...config.Interface) *config.Config {
	// 1,024 burst buffers: a peer's frames arrive one at a time (scapy), each in a burst of
	// its own after the burst timeout, so 64 ran out whenever a loaded CI host kept the
	// collector off the CPU for a moment (no_burst_buffers drops in TestXDPRuntimeQueues).
	c := &config.Config{Version: 1, StreamType: config.StreamRaw, LogLevel: "error", RxMetaBuffers: 1024, TxMetaBuffers: 64}
	regions := map[string]bool{}
	for _, ifc := range ifcs {
		var qs []config.Queue
		if ifc.RX != nil {
			qs = append(qs, ifc.RX.Queues...)
		}
		if ifc.TX != nil {
			qs = append(qs, ifc.TX.Queues...)
		}
		for _, q := range qs {
			for _, m := range q.MemoryRegions {
				if !regions[m] {
					regions[m] = true
					c.MemoryRegions = append(c.MemoryRegions, config.MemoryRegion{Name: m, Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 1024, BufSize: 2048})
				}
			}
		}
	}
	c.Interfaces = ifcs
	return c
}

func queueFlow(name string, id int, m config.Match, queues ...int) config.Flow {
	return config.Flow{Name: name, ID: id, Match: m, Actions: []config.Action{{Type: config.ActionQueue, Queues: queues}}}
}

// sendWhile runs a scapy script in ns while fn collects, and fails the test on a script error.
func sendWhile(t *testing.T, ns *netns.NS, script string, fn func()) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		out, err := ns.Scapy(script)
		if err != nil {
			err = fmt.Errorf("%w: %s", err, out)
		}
		errc <- err
	}()
	fn()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// rxPkt is one received packet.
type rxPkt struct {
	queue int
	flow  uint32
	data  []byte
}

// collect polls every RX queue of port until want packets arrived or the deadline passed
// (quiet for settle after reaching want, to catch extras).
func collect(t *testing.T, s *daqiri.Session, port, want int, deadline time.Duration) []rxPkt {
	t.Helper()
	return collectQuiet(t, s, port, want, deadline, 0)
}

// collectQuiet is collect that also stops once nothing arrived for quiet (0: never).
func collectQuiet(t *testing.T, s *daqiri.Session, port, want int, deadline, quiet time.Duration) []rxPkt {
	t.Helper()
	var got []rxPkt
	end := time.Now().Add(deadline)
	var settleEnd time.Time
	lastProgress := time.Now()
	for time.Now().Before(end) {
		if quiet > 0 && len(got) > 0 && time.Since(lastProgress) > quiet {
			break
		}
		progress := false
		for _, q := range s.RxQueueIDs(port) {
			b, err := s.RxBurst(port, q)
			if errors.Is(err, daqiri.ErrNotReady) {
				continue
			}
			if err != nil {
				t.Fatalf("RxBurst(%d, %d): %v", port, q, err)
			}
			for i := 0; i < b.Len(); i++ {
				got = append(got, rxPkt{queue: q, flow: b.FlowID(i), data: append([]byte(nil), b.Packet(i)...)})
			}
			b.Free()
			progress = true
			lastProgress = time.Now()
		}
		if len(got) >= want {
			if settleEnd.IsZero() {
				settleEnd = time.Now().Add(100 * time.Millisecond)
			} else if time.Now().After(settleEnd) {
				break
			}
		}
		if !progress {
			time.Sleep(200 * time.Microsecond)
		}
	}
	return got
}

// tag finds the ASCII tag "<tag:...>" scapy put in a payload.
func tag(data []byte) string {
	s := string(data)
	i := strings.Index(s, "<tag:")
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(s[i:], '>')
	if j < 0 {
		return ""
	}
	return s[i+5 : i+j]
}

// kernelUDP listens on a UDP port inside ns and counts datagrams until stopped.
type kernelUDP struct {
	c    *net.UDPConn
	tags chan string
}

func listenUDP(t *testing.T, ns *netns.NS, addr netip.AddrPort) *kernelUDP {
	t.Helper()
	k := &kernelUDP{tags: make(chan string, 4096)}
	if err := ns.Do(func() error {
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(addr))
		if err == nil {
			c.SetReadBuffer(8 << 20) // a loaded machine must not drop what the test counts
		}
		k.c = c
		return err
	}); err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, _, err := k.c.ReadFromUDP(buf)
			if err != nil {
				close(k.tags)
				return
			}
			k.tags <- tag(buf[:n])
		}
	}()
	t.Cleanup(func() { k.c.Close() })
	return k
}

// drain returns what the kernel socket got within d.
func (k *kernelUDP) drain(d time.Duration) []string {
	var out []string
	end := time.After(d)
	for {
		select {
		case s, ok := <-k.tags:
			if !ok {
				return out
			}
			out = append(out, s)
		case <-end:
			return out
		}
	}
}

func openXDP(t *testing.T, ns *netns.NS, cfg *config.Config) *daqiri.Session {
	t.Helper()
	var s *daqiri.Session
	if err := ns.Do(func() (err error) {
		s, err = daqiri.Open(t.Context(), cfg)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

// scapyHeader is Python that defines send helpers for the tests' scripts: E(...) builds an
// Ethernet frame from A's veth to B's, P(tag) a payload carrying a tag.
func scapyHeader(p *netns.Pair) string {
	return fmt.Sprintf(`
IFACE = %q
SRC_MAC, DST_MAC = %q, %q
A, B = %q, %q
def E(): return Ether(src=SRC_MAC, dst=DST_MAC)
def P(t): return Raw(load=("<tag:%%s>" %% t).encode() + b"x" * 16)
`, p.VethA, p.MACA.String(), p.MACB.String(), p.AddrA.String(), p.AddrB.String())
}
