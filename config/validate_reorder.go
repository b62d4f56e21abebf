package config

import (
	"math/bits"
)

// reorders checks rx.reorder_configs (§4.1 and the engine constraints).
func (v *validator) reorders(base string, rx *RxConfig) {
	flows := map[int]*Flow{}
	for j := range rx.Flows {
		if _, dup := flows[rx.Flows[j].ID]; !dup {
			flows[rx.Flows[j].ID] = &rx.Flows[j]
		}
	}
	queues := map[int]*Queue{}
	for k := range rx.Queues {
		if _, dup := queues[rx.Queues[k].ID]; !dup {
			queues[rx.Queues[k].ID] = &rx.Queues[k]
		}
	}
	names := map[string]bool{}
	planOf := map[int]string{}
	for k := range rx.Reorders {
		r := &rx.Reorders[k]
		p := indexPath(base+".reorder_configs", k)
		switch {
		case r.Name == "":
			v.errf(p+".name", "a reorder config needs a name")
		case names[r.Name]:
			v.errf(p+".name", "duplicate reorder config name %q", r.Name)
		default:
			names[r.Name] = true
		}
		switch r.Type {
		case ReorderGPU, ReorderCPU:
		case "":
			v.errf(p+".reorder_type", "a reorder config needs reorder_type (gpu or cpu)")
		default:
			v.errf(p+".reorder_type", "invalid reorder_type %q (valid: gpu, cpu)", r.Type)
		}
		out := v.regions[r.MemoryRegion]
		switch {
		case r.MemoryRegion == "":
			v.errf(p+".memory_region", "a reorder config needs memory_region (the output region)")
		case out == nil:
			if !v.broken("memory_regions") {
				v.errf(p+".memory_region", "memory region %q is not defined in memory_regions", r.MemoryRegion)
			}
		default:
			v.used[r.MemoryRegion] = true
		}
		if r.PayloadByteOffset < 0 {
			v.errf(p+".payload_byte_offset", "must be ≥ 0, got %d", r.PayloadByteOffset)
		}
		ppb := v.method(p+".method", &r.Method)
		v.dataTypes(p+".data_types", r.DataTypes)
		switch r.MissingAction {
		case "", MissingPassthrough, MissingDrop:
		default:
			v.errf(p+".missing_action", "invalid missing_action %q (valid: drop, passthrough)", r.MissingAction)
		}
		if c := r.Cyclic; c != nil {
			ep := p + ".cyclic_sequence.epoch"
			switch {
			case c.Epoch.Width < 1 || c.Epoch.Width > 32:
				v.errf(ep+".bit_width", "must be between 1 and 32, got %d", c.Epoch.Width)
			case c.Epoch.Offset < 0:
				v.errf(ep+".bit_offset", "must be ≥ 0, got %d", c.Epoch.Offset)
			default:
				batchBits := -1
				switch {
				case r.Method.Kind == MethodSeqBatchNumber:
					batchBits = r.Method.Batch.Width
				case ppb > 0 && ppb&(ppb-1) == 0:
					batchBits = r.Method.Seq.Width - bits.TrailingZeros(uint(ppb))
				}
				if batchBits >= 0 && batchBits+c.Epoch.Width > 32 {
					v.errf(ep+".bit_width", "%d epoch bits and %d batch-number bits make a %d-bit batch key; at most 32", c.Epoch.Width, batchBits, batchBits+c.Epoch.Width)
				}
				// The epoch tells one wrap of the sequence from the next, so it must be a field
				// of its own: bits shared with the sequence (or batch) number change with every
				// packet and would split one cycle's batch across epochs.
				fields := []struct {
					name string
					f    BitField
				}{{"sequence_number", r.Method.Seq}}
				if r.Method.Kind == MethodSeqBatchNumber {
					fields = append(fields, struct {
						name string
						f    BitField
					}{"batch_number", r.Method.Batch})
				}
				for _, o := range fields {
					if o.f.Width > 0 && o.f.Offset >= 0 && c.Epoch.Overlaps(o.f) {
						v.errf(ep+".bit_offset", "epoch bits %d..%d overlap the %s bits %d..%d; the epoch must be a field of its own",
							c.Epoch.Offset, c.Epoch.Offset+c.Epoch.Width-1, o.name, o.f.Offset, o.f.Offset+o.f.Width-1)
					}
				}
			}
		}
		v.reorderEngine(p, r, ppb)

		// Flows: all known, each in one plan only, all steering to the same single queue.
		// Without flows (a socket stream) the plan reads the interface's only RX queue.
		var q *Queue
		qid := -1
		if len(rx.Flows) == 0 && len(r.FlowIDs) == 0 {
			switch len(rx.Queues) {
			case 1:
				q = &rx.Queues[0]
			default:
				v.errf(p+".flow_ids", "without flows a reorder plan reads the interface's only RX queue; this interface has %d", len(rx.Queues))
			}
		} else if len(r.FlowIDs) == 0 {
			v.errf(p+".flow_ids", "a reorder config needs at least one flow id")
		}
		for j, id := range r.FlowIDs {
			fp := indexPath(p+".flow_ids", j)
			f := flows[id]
			if f == nil {
				if !v.broken(base + ".flows") {
					v.errf(fp, "flow id %d is not an RX flow of this interface", id)
				}
				continue
			}
			if prev, ok := planOf[id]; ok {
				v.errf(fp, "flow id %d is already reordered by %s: a flow belongs to at most one plan", id, prev)
			} else {
				planOf[id] = p
			}
			target := -1
			for _, a := range f.Actions {
				if a.Type == ActionQueue {
					if len(a.Queues) > 1 {
						v.errf(fp, "flow %d spreads over several queues (RSS); reordering needs a single-queue flow", id)
					} else if len(a.Queues) == 1 {
						target = a.Queues[0]
					}
				}
			}
			if target < 0 {
				continue
			}
			switch {
			case qid < 0:
				qid, q = target, queues[target]
			case target != qid:
				v.errf(fp, "flow %d steers to queue %d but the plan's other flows steer to queue %d: one plan reads one queue", id, target, qid)
			}
		}
		if q == nil {
			continue
		}
		if q.PollMode == PollDirect {
			v.errf(p+".flow_ids", "the plan's flows steer to queue %s, which has poll_mode direct; reordering needs an indirect queue", q.Name)
		}
		if len(q.MemoryRegions) != 1 {
			v.errf(p+".flow_ids", "the plan's queue %s has %d memory regions; reordering needs a queue with exactly one (no header-data split)", q.Name, len(q.MemoryRegions))
			continue
		}
		src := v.regions[q.MemoryRegions[0]]
		if src == nil {
			continue
		}
		if r.Engine == ReorderEngineHW {
			// The NIC writes each packet's payload at its slot: no CPU or GPU reads the
			// queue's region, and no burst of the queue carries the batch's packets. A slot
			// is buf_size / packets_per_batch bytes of an output buffer.
			if ppb > 0 && out != nil && out.BufSize > 0 && out.BufSize < ppb {
				v.errf(p+".memory_region", "output region %s has buf_size %d: a hardware plan gives each of its %d slots buf_size / packets_per_batch bytes, at least one", out.Name, out.BufSize, ppb)
			}
			continue
		}
		v.reorderRegions(p, r, src, out)
		if r.PayloadByteOffset >= src.BufSize {
			v.errf(p+".payload_byte_offset", "must be smaller than the source region's buf_size (%s: %d), got %d", src.Name, src.BufSize, r.PayloadByteOffset)
			continue
		}
		if ppb > 0 && q.BatchSize > 0 && ppb > q.BatchSize {
			v.errf(p+".method", "packets_per_batch %d exceeds the batch_size %d of queue %s", ppb, q.BatchSize, q.Name)
		}
		if ppb > 0 && out != nil && out.BufSize > 0 {
			slot := int64(src.BufSize - r.PayloadByteOffset)
			if dt := r.DataTypes; dt != nil && dt.Input.Bits() > 0 && dt.Output.Bits() > 0 {
				slot = slot * 8 / int64(dt.Input.Bits()) * int64(dt.Output.Bits()) / 8
			}
			if need := slot * int64(ppb); int64(out.BufSize) < need {
				v.errf(p+".memory_region", "output region %s has buf_size %d; one batch needs %d (%d packets × %d bytes)", out.Name, out.BufSize, need, ppb, slot)
			}
		}
	}
}

