package promexport_test

import (
	"fmt"
	"net/http/httptest"
	"strings"

	"github.com/daqiri-go/daqiri/metrics"
	"github.com/daqiri-go/daqiri/metrics/promexport"
)

// The Prometheus exporter translates the OpenTelemetry names (daqiri.rx.packets →
// daqiri_rx_packets_total) and attributes (daqiri.interface.name → daqiri_interface_name).
// Serve puts Handler at /metrics; here one scrape goes through an httptest recorder.
func ExampleNewPrometheus() {
	p, err := promexport.NewPrometheus()
	if err != nil {
		fmt.Println(err)
		return
	}
	src := func() []metrics.Sample {
		return []metrics.Sample{{Engine: "socket", Interface: "client", Queue: "0", Dir: metrics.Tx, Packets: 42, Bytes: 336000}}
	}
	if _, err := metrics.Register(p.Provider.Meter(metrics.MeterName), src); err != nil {
		fmt.Println(err)
		return
	}
	rec := httptest.NewRecorder()
	p.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, "daqiri_") {
			fmt.Println(line)
		}
	}
	v, ok := promexport.ScrapeValue(rec.Body.String(), "daqiri_tx_bytes_total", map[string]string{"daqiri_interface_name": "client"})
	fmt.Println(v, ok)
	// Output:
	// daqiri_tx_bytes_total{daqiri_engine="socket",daqiri_interface_name="client",daqiri_port_id="0",daqiri_queue_id="0",otel_scope_name="daqiri",otel_scope_schema_url="",otel_scope_version=""} 336000
	// daqiri_tx_packets_total{daqiri_engine="socket",daqiri_interface_name="client",daqiri_port_id="0",daqiri_queue_id="0",otel_scope_name="daqiri",otel_scope_schema_url="",otel_scope_version=""} 42
	// 336000 true
}
