// Package roce is the RoCE engine: stream_type socket with roce:// endpoints
// and roce_config transport_mode RC or UC, in pure Go over package verbs
// (queue pairs, memory regions, the rxe datapath) and package rdmacm
// (connection setup).
//
// # Model
//
// A server interface binds its local_addr and listens (backlog = its RX
// queues); a client interface binds its local_addr and connects on demand
// (Engine.Connect, upstream rdma_connect_to_server). Each interface has one
// connection slot per RX queue (per TX queue when it has no RX queue); slot
// k carries one connection on RX queue k and TX queue k mod #TX. A server claims its
// accepted connections one by one with ClaimServerConn (upstream
// rdma_get_server_conn_id).
//
// Every memory region the interface's queues use is registered as an MR on
// the interface's RDMA device: host, huge and host_pinned memory with
// REG_MR, device memory through a DMA-BUF MR where the driver supports one
// (rxe does not: Open then fails with an error matching ErrNoDMABuf).
// Regions whose access grants rdma_write or rdma_read are advertised to
// daqiri peers at connect (at most 16), so WRITE and READ can name remote
// memory by region name; peers that do not speak this protocol (rping,
// perftest) are addressed by address and rkey instead.
//
// # Bursts
//
// Receiving needs no posting by the application: each connection keeps
// receive buffers from its RX queue's region posted, and received messages
// arrive as RX bursts (one packet per message, opcode OpReceive, ConnID set).
// A TX burst is sent with Send: one work request per packet, one
// scatter/gather element per segment, with the opcode of its Header (SetHeader;
// SEND by default). WRITE writes the packets back to back into the peer's
// memory; WRITE_IMM additionally notifies the peer (a one-packet burst of
// opcode OpWriteImm on its RX queue); READ fills the packets from the peer's
// memory and comes back on the connection's RX queue when done. Buffers of
// sent bursts return to their region when the device is done with them.
//
// Send posts in the caller's thread and never blocks: a full send queue is
// ErrNotReady (retry), a lost connection ErrDisconnected. One worker per
// connection, pinned to its queue's cpu_core, polls the completion queue,
// spinning briefly and then sleeping on the completion channel.
//
// # Tunables and behaviour
//
// DAQIRI_RDMA_SEND_SIGNAL_EVERY=N requests a completion for one send in N;
// DAQIRI_RDMA_MIN_RNR_TIMER (default 12, 0.64 ms) replaces the connection
// manager's RNR timer of 0 (655 ms) so a receiver that falls behind for a
// moment does not stall the stream. RC connections use an ACK timeout of
// about 67 ms with 7 retries. A peer that disconnects or dies (its kernel
// disconnects its connections) is noticed from the rdma_cm event: the
// connection's error (ConnErr) becomes ErrDisconnected and its QP, CQ,
// completion channel, internal MR and rdma_cm ID are released while the
// engine's other connections carry on.
//
// Per-queue statistics count packets and bytes; drops are counted with the
// engine's reasons (engine.Counters) and with upstream's RDMA reason labels
// (Engine.Drops).
package roce
