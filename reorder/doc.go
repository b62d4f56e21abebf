// Package reorder is daqiri's RX reorder and aggregation service (upstream
// rx.reorder_configs): packets that carry a sequence number are gathered into batches, each
// packet's payload lands at the slot its sequence number names, optionally converted from
// int4/int8/int16/int32 samples to fp16, bf16, fp32, fp64 or int32, and every batch reaches
// the application as one aggregate burst (flag FlagReordered) with a ReorderInfo.
//
// # Batches
//
// A plan's sequence_number and batch_number fields are big-endian bit fields counted from
// the first bit of the packet as the engine delivers it (the Ethernet frame on raw streams,
// the datagram on socket streams). The slot is the sequence number modulo packets_per_batch.
// The batch is the batch_number field (method seq_batch_number) or the sequence number
// divided by packets_per_batch (seq_packets_per_batch); both wrap around, and the plan
// unwraps them relative to the newest batch it has seen. Up to Options.MaxInFlight batches
// are assembled at once. A batch is delivered when every slot is filled, when its timeout
// (counted from its first packet) passes, or when a packet of a newer batch needs its place;
// the last two set FlagReorderTimeout. Missing slots are zero-filled and reported in
// ReorderInfo.Present and Missing. A second packet for a filled slot is dropped as a
// duplicate. A packet is dropped as late when its batch was already delivered, when its batch
// is more than 63 batches older than the newest one seen, or when starting its batch would
// flush a newer one. Both are counted in the plan's Stats and as the queue's drop reasons
// "duplicate" and "late". An older batch that was never seen still starts: its packets may
// just have been overtaken.
//
// Batch numbers are unwrapped by distance: one up to (keys-1)/2 batches behind the newest
// counts as older, anything else as newer, where keys is the number of distinct batch
// numbers. With one or two batch numbers (for example packets_per_batch = 2^seq_bits)
// nothing can be told late: a packet whose batch was delivered starts the next one.
//
// # Missing packets and cyclic sequences
//
// missing_action says what becomes of a batch still incomplete when it is flushed (timeout,
// or room for newer batches): passthrough (the default, as above) delivers it zero-filled
// with its presence bitmap; drop discards it whole, counting the batch in Stats.Dropped and
// its packets under the queue's drop reason "incomplete". Either way the batch counts as
// delivered, so its stragglers are late. ReorderInfo.MissingSlots lists the slots a
// delivered batch lacks.
//
// cyclic_sequence names an epoch field that the sender increments whenever its sequence
// wraps. The epoch becomes the high bits of the batch key (batch bits + epoch bits ≤ 32), so
// numbers unwrap over the whole epoch cycle: a late packet of the previous cycle is told late
// (or gets its own aggregate of its own epoch) instead of landing in the new cycle's batch of
// the same number, and a sequence that restarts in the middle of a batch yields two
// aggregates, one per epoch. ReorderInfo.Epoch reports it; BatchID stays the batch number.
// GPU plans share all of this with CPU plans (only the copying differs), so both deliver and
// drop the same batches.
//
// The payload of a slot is the packet's bytes after payload_byte_offset. Its length is taken
// from the batch's first packet; a later packet that is longer is cut, one that is shorter is
// zero-padded (counted as Resized). A packet too short to hold the fields, with no payload,
// or whose payload is not a whole number of samples is dropped as malformed.
//
// # Where it runs
//
// A cpu plan copies (or converts) each payload as it arrives, in the engine's worker, and
// frees the packet at once (when every plan of the queue is a cpu plan, with the rest of its
// burst, in bulk, as soon as the burst has been through the plans). A gpu plan keeps the
// packets and, when a batch is complete, runs one kernel (kernels/reorder.cu, compiled to the
// committed kernels/reorder.ptx and loaded through package cudart) that writes the whole
// aggregate, zero-filling missing slots; the aggregate is delivered once the kernel has
// finished, so an application never sees unfinished GPU output and needs no CUDA stream of
// its own. Both produce the same bytes.
//
// A plan with reorder_engine: hw is not this package's: the NIC places each packet (engine
// mlx5, see config/SCHEMA.md "Hardware reorder"), and the session reports its counters in
// the same Stats (OutOfRange is its own).
//
// # Conversions
//
// Every conversion rounds once, to nearest with ties to even, straight from the integer
// (see Conversion). On amd64 CPUs with AVX2 and F16C the cpu plans convert whole blocks of
// 16 samples with vector loops (convert_amd64.s) and the rest with the generated scalar loops
// (convert_loops.go), which are all that other architectures and builds tagged purego use; the
// two give the same bytes.
package reorder
