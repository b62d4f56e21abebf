package daqiri_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/internal/testutil"
	"github.com/daqiri-go/daqiri/metrics"
)

// metricSeries collects every daqiri data point as "name{port,queue,reason}" → value.
func metricSeries(t *testing.T, r *sdkmetric.ManualReader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != metrics.MeterName {
			continue
		}
		if sm.Scope.Version != daqiri.Version {
			t.Errorf("meter version %q, want %q", sm.Scope.Version, daqiri.Version)
		}
		for _, m := range sm.Metrics {
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("%s: %T", m.Name, m.Data)
			}
			for _, dp := range sum.DataPoints {
				get := func(k string) string { v, _ := dp.Attributes.Value(attribute.Key(k)); return v.Emit() }
				key := fmt.Sprintf("%s{%s,%s,%s,%s,%s}", m.Name, get(metrics.AttrEngine), get(metrics.AttrInterface), get(metrics.AttrPort), get(metrics.AttrQueue), get(metrics.AttrDropReason))
				out[key] = dp.Value
			}
		}
	}
	return out
}

// expectedSeries is what the metrics must show for a Stats snapshot.
func expectedSeries(s *daqiri.Session) map[string]int64 {
	out := map[string]int64{}
	st := s.Stats()
	for _, p := range st.Ports {
		for i, q := range p.Rx {
			id := s.RxQueueIDs(p.Port)[i]
			k := fmt.Sprintf("{%s,%s,%d,%d,", p.Engine, p.Name, p.Port, id)
			out[metrics.RxPackets+k+"}"] = int64(q.Packets)
			out[metrics.RxBytes+k+"}"] = int64(q.Bytes)
			for r, n := range q.Drops {
				out[metrics.DroppedPackets+k+r+"}"] += int64(n)
			}
		}
		for i, q := range p.Tx {
			id := s.TxQueueIDs(p.Port)[i]
			k := fmt.Sprintf("{%s,%s,%d,%d,", p.Engine, p.Name, p.Port, id)
			out[metrics.TxPackets+k+"}"] = int64(q.Packets)
			out[metrics.TxBytes+k+"}"] = int64(q.Bytes)
			for r, n := range q.Drops {
				out[metrics.DroppedPackets+k+r+"}"] += int64(n)
			}
		}
	}
	return out
}

func compareSeries(t *testing.T, got, want map[string]int64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d series, want %d\ngot  %v\nwant %v", len(got), len(want), got, want)
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Fatalf("%s = %d (present %v), want %d\ngot %v", k, g, ok, v, got)
		}
	}
}

