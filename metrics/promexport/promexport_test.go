package promexport

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/daqiri-go/daqiri/metrics"
)

// TestPrometheusServe scrapes the text format over HTTP and checks the translated names,
// labels and values.
func TestPrometheusServe(t *testing.T) {
	before := runtime.NumGoroutine()
	p, err := NewPrometheus()
	if err != nil {
		t.Fatal(err)
	}
	s := metrics.Sample{Engine: "socket", Interface: "server", Port: 1, Queue: "0", Dir: metrics.Rx, Packets: rand.Uint64N(1e9), Bytes: rand.Uint64N(1e12), Drops: map[string]uint64{"rx_ring_full": 7}}
	reg, err := metrics.Register(p.Provider.Meter(metrics.MeterName), func() []metrics.Sample { return []metrics.Sample{s} })
	if err != nil {
		t.Fatal(err)
	}
	srv, err := Serve("127.0.0.1:0", p.Handler())
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	c.CloseIdleConnections()
	text := string(body)
	labels := `daqiri_engine="socket",daqiri_interface_name="server",daqiri_port_id="1",daqiri_queue_id="0"`
	for _, want := range []string{
		fmt.Sprintf("daqiri_rx_packets_total{%s,", labels),
		fmt.Sprintf("daqiri_rx_bytes_total{%s,", labels),
		`daqiri_dropped_packets_total{daqiri_drop_reason="rx_ring_full",` + labels,
		"# TYPE daqiri_rx_packets_total counter",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("scrape lacks %q:\n%s", want, text)
		}
	}
	if v, ok := ScrapeValue(text, "daqiri_rx_packets_total", nil); !ok || v != float64(s.Packets) {
		t.Errorf("packets %v %v, want %d", v, ok, s.Packets)
	}
	if v, ok := ScrapeValue(text, "daqiri_rx_bytes_total", map[string]string{"daqiri_interface_name": "server", "daqiri_queue_id": "0"}); !ok || v != float64(s.Bytes) {
		t.Errorf("ScrapeValue: %v %v, want %d", v, ok, s.Bytes)
	}
	if _, ok := ScrapeValue(text, "daqiri_rx_bytes_total", map[string]string{"daqiri_queue_id": "9"}); ok {
		t.Error("ScrapeValue found a series that does not exist")
	}
	reg.Unregister()
	if err := srv.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.Shutdown(context.Background())
	if _, err := Serve("256.0.0.1:1", p.Handler()); err == nil {
		t.Error("bad address accepted")
	}
	for i := 0; runtime.NumGoroutine() > before && i < 300; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Errorf("goroutine leak: %d > %d", n, before)
	}
}
