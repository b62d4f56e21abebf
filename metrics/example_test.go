package metrics_test

import (
	"context"
	"fmt"

	"github.com/daqiri-go/daqiri/metrics"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Register publishes counters from any source of Samples (a session registers its own with
// daqiri.WithMeterProvider); each collection reads the source once.
func ExampleRegister() {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	src := func() []metrics.Sample {
		return []metrics.Sample{{Engine: "socket", Interface: "server", Port: 0, Queue: metrics.QueueID(0), Dir: metrics.Rx,
			Packets: 1000, Bytes: 8_000_000, Drops: map[string]uint64{"rx_ring_full": 3}}}
	}
	reg, err := metrics.Register(mp.Meter(metrics.MeterName), src)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reg.Unregister()

	var rm metricdata.ResourceMetrics
	reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		for _, dp := range m.Data.(metricdata.Sum[int64]).DataPoints {
			line := fmt.Sprint(m.Name, " ", dp.Value, " ", m.Unit)
			if reason, ok := dp.Attributes.Value(metrics.AttrDropReason); ok {
				line += " reason=" + reason.AsString()
			}
			fmt.Println(line)
		}
	}
	_, err = metrics.Register(nil, src)
	fmt.Println(err)
	// Output:
	// daqiri.rx.packets 1000 {packet}
	// daqiri.rx.bytes 8000000 By
	// daqiri.dropped.packets 3 {packet} reason=rx_ring_full
	// metrics: Register needs a meter and a source
}
