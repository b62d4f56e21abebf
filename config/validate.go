package config

import (
	"math/bits"
	"strings"
)

// Limits daqiri-go adds where upstream has none, to catch absurd values early.
const (
	MaxMetaBuffers = 1 << 20 // rx_meta_buffers / tx_meta_buffers
	MaxRegionBytes = 1 << 46 // num_bufs × buf_size of one memory region (64 TiB)
	// MaxNumBufs bounds a region's num_bufs (16 Mi buffers). The buffer pool links its free
	// buffers through an array of one 8-byte word per buffer, written whole at Open: at
	// 2^31−1 buffers that is 16 GiB touched before the first packet, and the process is
	// killed for memory instead of getting an error. 2^24 costs at most 128 MiB per region
	// and still holds 2^24 × 9 KiB jumbo buffers (144 GiB) in one region.
	MaxNumBufs = 1 << 24
	// MaxTotalBufs bounds the buffers of all memory regions together (64 Mi: 512 MiB of
	// pool links), those added at run time included, for the same reason: a configuration
	// of many regions at MaxNumBufs each would still exhaust memory at Open.
	MaxTotalBufs = 1 << 26
	// MaxBufSize bounds buf_size (the YAML integer type's range, stated for configs built
	// in code too).
	MaxBufSize    = 1<<31 - 1
	MaxFlexOffset = 28 // largest flex item offset (bytes after the UDP header)

	MaxSocketPayload = 1 << 30 // max_payload_size of TCP and RoCE endpoints

	// MaxBatchSize bounds a queue's batch_size. Upstream takes any positive int and sizes each
	// burst's packet arrays by it (so 2^31-1 asks for gigabytes per burst); its own examples
	// use at most 10240. A batch also never exceeds the buffers of its queue's regions.
	MaxBatchSize = 1 << 16
	// MaxTimeoutUs bounds timeout_us (one hour): larger values overflow a time.Duration long
	// before they mean anything for a partial burst.
	MaxTimeoutUs = 3_600_000_000
	// MaxConnections is the default cap on a TCP server endpoint's live connections
	// (socket_config.max_connections), upstream's listen backlog and RoCE connection limit.
	MaxConnections = 128
	// MaxConfigBytes is the largest configuration file LoadFile reads; upstream's examples
	// are a few KiB.
	MaxConfigBytes = 4 << 20
)

// Transform overhead on the wire, in bytes (upstream engine.cpp).
const (
	overheadVLAN  = 4
	overheadVXLAN = 50
	overheadGRE   = 38
	overheadNVGRE = 42
)

// Validate checks the whole configuration — every rule of the schema that can be decided
// without opening a device, including the engine-level rules upstream only applies in some
// engines (flows, poll modes, reorder plans) since the engine of every interface follows
// from the configuration (ResolveEngine). It works on configurations built in code as well as
// on parsed ones; for the latter errors carry file positions. Zero values of defaultable
// fields count as their defaults (see SetDefaults).
//
// All problems are reported: the error is an Errors list, sorted by position. Validate also
// recomputes Config.Warnings.
func (c *Config) Validate() error {
	if c == nil {
		return Errors{{Msg: "nil configuration"}}
	}
	if errs := c.check(); len(errs) > 0 {
		return sortErrors(errs)
	}
	return nil
}

// check runs every validation rule, sets c.Warnings and returns the errors unsorted.
func (c *Config) check(failed ...string) Errors {
	v := &validator{c: c, regions: map[string]*MemoryRegion{}, used: map[string]bool{}, failed: failed}
	v.run()
	c.Warnings = nil
	for _, w := range sortErrors(v.warns) {
		c.Warnings = append(c.Warnings, w.Error())
	}
	return v.errs
}

// validator accumulates errors and warnings over one configuration.
type validator struct {
	c       *Config
	errs    Errors
	warns   Errors
	regions map[string]*MemoryRegion
	used    map[string]bool // memory regions referenced by a queue or reorder plan
	proto   Protocol        // protocol of the first socket endpoint
	protoAt string
	failed  []string // key paths whose YAML could not be decoded (Parse only)
	// runtime: the region or queue is added to an open session (CheckMemoryRegion,
	// CheckQueue), where cpu_core is optional and poll_mode direct is refused.
	runtime bool
}

