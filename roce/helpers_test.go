package roce_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/integration/vm/guest"
	"github.com/daqiri-go/daqiri/verbs"
)

// Guest tests need the VM harness's guest (Soft-RoCE rxe0 on d0 with an
// IPv4 address, rdma_ucm); elsewhere they skip.

var (
	guestDev  string
	guestAddr netip.Addr
)

func requireGuest(t testing.TB) {
	t.Helper()
	guestDev, guestAddr = guest.RxeAddr(t)
}

// explicit reports whether -test.run asks for the running test by a word of
// its name ("Full", "Bench") that a plain `go test` or a broad pattern such as
// TestGuest does not contain: full-size runs and benchmarks happen only when
// asked for (make test-roce-full, make bench-roce).
func explicit(t *testing.T, word string) bool {
	f := flag.Lookup("test.run")
	return f != nil && strings.Contains(f.Value.String(), word) && strings.Contains(t.Name(), word)
}

func region(name string, bufs, size int, access config.Access) config.MemoryRegion {
	return config.MemoryRegion{Name: name, Kind: config.KindHost, Access: access, NumBufs: bufs, BufSize: size}
}

// roceConfig is a one-interface RoCE configuration: one RX queue per name
// in rx and one TX queue per name in tx, each on that region.
func roceConfig(mode config.SocketMode, transport string, local netip.AddrPort, rx, tx []string, mrs ...config.MemoryRegion) *config.Config {
	ifc := config.Interface{Name: "roce_" + string(mode), Address: local.Addr().String(),
		Socket: &config.SocketConfig{Mode: mode, Local: config.Endpoint{Proto: config.ProtoRoCE, Host: local.Addr().String(), Port: int(local.Port())}},
		RoCE:   &config.RoCEConfig{TransportMode: transport}}
	for i, r := range rx {
		if ifc.RX == nil {
			ifc.RX = &config.RxConfig{}
		}
		ifc.RX.Queues = append(ifc.RX.Queues, config.Queue{Name: fmt.Sprintf("rx%d", i), ID: i, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{r}})
	}
	for i, r := range tx {
		if ifc.TX == nil {
			ifc.TX = &config.TxConfig{}
		}
		ifc.TX.Queues = append(ifc.TX.Queues, config.Queue{Name: fmt.Sprintf("tx%d", i), ID: i, CPUCore: "0", BatchSize: 8, MemoryRegions: []string{r}})
	}
	return &config.Config{Version: 1, StreamType: config.StreamSocket, LogLevel: "warn",
		RxMetaBuffers: 64, TxMetaBuffers: 64, MemoryRegions: mrs, Interfaces: []config.Interface{ifc}}
}

func open(t testing.TB, cfg *config.Config) *daqiri.Session {
	t.Helper()
	s, err := daqiri.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("session close: %v", err)
		}
	})
	return s
}

// pair is a server session and a client session connected to each other.
type pair struct {
	srv, cli         *daqiri.Session
	srvConn, cliConn uint64
	addr             netip.AddrPort
}

// connect opens srvCfg (a server on addr) and cliCfg, connects the client
// and claims the connection on the server.
func connect(t testing.TB, srvCfg, cliCfg *config.Config) *pair {
	t.Helper()
	p := &pair{srv: open(t, srvCfg), cli: open(t, cliCfg)}
	sc := srvCfg.Interfaces[0].Socket.Local
	p.addr = netip.AddrPortFrom(netip.MustParseAddr(sc.Host), uint16(sc.Port))
	var err error
	if p.cliConn, err = p.cli.RDMAConnect(0, p.addr, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	p.srvConn = claim(t, p.srv, 0)
	return p
}

// claim waits (bounded) for the server's next connection.
func claim(t testing.TB, s *daqiri.Session, port int) uint64 {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		id, err := s.RDMAServerConn(port)
		if err == nil {
			return id
		}
		if !errors.Is(err, daqiri.ErrNotReady) {
			t.Fatal(err)
		}
	}
	t.Fatal("the server accepted no connection within 20 s")
	return 0
}

// pool is fresh random bytes that messages are cut from: message seq of n
// bytes carries an 8-byte sequence number, then pool bytes from an offset
// the sequence number picks. The receiver checks both without storing
// what was sent.
type pool []byte

func newPool(n int) pool {
	p := make(pool, n+8)
	for i := 0; i+8 <= len(p); i += 8 {
		binary.LittleEndian.PutUint64(p[i:], rand.Uint64())
	}
	return p
}

func (p pool) offset(seq uint64) int { return int(seq*2654435761) % (len(p) / 2) }

func (p pool) fill(dst []byte, seq uint64) {
	binary.LittleEndian.PutUint64(dst, seq)
	copy(dst[8:], p[p.offset(seq):])
}