// reorderRegions checks the memory kinds of a plan's source and output regions.
func (v *validator) reorderRegions(p string, r *Reorder, src, out *MemoryRegion) {
	switch r.Type {
	case ReorderGPU:
		if src.Kind != KindDevice && src.Kind != KindHostPinned {
			v.errf(p+".flow_ids", "a gpu plan reads packets from %s memory (region %s); it needs device or host_pinned", src.Kind, src.Name)
		}
		if out != nil && out.Kind != KindDevice && out.Kind != KindHostPinned {
			v.errf(p+".memory_region", "a gpu plan writes to device or host_pinned memory; region %s is %s", out.Name, out.Kind)
		}
		if out != nil && src.Kind == KindDevice && out.Kind == KindDevice && src.Affinity != out.Affinity {
			v.errf(p+".memory_region", "source region %s is on GPU %d but output region %s is on GPU %d", src.Name, src.Affinity, out.Name, out.Affinity)
		}
	case ReorderCPU:
		if !src.Kind.CPUAddressable() {
			v.errf(p+".flow_ids", "a cpu plan reads packets with the CPU; the queue's region %s is device memory", src.Name)
		}
		if out != nil && !out.Kind.CPUAddressable() {
			v.errf(p+".memory_region", "a cpu plan writes with the CPU; region %s is device memory (use host, host_pinned or huge)", out.Name)
		}
	}
}

