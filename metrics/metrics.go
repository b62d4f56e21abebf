// Package metrics publishes daqiri's queue counters as OpenTelemetry metrics with upstream
// DAQIRI's names and attributes (upstream-daqiri.md §6). It holds the instruments and names
// only, so that importing the library does not build an exporter or an HTTP server; package
// metrics/promexport serves them in Prometheus text format for the tools.
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
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
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