// stableSeries collects the metrics and the expected values from Stats, retrying (bounded)
// while a late packet moves a counter between the two reads.
func stableSeries(t *testing.T, r *sdkmetric.ManualReader, s *daqiri.Session) (got, want map[string]int64) {
	t.Helper()
	for i := 0; i < 50; i++ {
		want = expectedSeries(s)
		got = metricSeries(t, r)
		if fmt.Sprint(got) == fmt.Sprint(want) && fmt.Sprint(want) == fmt.Sprint(expectedSeries(s)) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return got, want
}

// settle waits until the session's counters stop moving (traffic done), bounded.
func settle(t *testing.T, s *daqiri.Session) {
	t.Helper()
	prev, quiet := "", 0
	for i := 0; i < 500 && quiet < 5; i++ {
		time.Sleep(10 * time.Millisecond)
		cur := fmt.Sprint(s.Stats())
		if cur == prev {
			quiet++
		} else {
			prev, quiet = cur, 0
		}
	}
}

// drain reads and frees bursts on port until none has come for a while (bounded).
func drain(t *testing.T, s *daqiri.Session, port int) {
	t.Helper()
	idle := 0
	for i := 0; i < 100000 && idle < 200; i++ {
		b, err := s.RxBurstPort(port)
		if err != nil {
			idle++
			time.Sleep(time.Millisecond)
			continue
		}
		idle = 0
		b.Free()
	}
	settle(t, s)
}

// TestMetricsMatchStats sends random traffic over a loopback UDP pair, then overruns the
// receiver to cause drops, and checks that every OpenTelemetry series equals the session's
// Stats, per port, queue and drop reason, with upstream's names and attributes.
func TestMetricsMatchStats(t *testing.T) {
	port := testutil.FreePort(t, "udp")
	cfg := pairConfig(config.ProtoUDP, port, 9000, 32, 200)
	// A small kernel receive buffer, so that a receiver that falls behind drops.
	cfg.Interfaces[0].Socket.RecvBufferBytes = 64 << 10
	s, err := daqiri.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	reg, err := s.RegisterMetrics(mp)
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := s.Port("server")
	cli, _ := s.Port("client")
	payloads := randomPayloads(200+len(t.Name())*3, 1, 8000)
	sendAll(t, s, cli, payloads, 32)
	drain(t, s, srv)
	if st := s.Stats().Ports[srv].Rx[0]; st.Packets == 0 || st.Packets+st.Dropped > uint64(len(payloads)) {
		t.Fatalf("server counted %+v for %d sent", st, len(payloads))
	}
	got, want := stableSeries(t, reader, s)
	compareSeries(t, got, want)

	// Overrun the receiver (nobody reads while 20000 packets arrive), then let it catch up:
	// what the kernel and the rings could not hold shows up as drops under their reasons.
	// Every datagram is accounted for while the session runs — received or dropped under a
	// reason — including the kernel's drops after the last datagram it queued, which no
	// later datagram reports (the receiver reads the socket's counter when it runs dry).
	const overrun = 20000
	sendAll(t, s, cli, randomPayloads(overrun, 1, 64), 32)
	drain(t, s, srv)
	rx := s.Stats().Ports[srv].Rx[0]
	if rx.Dropped == 0 {
		t.Fatalf("no drops after overrunning the receiver: %+v", rx)
	}
	sent := uint64(len(payloads) + overrun)
	if tx := s.Stats().Ports[cli].Tx[0]; tx.Packets != sent || rx.Packets+rx.Dropped != sent {
		t.Fatalf("sent %d (client TX %+v), server received %d + dropped %d = %d: every datagram must be counted", sent, tx, rx.Packets, rx.Dropped, rx.Packets+rx.Dropped)
	}
	got, want = stableSeries(t, reader, s)
	compareSeries(t, got, want)
	t.Logf("drops by reason: %v", rx.Drops)

	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	if got := metricSeries(t, reader); len(got) != 0 {
		t.Fatalf("series after Unregister: %v", got)
	}
	if _, err := s.RegisterMetrics(nil); err == nil {
		t.Fatal("nil provider accepted")
	}
}

// TestMetricsGlobalProvider: a session opened with the global meter provider (upstream's
// behaviour, through WithMeterProvider) reports to it without any other call, and stops when
// closed.
func TestMetricsGlobalProvider(t *testing.T) {
	prev := otel.GetMeterProvider()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	otel.SetMeterProvider(mp)
	defer func() {
		otel.SetMeterProvider(prev)
		mp.Shutdown(context.Background())
	}()
	port := testutil.FreePort(t, "udp")
	s, err := daqiri.Open(context.Background(), pairConfig(config.ProtoUDP, port, 2048, 8, 100), daqiri.WithMeterProvider(otel.GetMeterProvider()))
	if err != nil {
		t.Fatal(err)
	}
	srv, _ := s.Port("server")
	cli, _ := s.Port("client")
	payloads := randomPayloads(50, 1, 1000)
	sendAll(t, s, cli, payloads, 8)
	recvAll(t, s, srv, len(payloads), 20*time.Second)
	settle(t, s)
	compareSeries(t, metricSeries(t, reader), expectedSeries(s))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := metricSeries(t, reader); len(got) != 0 {
		t.Fatalf("a closed session still reports: %v", got)
	}
}
