package daqiri

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/config"
)

func loopbackConfig(nq int, hds bool) *config.Config {
	c := &config.Config{Version: 1, StreamType: config.StreamRaw, Loopback: "sw", LogLevel: "error", RxMetaBuffers: 32, TxMetaBuffers: 32}
	ifc := config.Interface{Name: "lb", Address: "loopback", RX: &config.RxConfig{}, TX: &config.TxConfig{}}
	regs := []string{"tx", "rx"}
	if hds {
		regs = append(regs, "txd", "rxd")
	}
	for _, r := range regs {
		c.MemoryRegions = append(c.MemoryRegions, config.MemoryRegion{Name: r, Kind: config.KindHost, Access: config.AccessLocal, NumBufs: 256, BufSize: 1024})
	}
	for i := 0; i < nq; i++ {
		tx, rx := []string{"tx"}, []string{"rx"}
		if hds {
			tx, rx = []string{"tx", "txd"}, []string{"rx", "rxd"}
		}
		ifc.TX.Queues = append(ifc.TX.Queues, config.Queue{Name: "t", ID: i, CPUCore: "0", BatchSize: 16, MemoryRegions: tx})
		ifc.RX.Queues = append(ifc.RX.Queues, config.Queue{Name: "r", ID: 10 + i, CPUCore: "0", BatchSize: 16, MemoryRegions: rx})
		ifc.TX.Queues[i].Name += string(rune('0' + i))
		ifc.RX.Queues[i].Name += string(rune('0' + i))
	}
	c.Interfaces = []config.Interface{ifc}
	return c
}

// TestLoopbackZeroCopy sends random frames on two TX queues and receives them on the two
// looped RX queues at the same addresses (no copy), with every buffer back in its pool at Close.
func TestLoopbackZeroCopy(t *testing.T) {
	for _, hds := range []bool{false, true} {
		s, err := Open(context.Background(), loopbackConfig(2, hds))
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(rand.Uint64(), 5))
		for q := 0; q < 2; q++ {
			b, err := s.TxBurst(0, q, 8)
			if err != nil {
				t.Fatal(err)
			}
			var sent [][]byte
			addrs := map[uintptr]bool{}
			for i := 0; i < b.Len(); i++ {
				pl := make([]byte, 10+r.IntN(100))
				for k := range pl {
					pl[k] = byte(r.Uint32())
				}
				b.SetEthHeader(i, net.HardwareAddr{2, 0, 0, 0, 0, 1}, nil)
				b.SetIPv4Header(i, 8+len(pl), 17, netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("10.0.0.2"))
				b.SetUDPHeader(i, len(pl), 1, 2)
				if err := b.SetUDPPayload(i, pl); err != nil {
					t.Fatal(err)
				}
				if hds {
					b.SetPacketLengths(i, b.SegmentLen(0, i), 7)
				}
				sent = append(sent, append([]byte(nil), b.Packet(i)...))
				addrs[b.SegmentAddr(0, i)] = true
			}
			if err := s.Send(b); err != nil {
				t.Fatal(err)
			}
			rb, err := s.RxBurst(0, 10+q)
			if err != nil {
				t.Fatalf("queue %d: %v", 10+q, err)
			}
			if rb.Len() != len(sent) || rb.IsTx() || rb.Queue() != 10+q || rb.NumSegments() != b.NumSegments() {
				t.Fatalf("rx burst: %d packets, tx %v, queue %d", rb.Len(), rb.IsTx(), rb.Queue())
			}
			for i := range sent {
				if !bytes.Equal(rb.Packet(i), sent[i]) || !addrs[rb.SegmentAddr(0, i)] {
					t.Fatalf("packet %d differs or was copied", i)
				}
				if hds && rb.SegmentLen(1, i) != 7 {
					t.Fatalf("segment 1 length %d", rb.SegmentLen(1, i))
				}
			}
			rb.Free()
		}
		if _, err := s.RxBurst(0, 10); !errors.Is(err, ErrNotReady) {
			t.Fatalf("empty queue: %v", err)
		}
		st := s.Stats().Ports[0]
		if st.Tx[0].Packets != 8 || st.Rx[1].Packets != 8 {
			t.Fatalf("stats %+v", st)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("close (leak?): %v", err)
		}
	}
}

// TestLoopbackTxTimeAndAPI covers SetPacketTxTime's validation and that a timed packet is not
// delivered early, and the flow API's answer on an engine without flows.
func TestLoopbackTxTimeAndAPI(t *testing.T) {
	s, err := Open(context.Background(), loopbackConfig(1, false))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := s.TxBurst(0, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	b.SetAllPacketLengths(60)
	at := time.Now().Add(20 * time.Millisecond)
	if err := s.SetPacketTxTime(b, 1, at); err != nil {
		t.Fatal(err)
	}
	if err := s.SetPacketTxTime(b, 2, at); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("bad index: %v", err)
	}
	if err := s.Send(b); err != nil {
		t.Fatal(err)
	}
	if time.Now().Before(at) {
		t.Fatal("Send returned before the packet's send time")
	}
	rb, err := s.RxBurst(0, 10)
	if err != nil || rb.Len() != 2 {
		t.Fatalf("%v %v", rb, err)
	}
	if err := s.SetPacketTxTime(rb, 0, at); !errors.Is(err, ErrInvalidParameter) {
		t.Fatalf("RX burst: %v", err)
	}
	rb.Free()
	if _, err := s.AddRxFlow(0, FlowRule{}); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("AddRxFlow on loopback: %v", err)
	}
	if err := s.DropAllTraffic(0); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("DropAllTraffic on loopback: %v", err)
	}
	if _, err := s.MACAddr(0); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("MACAddr on loopback: %v", err)
	}
	if n, err := s.FlushPortQueue(0, 10); err != nil || n != 0 {
		t.Fatalf("flush: %d %v", n, err)
	}
}
