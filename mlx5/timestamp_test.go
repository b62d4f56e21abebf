package mlx5

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/enginetest"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/model/modelch"
)

// kernelClockFabric gives model ports as DevX gives a ConnectX: the transport cannot read
// the device's clock (its channels hide channel.Clock), and the device's real-time clock
// reads Unix time, as mlx5_core leaves it after writing MTUTC from CLOCK_REALTIME.
type kernelClockFabric struct{ *modelch.Fabric }

// noClock is a channel without channel.Clock.
type noClock struct{ channel.Channel }

func (f kernelClockFabric) Open(ctx context.Context, ports []channel.FabricPort, opts channel.FabricOptions) ([]channel.Channel, func(), error) {
	chans, stop, err := f.Fabric.Open(ctx, ports, opts)
	if err != nil {
		return nil, nil, err
	}
	for i, p := range ports {
		a, _ := modelch.ParseAddress(p.Address)
		// The model's clock starts at 0 at reset: move it to Unix time by the offset read
		// through its init segment.
		tb, err := chans[i].(channel.Clock).Timebase()
		if err != nil {
			stop()
			return nil, nil, err
		}
		f.Device(a.Port).Advance(time.Duration(tb.RealTimeOffset))
		chans[i] = noClock{chans[i]}
	}
	return chans, stop, nil
}

// TestRxTimestamps (issue 26): every received packet's RxTimestamp lies between the host's
// CLOCK_REALTIME read before it was sent and after it was received, within 2 ms, on every
// transport and in both timestamp formats: model ports (the channel reads the init segment
// through the model's BAR0), vfio+model ports (the VFIO transport reads it through its BAR
// mapping), each with the device stamping real time and, as a device without a real-time
// clock, only its free-running timer; and a DevX-shaped port whose transport reads no clock
// and whose device keeps real time on the host's clock. At 38f58a0 the engine added the host's
// wall clock to real-time stamps whenever the port was not the model's own (clockOff = now -
// 0), so the DevX-shaped case read about 2 × today's epoch: ~56 years late.
func TestRxTimestamps(t *testing.T) {
	const bound = 2 * time.Millisecond
	for _, c := range []struct {
		name   string
		prefix string
		fabric channel.Fabric
	}{
		{"model/real-time", "model:", &modelch.Fabric{}},
		{"model/free-running", "model:", &modelch.Fabric{TimerOnly: true}},
		{"vfio+model/real-time", "vfio+model:", &modelch.Fabric{}},
		{"vfio+model/free-running", "vfio+model:", &modelch.Fabric{TimerOnly: true}},
		{"devx-shaped/real-time", "model:", kernelClockFabric{&modelch.Fabric{}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := pairConfig(1, 1024, 2048, false)
			cfg.Interfaces[0].Address, cfg.Interfaces[1].Address = c.prefix+"0", c.prefix+"1"
			e, ports := openTest(t, cfg, options{striding: -1, compression: true, fabric: c.fabric})
			r := rand.New(rand.NewPCG(rand.Uint64(), 26))
			n := 100 + r.IntN(200)
			frames := make([][]byte, n)
			for i := range frames {
				frames[i] = udpFrame(r, i, 60+r.IntN(1400))
			}
			before := time.Now().UnixNano()
			got, worst := 0, int64(math.MinInt64)
			deadline := time.Now().Add(10 * time.Second)
			for i := 0; i < n; {
				k := min(64, n-i)
				b, err := ports[0].Tx[0].NewBurst(k)
				if err != nil {
					t.Fatal(err)
				}
				for j := range k {
					copy(b.SegmentBuffer(0, j), frames[i+j])
					b.SetPacketLengths(j, len(frames[i+j]))
				}
				if err := e.Send(b); err != nil {
					t.Fatal(err)
				}
				i += k
			}
			for got < n && time.Now().Before(deadline) {
				b, ok := ports[1].Rx[0].Next()
				if !ok {
					time.Sleep(50 * time.Microsecond)
					continue
				}
				after := time.Now().UnixNano()
				for i := range b.Len() {
					ts, err := b.RxTimestamp(i)
					if err != nil {
						t.Fatalf("packet %d: %v", got+i, err)
					}
					if ts < before-int64(bound) || ts > after+int64(bound) {
						t.Fatalf("packet %d stamped %s, outside [%s, %s] ± %v (off by %v)", got+i,
							time.Unix(0, ts).UTC().Format(time.RFC3339Nano), time.Unix(0, before).UTC().Format(time.RFC3339Nano),
							time.Unix(0, after).UTC().Format(time.RFC3339Nano), bound, time.Duration(ts-after))
					}
					worst = max(worst, ts-after, before-ts)
				}
				got += b.Len()
				b.Free()
			}
			if got != n {
				t.Fatalf("received %d of %d", got, n)
			}
			t.Logf("%d packets, every stamp within its send/receive window (closest to an edge: %v inside)", n, time.Duration(-worst))
		})
	}
}

// TestFreeRunningWithoutClock: a device that stamps only its free-running timer behind a
// transport that gives no conversion is refused at open, naming the interface, instead of
// stamping garbage.
func TestFreeRunningWithoutClock(t *testing.T) {
	cfg := pairConfig(1, 1024, 2048, false)
	ports := enginetest.Ports(t, cfg)
	_, err := open(context.Background(), &engine.Env{Config: cfg, Ports: ports, Log: discard()},
		options{striding: -1, fabric: kernelClockFabric{&modelch.Fabric{TimerOnly: true}}})
	if err == nil || !strings.Contains(err.Error(), "free-running timer") || !strings.Contains(err.Error(), "interfaces[0]") {
		t.Fatalf("Open: %v", err)
	}
}
