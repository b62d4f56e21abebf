// Package datapath is the ConnectX model's data plane: completion queues, receive and send
// queues, RSS (RQT/TIR), TIS, steering (flow tables, groups, entries), packet reformat,
// pacing, counters, UAR doorbell decoding and the wire. The model's command handlers
// (package model) decode and validate PRM commands and call it with decoded parameters; it
// reaches host memory only through dma.Space, queue Memory and the control side's
// Translator (MKEYs), as a device's DMA engine reaches memory through the IOMMU. It never
// panics on what a driver or the wire gives it: a bad WQE is an error CQE, a bad command
// parameter an *Error with a PRM status.
//
// What it models, and where each behaviour comes from (cited again where implemented):
//
//   - CQ: 64-byte CQEs, owner bit = wrap parity of the producer counter (rdma-core cq.c,
//     mlx5dv.h), consumer counter in the doorbell record, arming by the UAR CQ doorbell with
//     one completion event per arm (kernel cq.h), overrun → CQ error event with syndrome 1
//     unless overrun-ignore (kernel eq.c). Compression: runs of RX CQEs that differ only in
//     what the mini-CQE carries become sessions — basic layout: title slot with format 3 and
//     the count in byte_cnt, mini-CQE arrays in the next slot and every eighth after, one
//     slot per CQE (kernel en_rx.c mlx5e_decompress_cqes_*, DPDK mlx5_rx.c
//     mlx5_rx_poll_len); enhanced layout: compressed CQEs of up to seven minis after a title
//     CQE, count in the opcode bits, validity iteration count instead of the owner bit (DPDK
//     mlx5_rx.c, check_cqe_iteration). Mini-CQE formats hash, checksum, flow tag + stride
//     index, checksum + stride index (device.h struct mlx5_mini_cqe8, DPDK mlx5_prm.h).
//   - RQ: cyclic, each WQE a scatter list of data segments ended by a zero byte count or
//     the invalid lkey (header-data split is a short first segment); striding, each WQE a
//     buffer of strides that packets fill in order, a filler CQE for strides a packet does
//     not fit in, CQEs with wqe_id, first stride and stride count (DPDK mlx5_rx.c
//     mlx5_rx_burst_mprq, kernel en_rx.c mlx5e_handle_rx_cqe_mpwrq). No posted WQE → the
//     frame is dropped and counted out of buffer (Q counter out_of_buffer).
//   - RX CQE fields: byte count, flow tag, RSS hash and hash type, L2/L3/L4 OK bits and
//     header types, VLAN stripping into vlan_info, checksum, timestamp free-running or
//     real-time (kernel en_rx.c, DPDK rxq_cq_to_mbuf); the frames a Step takes from the
//     inbox together share one reading of the clock (NIC.rxStamp).
//   - SQ: on a doorbell (the control segment's head written to the BlueFlame register) WQEs
//     up to the doorbell record's send counter are consumed: SEND with inline headers and
//     pointer/inline data segments, enhanced multi-packet WQEs, WAIT on time, NOP; checksum
//     offload (outer and inner), VLAN insertion, pacing by a rate-limit index; a requester
//     CQE only when the WQE's completion mode asks for one; a malformed WQE (zero-length
//     data segment, bad ds count, bad lkey, unknown opcode, inline headers beyond the WQE)
//     completes with an error CQE, puts the SQ in error, and the WQEs behind it are flushed
//     (kernel en/reporter_tx.c, MLX5.md).
//   - Steering: NIC RX and NIC TX tables with levels, groups of index ranges with match
//     criteria over fte_match_param (outer and inner L2–L4, misc: second VLAN, VXLAN VNI,
//     GRE; misc4: flex parser samples, flex.go), entries with drop, forward (TIR, deeper table, wire), flow tag, counters,
//     packet reformat; a miss goes to the miss table or takes the default (RX: drop,
//     counted; TX: the wire).
//   - RSS: indirect TIRs hash with Toeplitz (Microsoft's RSS specification) over the fields
//     the outer or inner selector picks and index the RQT with the hash's low bits.
//   - The wire: Cable (two ports, or one port's internal loopback), Bridge over an AF_PACKET
//     socket (package afpacket) to a Linux netdev. What a peer's stack left to its NIC
//     arrives finished, as a wire carries it: checksums completed (afpacket.Complete) and
//     GSO frames cut into segments by the LSO path's segmentation. Step processes pending
//     work deterministically; Run steps from a goroutine.
//   - Speed (issue 31): a Step serves the SQs rung since the last one and the frames
//     waiting in one batch under one hold of the port's lock, writes its CQEs at its end and
//     wakes a cabled peer once; no frame allocates (inbox buffers circulate between cabled
//     ports, steering parses into the port's own packet and match parameter); queue rings
//     and doorbell records are looked up once per change of the DMA space's mappings; RSS
//     hashes by a per-TIR Toeplitz table; in free-running mode an SQ doorbell does the
//     Step's work in the ringing thread when no Step holds the port; a striding RQ keeps
//     each WQE's buffer translated while the keys' generation stays (DirectTranslator);
//     received frames are written into host RX buffers with streaming stores on amd64, as
//     a NIC's DMA writes them (no read of the cold buffer lines, dmaWriter), summed as they
//     are written for the CQE's checks, and fenced once per Step before the first CQE that
//     publishes them; the checksum's bulk is summed with AVX2 where the CPU has it.
//     Every check stays as it was: each faster form is tested against the definition it
//     replaces.
//
// Inferred rather than documented (real hardware may differ): which CQEs the device
// compresses (the model compresses only CQEs equal outside what the mini-CQE carries,
// including the timestamp, and never fillers, error or send CQEs), the maximum session
// length (64) and seven minis per enhanced CQE, the holes an enhanced session leaves, the
// checksum value reported for CHECKSUM_COMPLETE (ones' complement sum from the L3 header
// on), the syndromes of malformed WQEs, what the device does when an RSS selector's L4
// protocol is not the packet's (hashes the IP fields selected), the inverted-XOR8 hash,
// that matching order across groups is the entry index, and that firmware rejects two
// entries with the same masked match in one group. The model does not do TSO, LRO,
// IPsec/TLS/MACsec, RDMA opcodes, symmetric hashing, send CQE compression or interrupt
// moderation.
package datapath
