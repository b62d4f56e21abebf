package engine

import (
	"sync/atomic"

	"github.com/daqiri-go/daqiri/config"
)

// HWReorder is a reorder plan that the NIC runs (reorder_engine: hw, upstream #290): the
// engine steers each packet of the plan's flow to the slot its sequence number names, the
// NIC writes it at that slot's place in an output buffer, and the engine delivers each
// completed batch into Queue as one aggregate burst (FlagReordered, ReorderInfo), as the
// software plans of package reorder do. No CPU or GPU step moves a packet.
type HWReorder struct {
	Path   string          // the plan's key path (interfaces[i].rx.reorder_configs[k]), for errors
	Port   *Port           // the interface
	Queue  *RxQueue        // where aggregates are delivered: the queue the plan's flow names
	Config *config.Reorder // the plan
	FlowID uint32          // the flow's id (the tag of every aggregate)
	Flow   int             // the flow's index in rx.flows
	Out    *Region         // the output region: one buffer holds one batch
	Stats  HWReorderCounters

	// Sync, set by the engine, brings the counters the NIC keeps (duplicates, out of range)
	// into Stats and the queue's drop counts; nil until the engine runs the plan.
	Sync func()
}

// HWReorderCounters are a hardware plan's counters since it started.
type HWReorderCounters struct {
	Packets    atomic.Uint64 // packets placed into delivered aggregates
	Aggregates atomic.Uint64 // aggregates handed to the queue's ring
	Complete   atomic.Uint64 // aggregates with every slot filled
	Incomplete atomic.Uint64 // aggregates missing a slot: timed out, or a slot completed in error (FlagReorderTimeout)
	Missing    atomic.Uint64 // slots of delivered aggregates without a packet
	Duplicates atomic.Uint64 // packets the NIC dropped: their slot was already filled (or not yet re-armed)
	OutOfRange atomic.Uint64 // packets the NIC dropped: a sequence number no slot takes
	Malformed  atomic.Uint64 // packets the NIC completed in error (too long for the slot)
	NoBuffers  atomic.Uint64 // times a batch waited for a free output buffer
	NoMetadata atomic.Uint64 // aggregates dropped for want of burst metadata
	Dropped    atomic.Uint64 // incomplete batches dropped whole at timeout (missing_action: drop)
}
