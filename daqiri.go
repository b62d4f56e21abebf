// Package daqiri moves Ethernet packets between the network and CPU or GPU memory in bursts,
// with the configuration and concepts of NVIDIA DAQIRI, in pure Go.
//
// A Session is opened from a configuration (package config): memory regions are allocated
// outside the Go heap, queues are set up and the engines' workers start. Received packets
// arrive in bursts (RxBurst) that the application frees when done; packets are sent by taking
// a TX burst (TxBurst), filling it and handing it to Send. Several sessions can live in one
// process.
//
// The examples below run as any user on any Linux machine: the software loopback, UDP over
// the loopback interface, the ConnectX device model, reorder, timed send, metrics. The
// examples/ directory of the module holds whole programs: receiving into GPU memory with
// header-data split, a paced sender, capture to pcapng with rotation, and an application
// tested against the device model instead of its NIC.
//
// # Engines
//
// Each interface of a configuration runs on one engine, chosen from its stream_type and
// address (config.Config.ResolveEngine). What each needs on the machine, and what it was
// tested on (the README's table, [Engines], lists each engine's features):
//
//   - socket (stream_type socket, udp:// and tcp:// endpoints): Linux, any user. Tested on
//     this project's 2-core x86 VM and on the 16-vCPU Xeon host of an NVIDIA H200 (against
//     iperf3: BENCHMARKS.md).
//   - xdp (stream_type raw on a Linux netdev): root (it loads an XDP program and opens
//     AF_XDP sockets), buffers of 2048 to 4096 bytes. Tested on veth pairs in network
//     namespaces (copy mode); never on a physical NIC.
//   - loopback (loopback: sw): nothing; any user, any machine. Tested everywhere the tests
//     run.
//   - roce (roce:// endpoints): an RDMA device with RoCE — a ConnectX, or Soft-RoCE (rxe),
//     which root creates — and the rdma_ucm module (/dev/infiniband/rdma_cm). Tested on
//     Soft-RoCE in a qemu guest, against rdma-core's rping too; never on a ConnectX.
//   - mlx5 (model:N, vfio+model:N, loopback: hw; a PCI address or RDMA device name): the
//     device model (model:N) needs nothing — any user, in process, the way to test an
//     application without a NIC (examples/model-test); model:N@IFNAME needs root to bridge
//     to the netdev. A ConnectX needs the mlx5_ib kernel driver (the DevX transport) and
//     access to its /dev/infiniband device. Tested against the device model in process, and
//     over DevX against Linux 6.1's mlx5_ib in a qemu guest with the model served as the PCI
//     device; never on a ConnectX.
//
// GPU memory (host_pinned and device regions, GPU reorder plans) needs an NVIDIA GPU and its
// driver (libcuda.so.1, loaded at run time: no cgo); receiving into device memory also needs
// a NIC that writes GPU memory (GPUDirect RDMA). Tested on an NVIDIA H100 and an NVIDIA H200.
//
// [Engines]: https://github.com/daqiri-go/daqiri#engines
package daqiri

import (
	"net"
	"net/netip"

	"github.com/daqiri-go/daqiri/engine"
)

// Version is the daqiri-go release, in upstream's YYYY.MM.PATCH form.
const Version = "2026.11.0"

// Burst is a batch of packets on one queue; see engine.Burst for its methods.
type Burst = engine.Burst

// UDPv4Header is an Ethernet + IPv4 + UDP header prepared once for Burst.SetUDPv4Header.
type UDPv4Header = engine.UDPv4Header

// NewUDPv4Header prepares a header for Burst.SetUDPv4Header; see engine.NewUDPv4Header.
func NewUDPv4Header(dst, src net.HardwareAddr, srcIP, dstIP netip.Addr, srcPort, dstPort uint16) (*UDPv4Header, error) {
	return engine.NewUDPv4Header(dst, src, srcIP, dstIP, srcPort, dstPort)
}

// Status is a DAQIRI status code; every failure status is an error.
type Status = engine.Status

// Flags are burst flags.
type Flags = engine.Flags

// ReorderInfo describes a reorder aggregate burst.
type ReorderInfo = engine.ReorderInfo

// QueueStats is a snapshot of one queue's counters.
type QueueStats = engine.QueueStats

// Burst flags.
const (
	FlagReordered      = engine.FlagReordered
	FlagReorderTimeout = engine.FlagReorderTimeout
)

// Errors, one per DAQIRI failure status; test with errors.Is.
var (
	ErrNullPtr             = engine.ErrNullPtr
	ErrNoFreeBurstBuffers  = engine.ErrNoFreeBurstBuffers
	ErrNoFreePacketBuffers = engine.ErrNoFreePacketBuffers
	ErrNotReady            = engine.ErrNotReady
	ErrInvalidParameter    = engine.ErrInvalidParameter
	ErrNoSpaceAvailable    = engine.ErrNoSpaceAvailable
	ErrNotSupported        = engine.ErrNotSupported
	ErrGenericFailure      = engine.ErrGenericFailure
	ErrConnectFailure      = engine.ErrConnectFailure
	ErrInternalError       = engine.ErrInternalError
)

// StatusOf maps an error to the DAQIRI status it carries.
func StatusOf(err error) Status { return engine.StatusOf(err) }
