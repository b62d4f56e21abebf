package metrics

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

func randSamples() []Sample {
	var out []Sample
	for p := 0; p < 1+rand.IntN(3); p++ {
		for q := 0; q < 1+rand.IntN(3); q++ {
			for _, d := range []Direction{Rx, Tx} {
				s := Sample{Engine: "socket", Interface: fmt.Sprintf("if%d", p), Port: p, Queue: QueueID(q), Dir: d,
					Packets: rand.Uint64N(1 << 40), Bytes: rand.Uint64N(1 << 50)}
				if rand.IntN(2) == 0 {
					s.Drops = map[string]uint64{"rx_ring_full": rand.Uint64N(1000), "closed": rand.Uint64N(10)}
				}
				out = append(out, s)
			}
		}
	}
	return out
}

// points collects one metric's data points as attribute-string → value.
func points(t *testing.T, rm metricdata.ResourceMetrics, name string) (map[string]int64, string) {
	t.Helper()
	out := map[string]int64{}
	unit := ""
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != MeterName {
			continue
		}
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			unit = m.Unit
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok || !sum.IsMonotonic || sum.Temporality != metricdata.CumulativeTemporality {
				t.Fatalf("%s: %T is not a cumulative monotonic int64 sum", name, m.Data)
			}
			for _, dp := range sum.DataPoints {
				out[attrKey(dp.Attributes)] = dp.Value
			}
		}
	}
	return out, unit
}

func attrKey(s attribute.Set) string {
	var parts []string
	for _, kv := range s.ToSlice() {
		parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
	}
	return strings.Join(parts, ",")
}

func key(s Sample, reason string) string {
	k := fmt.Sprintf("%s=%s,%s=%s,%s=%d,%s=%s", AttrEngine, s.Engine, AttrInterface, s.Interface, AttrPort, s.Port, AttrQueue, s.Queue)
	if reason != "" {
		// Attribute sets are sorted by key: the reason sorts before the engine.
		k = AttrDropReason + "=" + reason + "," + k
	}
	return k
}

func TestRegisterReportsSamples(t *testing.T) {
	var mu sync.Mutex
	samples := randSamples()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	reg, err := Register(mp.Meter(MeterName), func() []Sample {
		mu.Lock()
		defer mu.Unlock()
		return samples
	})
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 2; round++ {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		want := map[string]map[string]int64{RxPackets: {}, RxBytes: {}, TxPackets: {}, TxBytes: {}, DroppedPackets: {}}
		for _, s := range samples {
			p, b := RxPackets, RxBytes
			if s.Dir == Tx {
				p, b = TxPackets, TxBytes
			}
			want[p][key(s, "")] = int64(s.Packets)
			want[b][key(s, "")] = int64(s.Bytes)
			for r, n := range s.Drops {
				// RX and TX queues with the same id share one drop series per reason.
				want[DroppedPackets][key(s, r)] += int64(n)
			}
		}
		for name, w := range want {
			got, unit := points(t, rm, name)
			if wantUnit := map[bool]string{true: UnitBytes, false: UnitPackets}[strings.HasSuffix(name, "bytes")]; len(w) > 0 && unit != wantUnit {
				t.Errorf("%s: unit %q, want %q", name, unit, wantUnit)
			}
			if len(got) != len(w) {
				t.Fatalf("%s: %d series, want %d\n%v\n%v", name, len(got), len(w), got, w)
			}
			for k, v := range w {
				if got[k] != v {
					t.Fatalf("%s{%s} = %d, want %d", name, k, got[k], v)
				}
			}
		}
		// Counters grow between collections; the next one reports the new snapshot.
		for i := range samples {
			samples[i].Packets += rand.Uint64N(100)
		}
		mu.Unlock()
	}
	if err := reg.Unregister(); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	if got, _ := points(t, rm, RxPackets); len(got) != 0 {
		t.Fatalf("after Unregister: %v", got)
	}
	if _, err := Register(nil, nil); err == nil {
		t.Fatal("Register(nil, nil) accepted")
	}
}
