// Package promexport serves daqiri's OpenTelemetry counters (package metrics) in Prometheus
// text format over HTTP. It is separate from package metrics because the Prometheus client,
// its protobuf model and net/http's server are heavy to build into every program that
// imports the library; only the tools (daqiri-bench --metrics-addr) import it.
//
// grafana/daqiri.json in this directory is a Grafana dashboard for these metrics (RX/TX
// rates per interface, packet rates, drops by reason, RX packets per queue; import it and
// pick the Prometheus data source). Its queries name only metrics and labels this exporter
// serves: TestGrafanaDashboard checks them against a real scrape.
package promexport

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Prometheus is an OpenTelemetry meter provider whose metrics are read by a Prometheus
// registry of its own (not the process-wide default one).
type Prometheus struct {
	Provider *sdkmetric.MeterProvider
	Registry *prometheus.Registry
}

// NewPrometheus builds the provider and registry. Metric names follow the exporter's
// OpenTelemetry-to-Prometheus translation: dots become underscores and counters get _total
// (daqiri.rx.packets → daqiri_rx_packets_total); attributes become labels the same way
// (daqiri.port.id → daqiri_port_id).
func NewPrometheus() (*Prometheus, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutTargetInfo())
	if err != nil {
		return nil, fmt.Errorf("metrics: Prometheus exporter: %w", err)
	}
	return &Prometheus{Provider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)), Registry: reg}, nil
}

// Handler serves the registry in Prometheus text format.
func (p *Prometheus) Handler() http.Handler {
	return promhttp.HandlerFor(p.Registry, promhttp.HandlerOpts{})
}

// Shutdown stops the provider.
func (p *Prometheus) Shutdown(ctx context.Context) error { return p.Provider.Shutdown(ctx) }

// Server is an HTTP server answering GET /metrics.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan error
}

// Serve listens on addr (host:port; port 0 picks a free one) and serves h at /metrics until
// Close.
func Serve(addr string, h http.Handler) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	s := &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, ln: ln, done: make(chan error, 1)}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// URL is the scrape URL.
func (s *Server) URL() string { return "http://" + s.Addr() + "/metrics" }

// Close stops the server, waiting (until ctx ends) for scrapes in progress.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// ScrapeValue parses Prometheus text format and returns the value of the first counter,
// gauge or untyped series called name whose labels include every one in labels (for tests
// and tools that read a scrape).
func ScrapeValue(text, name string, labels map[string]string) (float64, bool) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return 0, false
	}
	fam := fams[name]
	if fam == nil {
		return 0, false
	}
next:
	for _, m := range fam.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}
