// Package metrics publishes daqiri's queue counters as OpenTelemetry metrics with upstream
// DAQIRI's names and attributes (upstream-daqiri.md §6), and serves them in Prometheus text
// format.
//
// The counters are observable: nothing is counted twice. At each collection the registered
// callback takes a snapshot (for a session: Session.Stats, the same numbers PrintStats and
// daqiri-bench's table show) and reports it, so every engine is covered without code in any
// engine.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// Meter and instrument names, units and attribute keys, as upstream's src/metrics.cpp.
const (
	MeterName = "daqiri"

	RxPackets      = "daqiri.rx.packets"
	RxBytes        = "daqiri.rx.bytes"
	TxPackets      = "daqiri.tx.packets"
	TxBytes        = "daqiri.tx.bytes"
	DroppedPackets = "daqiri.dropped.packets"

	UnitPackets = "{packet}"
	UnitBytes   = "By"

	AttrEngine     = "daqiri.engine"
	AttrInterface  = "daqiri.interface.name"
	AttrPort       = "daqiri.port.id"
	AttrQueue      = "daqiri.queue.id"
	AttrDropReason = "daqiri.drop.reason"
)

// Direction says whether a sample is a receive or a transmit queue.
type Direction uint8

// Directions.
const (
	Rx Direction = iota
	Tx
)

// Sample is one queue's counters at one moment.
type Sample struct {
	Engine    string // engine name (socket, xdp, ...)
	Interface string // interface name from the configuration
	Port      int
	Queue     string // queue id ("all" for port-wide counters)
	Dir       Direction
	Packets   uint64
	Bytes     uint64
	Drops     map[string]uint64 // by reason; reasons are engine.DropReason names
}

// Register creates the five observable counters on m and one callback that reports src()
// at every collection. Unregister the returned registration to stop reporting (the
// instruments then show no data).
func Register(m metric.Meter, src func() []Sample) (metric.Registration, error) {
	if m == nil || src == nil {
		return nil, errors.New("metrics: Register needs a meter and a source")
	}
	rxp, err1 := m.Int64ObservableCounter(RxPackets, metric.WithUnit(UnitPackets), metric.WithDescription("Packets received and handed to the application"))
	rxb, err2 := m.Int64ObservableCounter(RxBytes, metric.WithUnit(UnitBytes), metric.WithDescription("Bytes received and handed to the application"))
	txp, err3 := m.Int64ObservableCounter(TxPackets, metric.WithUnit(UnitPackets), metric.WithDescription("Packets sent"))
	txb, err4 := m.Int64ObservableCounter(TxBytes, metric.WithUnit(UnitBytes), metric.WithDescription("Bytes sent"))
	drp, err5 := m.Int64ObservableCounter(DroppedPackets, metric.WithUnit(UnitPackets), metric.WithDescription("Packets dropped, by reason"))
	if err := errors.Join(err1, err2, err3, err4, err5); err != nil {
		return nil, fmt.Errorf("metrics: creating instruments: %w", err)
	}
	type key struct {
		port          int
		queue, reason string
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		// One observation per attribute set: a queue id shared by an RX and a TX queue of one
		// port would otherwise report the same drop series twice.
		drops := map[key]uint64{}
		base := map[key][]attribute.KeyValue{}
		for _, s := range src() {
			attrs := []attribute.KeyValue{
				attribute.String(AttrEngine, s.Engine),
				attribute.String(AttrInterface, s.Interface),
				attribute.Int(AttrPort, s.Port),
				attribute.String(AttrQueue, s.Queue),
			}
			set := metric.WithAttributes(attrs...)
			if s.Dir == Rx {
				o.ObserveInt64(rxp, clamp(s.Packets), set)
				o.ObserveInt64(rxb, clamp(s.Bytes), set)
			} else {
				o.ObserveInt64(txp, clamp(s.Packets), set)
				o.ObserveInt64(txb, clamp(s.Bytes), set)
			}
			for reason, n := range s.Drops {
				k := key{s.Port, s.Queue, reason}
				drops[k] += n
				base[k] = attrs
			}
		}
		for k, n := range drops {
			o.ObserveInt64(drp, clamp(n), metric.WithAttributes(append(base[k], attribute.String(AttrDropReason, k.reason))...))
		}
		return nil
	}, rxp, rxb, txp, txb, drp)
}

// clamp converts a counter to the int64 OpenTelemetry takes (2^63 packets will not happen;
// the clamp keeps a corrupt value from turning negative).
func clamp(v uint64) int64 {
	if v > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(v)
}

// QueueID formats a queue id for AttrQueue.
func QueueID(id int) string { return strconv.Itoa(id) }

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
