package daqiri

import (
	"fmt"

	"go.opentelemetry.io/otel/metric"

	"github.com/daqiri-go/daqiri/metrics"
)

// OpenTelemetry metrics (upstream-daqiri.md §6): every session reports its queue counters as
// the observable counters daqiri.rx.packets, daqiri.rx.bytes, daqiri.tx.packets,
// daqiri.tx.bytes and daqiri.dropped.packets, with attributes daqiri.engine,
// daqiri.interface.name, daqiri.port.id, daqiri.queue.id and (drops) daqiri.drop.reason.
// Values are computed from Session.Stats at each collection, so every engine is covered and
// the numbers are the ones PrintStats shows.
//
// A session reports, from Open to Close, to the meter provider given with WithMeterProvider.
// Upstream reports to the process's global provider; pass otel.GetMeterProvider() for that.
// The library does not look the global provider up itself: package otel pulls in net/http,
// and importing daqiri must not build an HTTP stack. RegisterMetrics reports to any provider
// for as long as the caller likes.

// openMeterMetrics registers the session with the provider of WithMeterProvider; the session
// keeps the registration (metricsReg) for closeMeterMetrics to remove.
func openMeterMetrics(s *Session) error {
	if s.meterProvider == nil {
		return nil
	}
	reg, err := s.RegisterMetrics(s.meterProvider)
	if err != nil {
		return err
	}
	s.metricsReg = reg
	return nil
}

func closeMeterMetrics(s *Session) {
	if s.metricsReg == nil {
		return
	}
	if err := s.metricsReg.Unregister(); err != nil {
		s.log.Warn("unregistering metrics", "err", err)
	}
}

// RegisterMetrics reports the session's counters to mp (meter "daqiri", versioned with
// Version) until the registration is unregistered. The counters stay readable after Close,
// so a registration kept past Close reports the final values. Sessions already report to the
// global provider; register with that one again and every series is reported twice.
func (s *Session) RegisterMetrics(mp metric.MeterProvider) (metric.Registration, error) {
	if mp == nil {
		return nil, fmt.Errorf("daqiri: RegisterMetrics with a nil meter provider: %w", ErrNullPtr)
	}
	reg, err := metrics.Register(mp.Meter(metrics.MeterName, metric.WithInstrumentationVersion(Version)), s.MetricSamples)
	if err != nil {
		return nil, fmt.Errorf("daqiri: %w", err)
	}
	return reg, nil
}

// MetricSamples is Stats in the form package metrics reports: one sample per queue, with the
// queue's id and the interface's name (port<N> when it has none, as upstream); queues added
// at run time included, deleted ones not.
func (s *Session) MetricSamples() []metrics.Sample {
	st := s.Stats()
	var out []metrics.Sample
	for _, p := range st.Ports {
		name := p.Name
		if name == "" {
			name = fmt.Sprintf("port%d", p.Port)
		}
		add := func(dir metrics.Direction, id int, q QueueStats) {
			out = append(out, metrics.Sample{Engine: p.Engine, Interface: name, Port: p.Port, Queue: metrics.QueueID(id),
				Dir: dir, Packets: q.Packets, Bytes: q.Bytes, Drops: q.Drops})
		}
		// Queues deleted at run time are left out: their counters stopped, and a queue added
		// later under the same id starts from zero.
		for _, q := range p.Rx {
			if !q.Deleted {
				add(metrics.Rx, q.Queue, q)
			}
		}
		for _, q := range p.Tx {
			if !q.Deleted {
				add(metrics.Tx, q.Queue, q)
			}
		}
	}
	return out
}