func (p pool) check(got []byte, seq uint64) error {
	if len(got) < 8 || binary.LittleEndian.Uint64(got) != seq {
		return fmt.Errorf("message %d: starts with sequence %x", seq, got[:min(len(got), 8)])
	}
	want := p[p.offset(seq):][:len(got)-8]
	if bytes.Equal(got[8:], want) {
		return nil
	}
	for i := range want {
		if got[8+i] != want[i] {
			return fmt.Errorf("message %d of %d bytes differs at byte %d", seq, len(got), 8+i)
		}
	}
	return nil
}

// logSize is a message size between lo and hi, uniform in log scale.
func logSize(lo, hi int) int {
	f := float64(lo) * math.Pow(2, rand.Float64()*math.Log2(float64(hi)/float64(lo)))
	return min(max(int(f), lo), hi)
}

// sendMessages sends count messages from s's port 0 on conn, as bursts of up
// to batch packets, sizes from size(); it retries while the send queue or
// the buffers are busy. It returns the bytes sent. It may run in any
// goroutine: failures are returned.
func sendMessages(s *daqiri.Session, conn uint64, p pool, first uint64, count, batch int, size func() int, deadline time.Time) (int64, error) {
	var total int64
	seq := first
	for sent := 0; sent < count; {
		if time.Now().After(deadline) {
			return total, fmt.Errorf("sending: %d of %d messages sent when time ran out", sent, count)
		}
		k := min(batch, count-sent)
		b, err := s.TxBurst(0, 0, k)
		if errors.Is(err, daqiri.ErrNoFreePacketBuffers) || errors.Is(err, daqiri.ErrNoFreeBurstBuffers) {
			time.Sleep(100 * time.Microsecond)
			continue
		}
		if err != nil {
			return total, err
		}
		var bytes int64
		for i := range k {
			buf := b.SegmentBuffer(0, i)
			n := min(size(), len(buf))
			p.fill(buf[:n], seq+uint64(i))
			if err := b.SetPacketLengths(i, n); err != nil {
				b.Free()
				return total, err
			}
			bytes += int64(n)
		}
		b.SetConnID(conn)
		for {
			err = s.Send(b)
			if !errors.Is(err, daqiri.ErrNotReady) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Microsecond)
		}
		if err != nil {
			b.Free()
			return total, fmt.Errorf("send after %d messages: %w", sent, err)
		}
		sent += k
		seq += uint64(k)
		total += bytes
	}
	return total, nil
}

// mustSend is sendMessages in the test goroutine.
func mustSend(t testing.TB, s *daqiri.Session, conn uint64, p pool, first uint64, count, batch int, size func() int, deadline time.Time) int64 {
	t.Helper()
	n, err := sendMessages(s, conn, p, first, count, batch, size, deadline)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// receiver collects count messages on s's port 0, RX queue q, from conn,
// checking order and content, in its own goroutine.
type receiver struct {
	wg    sync.WaitGroup
	err   error
	got   int
	bytes int64
}

func receive(s *daqiri.Session, q int, conn uint64, p pool, first uint64, count int, deadline time.Time) *receiver {
	r := &receiver{}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		seq := first
		for r.got < count {
			if time.Now().After(deadline) {
				r.err = fmt.Errorf("receiving: %d of %d messages when time ran out", r.got, count)
				return
			}
			b, err := s.RxBurst(0, q)
			if errors.Is(err, daqiri.ErrNotReady) {
				time.Sleep(50 * time.Microsecond)
				continue
			}
			if err != nil {
				r.err = err
				return
			}
			if op := daqiri.RDMAOp(b); op != daqiri.RDMAReceive || b.ConnID() != conn {
				r.err = fmt.Errorf("burst opcode %v connection %d, want RECEIVE on %d", op, b.ConnID(), conn)
				b.Free()
				return
			}
			for i := range b.Len() {
				pkt := b.Packet(i)
				if err := p.check(pkt, seq); err != nil {
					r.err = err
					b.Free()
					return
				}
				seq++
				r.got++
				r.bytes += int64(len(pkt))
			}
			b.Free()
		}
	}()
	return r
}

func (r *receiver) wait(t testing.TB) {
	t.Helper()
	r.wg.Wait()
	if r.err != nil {
		t.Fatal(r.err)
	}
}

func resources(t testing.TB) map[string]uint64 {
	t.Helper()
	all, err := verbs.ResourceSummary()
	if err != nil {
		t.Fatal(err)
	}
	return all[guestDev]
}

// waitFree waits (bounded) until every buffer of the session's region is
// back in its pool.
func waitFree(t testing.TB, s *daqiri.Session, name string) {
	t.Helper()
	r := s.Region(name)
	for deadline := time.Now().Add(10 * time.Second); r.Available() != r.NumBufs; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("region %s: %d of %d buffers back after 10 s", name, r.Available(), r.NumBufs)
		}
	}
}