// method checks a reorder method and returns its packets per batch (0 when invalid).
func (v *validator) method(p string, m *ReorderMethod) int {
	width := func(fp string, f BitField) bool {
		ok := true
		if f.Width < 1 || f.Width > 32 {
			v.errf(fp+".bit_width", "must be between 1 and 32, got %d", f.Width)
			ok = false
		}
		if f.Offset < 0 {
			v.errf(fp+".bit_offset", "must be ≥ 0, got %d", f.Offset)
			ok = false
		}
		return ok
	}
	switch m.Kind {
	case MethodSeqBatchNumber:
		mp := p + ".seq_batch_number"
		a := width(mp+".sequence_number", m.Seq)
		b := width(mp+".batch_number", m.Batch)
		if !a || !b {
			return 0
		}
		if m.Batch.Width > m.Seq.Width {
			v.errf(mp+".batch_number.bit_width", "batch_number (%d bits) is wider than sequence_number (%d bits): packets_per_batch = 2^seq_bits / 2^batch_bits must be ≥ 1", m.Batch.Width, m.Seq.Width)
			return 0
		}
		ppb := m.derivedPacketsPerBatch()
		if m.PacketsPerBatch != 0 && m.PacketsPerBatch != ppb {
			v.errf(mp, "packets_per_batch %d disagrees with 2^%d / 2^%d = %d", m.PacketsPerBatch, m.Seq.Width, m.Batch.Width, ppb)
		}
		return ppb
	case MethodSeqPacketsPerBatch:
		mp := p + ".seq_packets_per_batch"
		if !width(mp+".sequence_number", m.Seq) {
			return 0
		}
		n := m.PacketsPerBatch
		if n <= 0 {
			v.errf(mp+".packets_per_batch", "must be > 0, got %d", n)
			return 0
		}
		if n&(n-1) != 0 || int64(n) > int64(1)<<m.Seq.Width {
			v.errf(mp+".packets_per_batch", "must divide 2^%d (the sequence number range), got %d", m.Seq.Width, n)
			return 0
		}
		return n
	case "":
		v.errf(p, "a reorder config needs method (seq_batch_number or seq_packets_per_batch)")
	default:
		v.errf(p, "unknown reorder method %q (valid: seq_batch_number, seq_packets_per_batch)", m.Kind)
	}
	return 0
}

