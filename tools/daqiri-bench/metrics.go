package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/metrics/promexport"
)

// metricsServer serves the session's counters in Prometheus text format (--metrics-addr):
// the OpenTelemetry counters daqiri.rx.packets etc., exported as daqiri_rx_packets_total etc.
// It is started before the session opens and outlives it, so a scrape after the run reads
// the same final counters as the table (--metrics-linger).
type metricsServer struct {
	prom   *promexport.Prometheus
	srv    *promexport.Server
	reg    metric.Registration
	linger time.Duration
}

// startMetrics listens on o.metricsAddr; nil (and no error) when the flag is not set.
func startMetrics(o *options, stderr io.Writer) (*metricsServer, error) {
	if o.metricsAddr == "" {
		return nil, nil
	}
	p, err := promexport.NewPrometheus()
	if err != nil {
		return nil, err
	}
	srv, err := promexport.Serve(o.metricsAddr, p.Handler())
	if err != nil {
		p.Shutdown(context.Background())
		return nil, err
	}
	fmt.Fprintf(stderr, "daqiri-bench: serving metrics at %s\n", srv.URL())
	return &metricsServer{prom: p, srv: srv, linger: o.metricsLinger}, nil
}

// register reports s's counters (called once the session is open). The registration is kept
// after the session closes: its counters stay readable and are the final ones.
func (m *metricsServer) register(s *daqiri.Session) error {
	if m == nil {
		return nil
	}
	reg, err := s.RegisterMetrics(m.prom.Provider)
	if err != nil {
		return err
	}
	m.reg = reg
	return nil
}

// wait keeps serving for the linger time, or until ctx ends (Ctrl-C).
func (m *metricsServer) wait(ctx context.Context, stderr io.Writer) {
	if m == nil || m.linger <= 0 {
		return
	}
	fmt.Fprintf(stderr, "daqiri-bench: final counters at %s for %v (Ctrl-C to stop)\n", m.srv.URL(), m.linger)
	t := time.NewTimer(m.linger)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// stop shuts the server down.
func (m *metricsServer) stop() {
	if m == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if m.reg != nil {
		m.reg.Unregister()
	}
	m.srv.Close(ctx)
	m.prom.Shutdown(ctx)
}