// broken reports whether decoding failed at or under path: references into such a part
// (a memory region name, a queue id, a flow id) cannot be checked meaningfully.
func (v *validator) broken(path string) bool {
	for _, f := range v.failed {
		if underPath(f, path) {
			return true
		}
	}
	return false
}

func (v *validator) errf(path, format string, args ...any) {
	v.errs = append(v.errs, v.c.Errorf(path, format, args...))
}

func (v *validator) add(e *Error) {
	if e != nil {
		v.errs = append(v.errs, e)
	}
}

func (v *validator) warnf(path, format string, args ...any) {
	v.warns = append(v.warns, v.c.Errorf(path, format, args...))
}

// given reports whether path was written in the YAML input (always false for code configs).
func (v *validator) given(path string) bool { return v.c.src.has(path) }

var logLevels = map[string]bool{"trace": true, "debug": true, "info": true, "warn": true, "error": true, "critical": true, "off": true}

func (v *validator) run() {
	c := v.c
	if c.Version != 1 {
		if c.Version == 0 && !v.given("version") {
			v.errf("version", "version is required (the schema version, 1)")
		} else {
			v.errf("version", "must be 1 (the only schema version), got %d", c.Version)
		}
	}
	v.add(c.streamTypeError())
	v.add(c.engineNameError())
	v.add(c.loopbackError())
	if c.LogLevel != "" && !logLevels[strings.ToLower(c.LogLevel)] {
		v.errf("log_level", "invalid log_level %q (valid: trace, debug, info, warn, error, critical, off)", c.LogLevel)
	}
	if c.MasterCore < 0 {
		v.errf("master_core", "must be ≥ 0, got %d", c.MasterCore)
	}
	for _, m := range []struct {
		key string
		n   int
	}{{"tx_meta_buffers", c.TxMetaBuffers}, {"rx_meta_buffers", c.RxMetaBuffers}} {
		if m.n < 0 || m.n > MaxMetaBuffers {
			v.errf(m.key, "must be between 1 and %d, got %d", MaxMetaBuffers, m.n)
		}
	}
	v.memoryRegions()
	v.interfaces()
	for i := range c.MemoryRegions {
		if mr := &c.MemoryRegions[i]; mr.Name != "" && !v.used[mr.Name] {
			v.warnf(indexPath("memory_regions", i), "memory region %s is not used by any queue or reorder plan", mr.Name)
		}
	}
}

func (v *validator) memoryRegions() {
	for i := range v.c.MemoryRegions {
		v.region(indexPath("memory_regions", i), &v.c.MemoryRegions[i])
	}
	v.totalBufs("memory_regions", 0)
}

// totalBufs bounds the buffers of all regions together (MaxTotalBufs); v.regions holds them
// all, plus the one added at path when added is not 0 (CheckMemoryRegion).
func (v *validator) totalBufs(path string, added int) {
	total := 0
	for _, mr := range v.regions {
		if mr.NumBufs > 0 && mr.NumBufs <= MaxNumBufs { // each bounded: the sum cannot overflow
			total += mr.NumBufs
		}
	}
	if total > MaxTotalBufs {
		if added > 0 {
			v.errf(path+".num_bufs", "%d more buffers make %d in all regions; at most %d (2^26: the pools keep a link word per buffer)", added, total, MaxTotalBufs)
		} else {
			v.errf(path, "the memory regions hold %d buffers together; at most %d (2^26: the pools keep a link word per buffer)", total, MaxTotalBufs)
		}
	}
}

