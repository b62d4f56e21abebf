// Package model is a software ConnectX (mlx5) device: one PCI function with one Ethernet
// port, written so that a driver can be developed and tested against it without the
// hardware, through the same interfaces a real device offers. No ConnectX is reachable from
// this project's machines and no open-source emulator of one exists, so the model is held
// to NVIDIA-authored sources: every layout comes from package prm, whose fields are checked
// against the installed kernel and rdma-core headers, and every behaviour below names where
// it comes from.
//
// # What a driver sees
//
// BAR0 (Device.BAR0) is byte-addressed like a VFIO region: the initialization segment at
// offset 0 — firmware revision, command-interface revision 5, the command queue's address
// and geometry (32 entries of 64 bytes), the command doorbell, the initializing bit, the
// health buffer, the health counter, the free-running internal timer and the real-time clock
// (include/linux/mlx5/device.h struct mlx5_init_seg, mlx5_ifc.h initial_seg) — and UAR pages
// from index 2 on, whose CQ/EQ doorbells and BlueFlame registers go to the datapath. DMA
// (Device.DMA) is an I/O address space the driver maps its memory into, as a VFIO container
// does; every address in a command, a context, a WQE or a mailbox is looked up there, and
// an address outside every mapping is a fault that becomes a PRM error, never a panic.
//
// GPU memory: a mapping may be a window (DMAWindow, DMASpace.MapWindow) onto memory the host
// cannot address. The model writes a CUDA `device` allocation through the GPU's copy engine
// (cuMemcpyHtoDAsync on a stream of its own, synchronised before the CQE is written), not
// through a mapping: on an x86 host with a discrete GPU the driver offers no CPU mapping of
// device memory (the BAR1 mapping needs GDRCopy's kernel module, and the NVIDIA driver refuses
// to mmap a DMA-BUF of a GPU with its own framebuffer: open-gpu-kernel-modules nv-dmabuf.c
// nv_dma_buf_mmap), and the model, unlike a ConnectX, has no PCIe bus to write it peer to peer.
// host_pinned memory is host memory and is written with the CPU. A DMA-BUF fd registered
// through the in-process channel (modelch RegisterDMABuf) is resolved to the allocation it
// exports by mlx5/model/gpudma, which also says how; a bad one fails CREATE_UMEM with
// BAD_PARAM. In every run of this on a GPU host the model stood in for the ConnectX: no NIC
// wrote GPU memory.
//
// Commands reach the firmware model two ways, as on the real device: the command queue in
// host memory (entries with 16 inline bytes each way, chains of 1 KiB-aligned mailboxes with
// block numbers and tokens, the ownership bit, the delivery status, and a command-completion
// EQE with the completion vector; kernel drivers/net/ethernet/mellanox/mlx5/core/cmd.c,
// rdma-core providers/mlx5/mlx5_vfio.c), and Device.Exec, the "execute these PRM bytes" call
// that stands in for the DevX ioctls. Both run the same handlers and write the same output:
// status and syndrome (device.h MLX5_CMD_STAT_*), then the command's output layout.
//
// # What is modelled, and from which source
//
//   - Bring-up as mlx5_core (main.c mlx5_function_setup) and mlx5_vfio.c order it:
//     ENABLE_HCA, QUERY_ISSI/SET_ISSI (ISSI 0 and 1), QUERY_PAGES for boot, init and regular
//     pages with MANAGE_PAGES give/take and page accounting (pagealloc.c), page-request
//     EQEs (device.h struct mlx5_eqe_page_req; Device.RequestPages), ACCESS_REG of the host
//     endianness register (driver.h MLX5_REG_HOST_ENDIANNESS), QUERY_HCA_CAP/SET_HCA_CAP for
//     the general, Ethernet-offload, flow-table and QoS capability pages, INIT_HCA,
//     TEARDOWN_HCA (graceful, force, prepare-fast, with the NIC interface state mlx5_vfio.c
//     polls), DISABLE_HCA, QUERY/MODIFY_NIC_VPORT_CONTEXT (permanent MAC, MTU, promiscuous
//     bits), QUERY_VPORT_STATE and QUERY_VPORT_COUNTER. Commands out of order get
//     BAD_SYS_STATE.
//   - What Linux's mlx5_core and mlx5e send at probe besides (main.c, lib/vxlan.c, port.c,
//     en/port.c, en_stats.c; TestKernelProbeSequence replays it): QUERY_ADAPTER,
//     ADD/DELETE_VXLAN_UDP_DPORT (4789), and the port registers PTYS, PAOS (admin status,
//     which QUERY_VPORT_STATE follows), PMTU, PFCC, PMLP and PPCNT (the 802.3 group).
//   - Every command the model does not implement is answered with BAD_OP and
//     SyndromeBadOpcode; a register, capability page or mode it does not model with
//     BAD_PARAM and SyndromeNotModelled; an op_mod a command does not have with BAD_PARAM
//     and SyndromeBadOpMod. They are counted in Device.Unimplemented, and every command
//     reaches Config.CommandLog (docs/MLX5-CONFORMANCE.md lists what the drivers send). Device.Fail puts firmware in a fatal state: health syndrome set, health
//     counter stopped (what mlx5_core's poll_health watches), commands answered INT_ERR.
//   - Objects with firmware-like checks (mlx5_ifc.h layouts): UAR, PD, transport domain,
//     UMEM, MKEY (PA, MTT, and over a UMEM), EQ (event bitmask, owner bit per lap as eq.c reads it, arming
//     through the UAR doorbell, an interrupt callback per armed EQ), Q counters, CQ, RQ
//     (cyclic and striding), SQ, RQT, TIR (direct and Toeplitz RSS), TIS, NIC RX/TX flow
//     tables, groups and entries, flow counters, packet reformat contexts, packet pacing
//     indexes and the flex parser's parse-graph nodes (general object FLEX_PARSE_GRAPH,
//     flex.go: DPDK's mlx5_prm.h layouts, fixed-length nodes entered from MAC or UDP,
//     fixed-offset samples whose ids QUERY_GENERAL_OBJECT returns). Sizes beyond the capabilities, unknown or foreign object numbers, objects still
//     in use, malformed contexts and illegal queue state transitions get the PRM status and a
//     syndrome; short inputs get BAD_INP_LEN and short outputs BAD_OUTP_LEN.
//   - UMEM-backed queues and keys, as DevX drivers make them (DPDK mlx5_devx.c): a CQ's ring
//     (cq_umem_id/offset), an RQ's or SQ's ring (wq_umem_id/offset) and any of their doorbell
//     records (dbr_umem_id; dbr_addr is then an offset into that UMEM) in registered memory,
//     and MKEYs translating through a UMEM (mkey_umem_id/offset). These fields are newer than
//     Linux 6.1's mlx5_ifc.h; package prm takes them from DPDK's mlx5_prm.h and its layout
//     test checks that they lie in the installed header's reserved bits. An unknown or
//     foreign UMEM is BAD_RES; a range past the UMEM's end, a ring offset not 64-byte
//     aligned, a doorbell record not 8-byte aligned, or a UMEM key not in MTT mode, with an
//     MTT list of its own or length64 is BAD_PARAM; a UMEM in use is RES_BUSY to destroy.
//   - The datapath (package internal/datapath, which documents its own sources): CQEs with
//     owner bit and compression in both layouts, RQs with scatter and striding with filler
//     CQEs, SQs with SEND, inline headers, eMPW, WAIT-on-time, checksum offload, VLAN insert,
//     reformat and pacing, steering and RSS (flow entries with VLAN pop/push, L2 decap, L3
//     tunnel to L2 and encap reformats; SET_FLOW_TABLE_ROOT op_mod 1 disconnects a root),
//     timestamps, counters, the wire (Device.Cable for two ports or internal loopback,
//     Device.SetWire, Device.Bridge to a netdev, which finishes the checksums and segments
//     the GSO frames a peer's stack leaves to its NIC).
//   - Time: deterministic by default (the clock moves only by Device.Advance and the
//     datapath only by Device.Step), or free-running (Config.Realtime, Device.Run).
//
// # Where real hardware may differ (inferred, not documented)
//
// The public sources give layouts and driver behaviour, not firmware's rules; these are the
// model's own choices, each a plausible reading, and each a place a driver written against
// the model could still meet a surprise on hardware:
//
//   - Syndromes are the model's (Syndrome* constants): firmware's are undocumented hashes.
//     Drivers must act on the status only.
//   - Capability values (Config and defaultCaps) are chosen, not copied from a device; the
//     bits SET_HCA_CAP may change are those the drivers set. Page counts for boot and init
//     are configuration (defaults 32 and 64).
//   - The BAR is 1 MiB, UAR indices start at 2 (the init segment reaches into page 1), the
//     health counter ticks every 100 ms of device time, the initializing bit clears after
//     Config.InitializingReads reads, and commands complete synchronously inside the
//     doorbell store.
//   - Mailbox and entry signatures are not checked (mlx5_core disables checksums, and the
//     model reports cmdif_checksum 0); a mailbox chain the model cannot read is reported as a
//     pointer-alignment delivery error, which is the nearest status the kernel names. An
//     output may be as short as its status and syndrome (8 bytes): the drivers' ENABLE_HCA
//     output is 12.
//   - A command-completion EQE goes to the EQ that asked for command events and existed
//     before the command ran: the CREATE_EQ that makes the command EQ is not reported on it
//     (mlx5_core polls for that one).
//   - Memory handed to firmware (pages, PAS lists, doorbell records, MTT entries) must be
//     mapped when the command runs, or the command fails with BAD_PARAM; hardware would take
//     the fault later, on first access.
//   - uid rules: an object belongs to the uid that created it; uid 0 (a kernel or VFIO
//     driver) may use and destroy anything, and others may use uid 0's objects (from the
//     kernel's devx.c uid stamping).
//   - An EQ that is full loses the event and is marked overrun; arming an EQ that holds
//     unconsumed EQEs raises its interrupt at once.
//   - The UMEM rules above (alignment, which mode a UMEM key uses) are the model's reading
//     of how DPDK fills these fields, not firmware documentation.
//   - A buffer that an MTT or UMEM key maps over pages that do not follow each other in I/O
//     address space fails with a protection error (the model hands the datapath one
//     contiguous view); hardware walks any page list. Registered memory mapped in one piece,
//     as the transports map it, never meets this.
//   - MODIFY_TIR replaces the whole context; object numbers are not reused until their
//     space wraps; the vport is operationally up while the port has a wire, and its counters
//     report all traffic as unicast; a failed device still completes commands (INT_ERR).
//
// # Not modelled
//
// KLM/KSM keys, UMR, 128-byte CQEs, CQ resize, RMPs, QPs and RDMA, LRO, LSO, the extended
// striding-RQ stride range, other vports and the eswitch, registers other than those above,
// filtering by the vport context's address lists (kept and reported), PORT_CHANGE events, PCI
// configuration space and the MSI-X table (Config.Interrupt stands in; package pcidev serves
// them), and more than one function per device.
package model
