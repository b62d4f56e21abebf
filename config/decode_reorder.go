package config

import (
	"math"

	"go.yaml.in/yaml/v3"
)

// reorder decodes one rx.reorder_configs[] item.
func (d *decoder) reorder(it entry, r *Reorder) {
	got := d.fields(it.v, it.path, "a reorder config", map[string]handler{
		"name": func(e entry) { r.Name, _ = d.str(e) },
		"reorder_type": func(e entry) {
			if s, ok := d.str(e); ok {
				r.Type = ReorderType(s)
			}
		},
		"memory_region":       func(e entry) { r.MemoryRegion, _ = d.str(e) },
		"payload_byte_offset": intInto(d, &r.PayloadByteOffset, 0, math.MaxUint32),
		"flow_ids": func(e entry) {
			items, ok := d.seq(e, "flow_ids")
			if !ok {
				return
			}
			if len(items) == 0 {
				d.fail(e.path, "flow_ids must list at least one flow id")
				return
			}
			r.FlowIDs = make([]int, 0, len(items))
			for _, x := range items {
				if v, ok := d.integer(x, 0, MaxFlowID); ok {
					r.FlowIDs = append(r.FlowIDs, int(v))
				}
			}
		},
		"method":     func(e entry) { d.method(e, &r.Method) },
		"data_types": func(e entry) { r.DataTypes = d.dataTypes(e) },
		"missing_action": func(e entry) {
			if s, ok := d.str(e); ok {
				r.MissingAction = MissingAction(s)
			}
		},
		"reorder_engine": func(e entry) {
			if s, ok := d.str(e); ok {
				r.Engine = ReorderEngine(s)
			}
		},
		"cyclic_sequence": func(e entry) {
			// Upstream's hardware reorder (#290) writes `cyclic_sequence: true`: the sender
			// cycles its sequence over the batch's slots. The map form names an epoch field.
			if e.v != nil && e.v.Kind == yaml.ScalarNode {
				if b, ok := d.boolean(e); ok {
					r.CyclicSequence = b
				}
				return
			}
			r.Cyclic = &CyclicSequence{}
			g := d.fields(e.v, e.path, "cyclic_sequence", map[string]handler{
				"epoch": func(e entry) { d.bitField(e, &r.Cyclic.Epoch) },
			}, nil)
			if g != nil {
				d.require(g, e.path, "cyclic_sequence", "epoch")
			}
		},
	}, nil)
	d.require(got, it.path, "a reorder config", "name", "reorder_type", "memory_region", "payload_byte_offset", "method")
}

// method decodes a reorder plan's method.
func (d *decoder) method(me entry, m *ReorderMethod) {
	got := d.fields(me.v, me.path, "method", map[string]handler{
		string(MethodSeqBatchNumber): func(e entry) {
			m.Kind = MethodSeqBatchNumber
			g := d.fields(e.v, e.path, string(MethodSeqBatchNumber), map[string]handler{
				"sequence_number": func(e entry) { d.bitField(e, &m.Seq) },
				"batch_number":    func(e entry) { d.bitField(e, &m.Batch) },
			}, nil)
			d.require(g, e.path, string(MethodSeqBatchNumber), "sequence_number", "batch_number")
		},
		string(MethodSeqPacketsPerBatch): func(e entry) {
			m.Kind = MethodSeqPacketsPerBatch
			g := d.fields(e.v, e.path, string(MethodSeqPacketsPerBatch), map[string]handler{
				"sequence_number":   func(e entry) { d.bitField(e, &m.Seq) },
				"packets_per_batch": intInto(d, &m.PacketsPerBatch, 1, math.MaxUint32),
			}, nil)
			d.require(g, e.path, string(MethodSeqPacketsPerBatch), "sequence_number", "packets_per_batch")
		},
	}, nil)
	if got == nil {
		return
	}
	_, a := got[string(MethodSeqBatchNumber)]
	_, b := got[string(MethodSeqPacketsPerBatch)]
	switch {
	case a && b:
		d.fail(me.path, "method has either seq_batch_number or seq_packets_per_batch, not both")
	case !a && !b:
		d.fail(me.path, "method needs seq_batch_number or seq_packets_per_batch")
	}
}

// bitField decodes {bit_offset, bit_width}.
func (d *decoder) bitField(e entry, f *BitField) {
	g := d.fields(e.v, e.path, "a bit field", map[string]handler{
		"bit_offset": intInto(d, &f.Offset, 0, math.MaxUint16),
		"bit_width":  intInto(d, &f.Width, 0, math.MaxUint8),
	}, nil)
	d.require(g, e.path, "a bit field", "bit_offset", "bit_width")
}

// dataTypes decodes a reorder plan's data_types.
func (d *decoder) dataTypes(e entry) *DataTypes {
	dt := &DataTypes{Endianness: EndianHost}
	str := func(set func(string)) handler {
		return func(e entry) {
			if s, ok := d.str(e); ok {
				set(s)
			}
		}
	}
	in := str(func(s string) { dt.Input = DataType(s) })
	out := str(func(s string) { dt.Output = DataType(s) })
	end := str(func(s string) { dt.Endianness = Endianness(s) })
	got := d.fields(e.v, e.path, "data_types", map[string]handler{
		"input_type": in, "input": in,
		"output_type": out, "output": out,
		"endianness": end, "input_endianness": end,
	}, nil)
	if got == nil {
		return dt
	}
	for _, pair := range [][2]string{{"input_type", "input"}, {"output_type", "output"}, {"endianness", "input_endianness"}} {
		_, a := got[pair[0]]
		b, hasB := got[pair[1]]
		if a && hasB {
			d.fail(b.path, "%s and %s name the same field; give one of them", pair[0], pair[1])
		}
		if !a && !hasB && pair[0] != "endianness" {
			d.fail(joinPath(e.path, pair[0]), "data_types needs %s", pair[0])
		}
	}
	return dt
}