// dataTypes checks a plan's sample conversion. Conversion on a cpu plan is allowed: daqiri-go
// converts on the CPU too (upstream rejects it).
func (v *validator) dataTypes(p string, dt *DataTypes) {
	if dt == nil {
		return
	}
	in, out, end := p+".input_type", p+".output_type", p+".endianness"
	if v.given(p + ".input") {
		in = p + ".input"
	}
	if v.given(p + ".output") {
		out = p + ".output"
	}
	if v.given(p + ".input_endianness") {
		end = p + ".input_endianness"
	}
	switch dt.Input {
	case TypeInt4, TypeInt8, TypeInt16, TypeInt32:
	case "":
		v.errf(in, "data_types needs input_type (int4, int8, int16 or int32)")
	default:
		v.errf(in, "invalid input_type %q (valid: int4, int8, int16, int32)", dt.Input)
	}
	switch dt.Output {
	case TypeFP16, TypeBF16, TypeFP32, TypeFP64, TypeInt32:
	case "":
		v.errf(out, "data_types needs output_type (fp16, bf16, fp32, fp64 or int32)")
	default:
		v.errf(out, "invalid output_type %q (valid: fp16, bf16, fp32, fp64, int32)", dt.Output)
	}
	switch dt.Endianness {
	case "", EndianHost, EndianNetwork:
	default:
		v.errf(end, "invalid endianness %q (valid: host, network)", dt.Endianness)
	}
}

// reorderEngine checks reorder_engine, and what hardware reorder (upstream #290) takes: the
// NIC matches the whole sequence field exactly, one steering rule per slot, and writes raw
// bytes, so the plan needs a cyclic sequence over [0, packets_per_batch) in one 32-bit word
// of the frame after its Ethernet header, at most MaxHWReorderSlots slots, one flow and no
// conversion. Which engine serves the interface is checked when the session opens.
func (v *validator) reorderEngine(p string, r *Reorder, ppb int) {
	switch r.Engine {
	case "", ReorderEngineSW:
		return
	case ReorderEngineHW:
	default:
		v.errf(p+".reorder_engine", "invalid reorder_engine %q (valid: sw, hw)", r.Engine)
		return
	}
	switch {
	case r.Cyclic != nil:
		v.errf(p+".cyclic_sequence", "reorder_engine: hw matches only the sequence field, not an epoch; write cyclic_sequence: true (the sender cycles its sequence over [0, packets_per_batch))")
	case !r.CyclicSequence:
		v.errf(p+".cyclic_sequence", "reorder_engine: hw requires cyclic_sequence: true: each slot's steering rule matches one sequence value exactly (ConnectX-7 firmware takes flex parser samples as exact 32-bit matches), so the sender must cycle its sequence over [0, packets_per_batch)")
	}
	if r.Method.Kind != MethodSeqPacketsPerBatch {
		if r.Method.Kind != "" {
			v.errf(p+".method", "reorder_engine: hw takes method seq_packets_per_batch (the batch is one cycle of the sequence), not %s", r.Method.Kind)
		}
		return
	}
	mp := p + ".method." + string(MethodSeqPacketsPerBatch)
	seq := r.Method.Seq
	switch {
	case ppb > MaxHWReorderSlots:
		v.errf(mp+".packets_per_batch", "%d slots: reorder_engine: hw installs one steering rule per slot, at most %d", ppb, MaxHWReorderSlots)
	case seq.Width >= 1 && seq.Width < 32 && ppb > 1<<seq.Width:
		v.errf(mp+".packets_per_batch", "%d slots cannot be named by a %d-bit sequence_number", ppb, seq.Width)
	}
	switch {
	case seq.Width < 1 || seq.Width > 32 || seq.Offset < 0:
		// reported by method
	case seq.Offset < 14*8:
		v.errf(mp+".sequence_number.bit_offset", "bit %d lies in the Ethernet header; the NIC's flex parser samples the frame from byte 14 (after an untagged Ethernet header)", seq.Offset)
	case seq.Offset%8+seq.Width > 32:
		v.errf(mp+".sequence_number", "bits %d..%d span two 32-bit words; the flex parser samples one aligned-to-a-byte 32-bit word (bit_offset mod 8 + bit_width must be ≤ 32)", seq.Offset, seq.Offset+seq.Width-1)
	case seq.Offset/8-14+4 > 255:
		v.errf(mp+".sequence_number.bit_offset", "byte %d: the flex parser samples bytes 14..265 of the frame", seq.Offset/8)
	}
	if r.DataTypes != nil {
		v.errf(p+".data_types", "reorder_engine: hw places the received bytes as they are; conversion needs reorder_engine: sw")
	}
	if len(r.FlowIDs) > 1 {
		v.errf(p+".flow_ids", "reorder_engine: hw takes one flow (its steering rule forwards to the plan's slot rules); got %d", len(r.FlowIDs))
	}
}
