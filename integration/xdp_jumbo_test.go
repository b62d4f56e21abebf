package integration

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/netns"
)

// jumboPayload is datagram k's payload: its index, then a pattern of its own.
func jumboPayload(k, n int) []byte {
	p := make([]byte, n)
	binary.BigEndian.PutUint32(p, uint32(k))
	for i := 4; i < n; i++ {
		p[i] = byte(k*7 + i)
	}
	return p
}

// TestXDPJumbo: a veth pair at MTU 9000 carries jumbo frames through the xdp engine both
// ways with exact counts. The peer's kernel sends UDP datagrams of 100 to 8972 bytes (frames
// up to 9014 bytes, arriving as up to three AF_XDP buffers gathered into one 9216-byte
// queue buffer); each is received once, whole, with its flow id and a CLOCK_REALTIME
// receive time. Then the engine sends 8000-byte datagrams as chained descriptors and the
// peer's kernel receives every one at full length. The sockets' copy-mode fallback (veth
// offers no zero-copy) is in the port's events.
func TestXDPJumbo(t *testing.T) {
	p := netns.NewPair(t) // MTU 9000
	const rxPort, txPort = 7000, 7001
	ifc := config.Interface{Name: "jumbo", Address: p.VethB,
		RX: &config.RxConfig{FlowIsolation: true, Flows: []config.Flow{queueFlow("j", 42, config.Match{UDPDst: config.PortRange{Lo: rxPort, Hi: rxPort}}, 0)},
			Queues: []config.Queue{{Name: "q0", ID: 0, CPUCore: "0", BatchSize: 32, TimeoutUs: 200, MemoryRegions: []string{"big"}}}},
		TX: &config.TxConfig{Queues: []config.Queue{{Name: "t0", ID: 0, CPUCore: "0", BatchSize: 32, MemoryRegions: []string{"bigtx"}}}}}
	cfg := &config.Config{Version: 1, StreamType: config.StreamRaw, LogLevel: "error", RxMetaBuffers: 64, TxMetaBuffers: 64,
		MemoryRegions: []config.MemoryRegion{
			{Name: "big", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 2048, BufSize: 9216},
			{Name: "bigtx", Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 512, BufSize: 9216}},
		Interfaces: []config.Interface{ifc}}
	s := openXDP(t, p.B, cfg)

	sizes := []int{100, 1400, 3000, 4000, 4100, 6000, 8000, 8972}
	const n = 400
	want := map[int][]byte{}
	lo := time.Now().UnixNano()
	errc := make(chan error, 1)
	go func() {
		errc <- p.A.Do(func() error {
			c, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.AddrB, rxPort)))
			if err != nil {
				return err
			}
			defer c.Close()
			for k := 0; k < n; k++ {
				if _, err := c.Write(jumboPayload(k, sizes[k%len(sizes)])); err != nil {
					return err
				}
				if k%20 == 19 {
					time.Sleep(2 * time.Millisecond) // paced: the test counts, it does not stress
				}
			}
			return nil
		})
	}()
	for k := 0; k < n; k++ {
		want[k] = jumboPayload(k, sizes[k%len(sizes)])
	}
	got := map[int]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		b, err := s.RxBurst(0, 0)
		if errors.Is(err, daqiri.ErrNotReady) {
			time.Sleep(200 * time.Microsecond)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		hi := time.Now().UnixNano()
		for i := 0; i < b.Len(); i++ {
			f := b.Packet(i)
			if len(f) < 14+20+8+4 || b.FlowID(i) != 42 {
				t.Fatalf("frame of %d bytes, flow %d", len(f), b.FlowID(i))
			}
			pl := f[14+20+8:]
			k := int(binary.BigEndian.Uint32(pl))
			if !bytes.Equal(pl, want[k]) || got[k] {
				t.Fatalf("datagram %d: %d bytes (want %d), duplicate %v", k, len(pl), len(want[k]), got[k])
			}
			if ts, err := b.RxTimestamp(i); err != nil || ts < lo || ts > hi {
				t.Fatalf("datagram %d: receive time %d (%v) outside [%d, %d]", k, ts, err, lo, hi)
			}
			got[k] = true
		}
		b.Free()
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	time.Sleep(150 * time.Millisecond)
	st := s.Stats().Ports[0]
	if len(got) != n || st.Rx[0].Packets != n || st.Rx[0].Dropped != 0 {
		t.Fatalf("received %d of %d jumbo datagrams; stats %+v", len(got), n, st)
	}
	if st.Events["afxdp_copy_mode_sockets"] == 0 {
		t.Fatalf("copy-mode fallback not in the port's events: %v", st.Events)
	}

	// TX: 8000-byte datagrams (8042-byte frames, three chained descriptors each).
	var lc *net.UDPConn
	if err := p.A.Do(func() (err error) {
		lc, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(p.AddrA, txPort)))
		if err == nil {
			lc.SetReadBuffer(16 << 20)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	defer lc.Close()
	const m = 200
	for sent := 0; sent < m; {
		b, err := s.TxBurst(0, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < b.Len(); i++ {
			pl := jumboPayload(sent+i, 8000)
			b.SetEthHeader(i, p.MACA, p.MACB)
			b.SetIPv4Header(i, 8+len(pl), 17, p.AddrB, p.AddrA)
			b.SetUDPHeader(i, len(pl), 5555, txPort)
			if err := b.SetUDPPayload(i, pl); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Send(b); err != nil {
			b.Free()
			if errors.Is(err, daqiri.ErrNotReady) {
				time.Sleep(time.Millisecond)
				continue
			}
			t.Fatal(err)
		}
		sent += 10
		time.Sleep(time.Millisecond)
	}
	buf := make([]byte, 65536)
	rcv := map[int]bool{}
	lc.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(rcv) < m {
		k, _, err := lc.ReadFromUDP(buf)
		if err != nil {
			break
		}
		idx := int(binary.BigEndian.Uint32(buf))
		if k != 8000 || !bytes.Equal(buf[:k], jumboPayload(idx, 8000)) || rcv[idx] {
			t.Fatalf("peer got a %d-byte datagram %d (dup %v)", k, idx, rcv[idx])
		}
		rcv[idx] = true
	}
	if len(rcv) != m {
		t.Fatalf("peer kernel received %d of %d jumbo datagrams; stats %+v", len(rcv), m, s.Stats().Ports[0].Tx)
	}
	if tx := s.Stats().Ports[0].Tx[0]; tx.Packets != m || tx.Dropped != 0 {
		t.Fatalf("tx stats %+v", tx)
	}
}