// region checks one memory region at key path p and records its name in v.regions. Open
// (through Validate) and Session.AddMemoryRegion (through CheckMemoryRegion) both check a
// region here.
func (v *validator) region(p string, mr *MemoryRegion) {
	switch {
	case mr.Name == "":
		v.errf(p+".name", "a memory region needs a name")
	case v.regions[mr.Name] != nil:
		v.errf(p+".name", "duplicate memory region name %q", mr.Name)
	default:
		v.regions[mr.Name] = mr
	}
	switch mr.Kind {
	case KindHost, KindHostPinned, KindHuge, KindDevice:
	case "":
		v.errf(p+".kind", "a memory region needs kind (host, host_pinned, huge or device)")
	default:
		v.errf(p+".kind", "unknown memory kind %q (valid: host, host_pinned, huge, device)", mr.Kind)
	}
	if mr.Affinity < 0 {
		v.errf(p+".affinity", "must be ≥ 0, got %d", mr.Affinity)
	}
	if mr.Access&^(AccessLocal|AccessRDMARead|AccessRDMAWrite) != 0 {
		v.errf(p+".access", "invalid access mask %#x (local=1, rdma_write=2, rdma_read=4)", uint8(mr.Access))
	}
	numOK := mr.NumBufs > 0 && mr.NumBufs <= MaxNumBufs
	switch {
	case mr.NumBufs <= 0:
		v.errf(p+".num_bufs", "must be > 0, got %d", mr.NumBufs)
	case mr.NumBufs > MaxNumBufs:
		v.errf(p+".num_bufs", "must be ≤ %d (2^24: the buffer pool keeps a link word per buffer), got %d", MaxNumBufs, mr.NumBufs)
	}
	sizeOK := mr.BufSize > 0 && mr.BufSize <= MaxBufSize
	switch {
	case mr.BufSize <= 0:
		v.errf(p+".buf_size", "must be > 0, got %d", mr.BufSize)
	case mr.BufSize > MaxBufSize:
		v.errf(p+".buf_size", "must be ≤ %d, got %d", MaxBufSize, mr.BufSize)
	}
	// Both factors are bounded above, but the product is taken in 128 bits so that the
	// check stays right whatever the bounds become.
	if numOK && sizeOK {
		if hi, lo := bits.Mul64(uint64(mr.NumBufs), uint64(mr.BufSize)); hi != 0 || lo > MaxRegionBytes {
			v.errf(p, "num_bufs × buf_size = %d × %d exceeds %d bytes (2^46)", mr.NumBufs, mr.BufSize, int64(MaxRegionBytes))
		}
	}
}

func (v *validator) interfaces() {
	c := v.c
	switch n := len(c.Interfaces); {
	case n == 0:
		v.errf("interfaces", "at least one interface is required")
	case n > MaxInterfaces:
		v.errf("interfaces", "at most %d interfaces are supported, got %d", MaxInterfaces, n)
	}
	names := map[string]bool{}
	rxFlowIDs := map[int]string{}
	txFlowIDs := map[int]string{}
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		p := indexPath("interfaces", i)
		switch {
		case ifc.Name == "":
			v.errf(p+".name", "an interface needs a name")
		case names[ifc.Name]:
			v.errf(p+".name", "duplicate interface name %q", ifc.Name)
		default:
			names[ifc.Name] = true
		}
		if ifc.Address == "" && !c.isPlaceholder(p+".address") {
			v.errf(p+".address", "an interface needs an address")
		}
		engine, err := c.ResolveEngine(i)
		if err != nil {
			if e, ok := err.(*Error); ok {
				v.add(e)
			}
		}
		v.iface(i, engine)
		if ifc.RX != nil {
			v.uniqueFlowIDs(p+".rx.flows", ifc.RX.Flows, rxFlowIDs)
		}
		if ifc.TX != nil {
			v.uniqueFlowIDs(p+".tx.flows", ifc.TX.Flows, txFlowIDs)
		}
	}
}

// uniqueFlowIDs rejects a static flow id used twice in one direction, on any interface: the
// id is the mark delivered with each packet.
func (v *validator) uniqueFlowIDs(base string, fs []Flow, seen map[int]string) {
	for j := range fs {
		p := indexPath(base, j)
		if prev, ok := seen[fs[j].ID]; ok {
			v.errf(p+".id", "duplicate flow id %d (also used by %s)", fs[j].ID, prev)
			continue
		}
		seen[fs[j].ID] = p
	}
}
