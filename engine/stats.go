package engine

import (
	"sync/atomic"

	"github.com/daqiri-go/daqiri/internal/ring"
)

// DropReason says why a packet was dropped.
type DropReason uint8

// Drop reasons. Every packet an engine sees is either delivered or counted under one of these.
const (
	DropRingFull        DropReason = iota // the queue's ring to the application was full
	DropNoBurstBuffers                    // no free burst metadata
	DropNoPacketBuffers                   // no free packet buffer in the queue's region
	DropTruncated                         // larger than the buffer (received truncated)
	DropMalformed                         // unparsable frame or bad framing
	DropSendFailure                       // the kernel or NIC refused to send
	DropSocketOverflow                    // the kernel dropped it: socket receive buffer full
	DropNotConnected                      // no peer to send to
	DropClosed                            // in flight when the session closed
	DropFiltered                          // matched a drop rule (drop_all_traffic)
	DropOther                             // any other reason, logged by the engine
	DropDuplicate                         // reorder: a second packet for a slot already filled
	DropLate                              // reorder: the packet's batch was already delivered
	DropIncomplete                        // reorder: its batch was incomplete when flushed, under missing_action: drop
	DropPeerFiltered                      // a UDP server's datagram from a peer other than its remote_addr
	DropOutOfRange                        // hardware reorder: a sequence number no slot of the batch takes
	NumDropReasons
)

var dropNames = [NumDropReasons]string{
	"rx_ring_full", "no_burst_buffers", "no_packet_buffers", "truncated", "malformed",
	"send_failure", "socket_overflow", "not_connected", "closed", "filtered", "other",
	"duplicate", "late", "incomplete", "peer_filtered", "out_of_range",
}

// String is the reason's metric label.
func (r DropReason) String() string {
	if r < NumDropReasons {
		return dropNames[r]
	}
	return "unknown"
}

// Counters are one queue's statistics, updated by workers and application calls (a
// queue's Sends can come from several goroutines at once) and read at any time by Stats.
//
// Add runs once per burst on the burst path, twice per burst on a loopback. Three atomic
// adds cost three locked instructions (each a full barrier on amd64, ~6.5 ns on the GPU
// host); Add instead takes the counters' lock with one compare-and-swap, adds to the owned
// halves of Packets, Bytes and Bursts with release stores (plain MOVs on amd64) and releases
// the lock with one more — the scheme of ring.Front's cache. A caller that finds the lock
// held (another Add in progress) adds to the shared halves atomically instead of waiting, so
// Add never blocks. Readers load both halves of a Counter atomically: each half only
// grows, so every reading is at least the one before, and once writers stop the sum is
// exact.
type Counters struct {
	Packets Counter
	Bytes   Counter
	Bursts  Counter
	lock    uint32 // 1 while an Add owns the owned halves
	drops   [NumDropReasons]atomic.Uint64
}

// Counter is one statistic of Counters: the sum of a half only the holder of the counters'
// lock adds to and a half anyone adds to atomically.
type Counter struct {
	// shared first: atomic.Uint64 makes the struct 8-byte aligned on 32-bit platforms too,
	// so owned, at offset 8, can be loaded with atomic.LoadUint64 there.
	shared atomic.Uint64
	owned  uint64 // written by the lock's holder with release stores, loaded atomically
}

// Load is the counter's value.
func (c *Counter) Load() uint64 { return atomic.LoadUint64(&c.owned) + c.shared.Load() }

// Add adds n atomically (an event counted outside Counters.Add, by an engine).
func (c *Counter) Add(n uint64) { c.shared.Add(n) }

// Add counts n packets of total bytes handed on (delivered to the app, or sent).
func (c *Counters) Add(n, bytes int) {
	if atomic.CompareAndSwapUint32(&c.lock, 0, 1) {
		// The owned halves are ours: a plain read of each is the last value written, by us
		// or by an earlier holder whose release of the lock our CAS observed.
		ring.StoreRelease64(&c.Packets.owned, c.Packets.owned+uint64(n))
		ring.StoreRelease64(&c.Bytes.owned, c.Bytes.owned+uint64(bytes))
		ring.StoreRelease64(&c.Bursts.owned, c.Bursts.owned+1)
		ring.StoreRelease32(&c.lock, 0)
		return
	}
	c.addShared(n, bytes)
}

// addShared is Add for a caller that found the lock held.
func (c *Counters) addShared(n, bytes int) {
	c.Packets.shared.Add(uint64(n))
	c.Bytes.shared.Add(uint64(bytes))
	c.Bursts.shared.Add(1)
}

// Drop counts n packets dropped for a reason.
func (c *Counters) Drop(r DropReason, n int) {
	if n > 0 {
		c.drops[r].Add(uint64(n))
	}
}

// Drops is the count for one reason.
func (c *Counters) Drops(r DropReason) uint64 { return c.drops[r].Load() }

// Snapshot copies the counters.
func (c *Counters) Snapshot() QueueStats {
	s := QueueStats{Packets: c.Packets.Load(), Bytes: c.Bytes.Load(), Bursts: c.Bursts.Load()}
	for r := DropReason(0); r < NumDropReasons; r++ {
		if v := c.drops[r].Load(); v != 0 {
			if s.Drops == nil {
				s.Drops = map[string]uint64{}
			}
			s.Drops[r.String()] = v
			s.Dropped += v
		}
	}
	return s
}

// QueueStats is a snapshot of one queue's counters.
type QueueStats struct {
	Queue   int               `json:"queue"`             // the queue id (set by the session's Stats)
	Deleted bool              `json:"deleted,omitempty"` // deleted at run time (its final counters)
	Packets uint64            `json:"packets"`
	Bytes   uint64            `json:"bytes"`
	Bursts  uint64            `json:"bursts"`
	Dropped uint64            `json:"dropped"`
	Drops   map[string]uint64 `json:"drops,omitempty"` // by reason
	// RingUsed is the number of bursts waiting in the queue's ring (RX).
	RingUsed int `json:"ring_used"`
}

// PortEvents are a port's counters that belong to no queue, updated atomically by workers.
type PortEvents struct {
	ConnsAccepted      atomic.Uint64 // TCP connections accepted
	ConnsRefused       atomic.Uint64 // TCP connections refused: max_connections reached
	ConnsFrameTooLarge atomic.Uint64 // TCP connections closed: a frame length above max_payload_size
	// AFXDPCopyMode and AFXDPZeroCopy count a port's AF_XDP sockets by how they bound: zero-
	// copy is asked for first and copy mode is the fallback where the driver lacks it.
	AFXDPCopyMode, AFXDPZeroCopy atomic.Uint64
	// KernelPassed reads the count of received frames handed to the kernel network stack
	// instead of a queue (XDP with flow_isolation: frames no flow matches); nil when the
	// engine has none.
	KernelPassed func() uint64
}

// Snapshot is the non-zero counters by name (nil when all are zero).
func (e *PortEvents) Snapshot() map[string]uint64 {
	var m map[string]uint64
	put := func(k string, v uint64) {
		if v != 0 {
			if m == nil {
				m = map[string]uint64{}
			}
			m[k] = v
		}
	}
	put("connections_accepted", e.ConnsAccepted.Load())
	put("connections_refused_max_connections", e.ConnsRefused.Load())
	put("connections_closed_frame_too_large", e.ConnsFrameTooLarge.Load())
	put("afxdp_copy_mode_sockets", e.AFXDPCopyMode.Load())
	put("afxdp_zero_copy_sockets", e.AFXDPZeroCopy.Load())
	if e.KernelPassed != nil {
		put("kernel_passed", e.KernelPassed())
	}
	return m
}
