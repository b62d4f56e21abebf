package config

// This file fixes the package's public surface so that engines can be written against it
// while the loader is being filled in.

// Engine names accepted by `engine:` (upstream names plus daqiri-go's own).
const (
	EngineDefault  = "default"  // choose from stream_type, loopback and interface addresses
	EngineSocket   = "socket"   // kernel UDP/TCP sockets (udp://, tcp://)
	EngineRoCE     = "roce"     // RDMA RC/UC over verbs (roce://); upstream "ibverbs" on socket streams
	EngineXDP      = "xdp"      // AF_XDP raw Ethernet on a Linux netdev
	EngineLoopback = "loopback" // software loopback for raw streams (`loopback: sw`)
	EngineMLX5     = "mlx5"     // raw Ethernet on ConnectX queues; upstream "ibverbs" on raw streams
	EngineDPDK     = "dpdk"     // upstream's DPDK engine: accepted by the parser, not available
)

// source keeps what is needed to point an error at a YAML line.
type source struct {
	name string         // file name or "<input>"
	pos  map[string]pos // key path → position of the key (or of the value for list items)
	data []byte         // the document as parsed, for decoding application sections
	apps []string       // top-level keys beside `daqiri`, in document order
}

type pos struct{ line, col int }
