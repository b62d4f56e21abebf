package config

// Defaults of the schema (upstream values).
const (
	DefaultLogLevel      = "warn"
	DefaultRetryConnectS = 1
	DefaultVLANEtherType = 0x8100
	DefaultTunnelTTL     = 64
	DefaultVXLANPort     = 4789
	DefaultGREProtocol   = 0x0800
)

// SetDefaults fills the fields left at their zero value with the schema defaults: log_level
// warn, rx/tx_meta_buffers 256, access [local], poll_mode indirect, retry_connect_s 1, VLAN
// ethertype 0x8100, tunnel TTL 64, VXLAN outer_udp_dst 4789, GRE gre_protocol 0x0800,
// reorder endianness host, and the packets_per_batch that a seq_batch_number method implies.
//
// Parse calls it. Validate treats these zero values as the defaults, so a Config built in code
// need not call it; engines that read the fields directly get the defaults after calling it.
func (c *Config) SetDefaults() {
	if c.LogLevel == "" {
		c.LogLevel = DefaultLogLevel
	}
	if c.TxMetaBuffers == 0 {
		c.TxMetaBuffers = DefaultMetaBuffers
	}
	if c.RxMetaBuffers == 0 {
		c.RxMetaBuffers = DefaultMetaBuffers
	}
	for i := range c.MemoryRegions {
		if c.MemoryRegions[i].Access == 0 {
			c.MemoryRegions[i].Access = AccessLocal
		}
	}
	for i := range c.Interfaces {
		ifc := &c.Interfaces[i]
		if ifc.Socket != nil && ifc.Socket.RetryConnectS == 0 {
			ifc.Socket.RetryConnectS = DefaultRetryConnectS
		}
		if ifc.RX != nil {
			defaultQueues(ifc.RX.Queues)
			defaultFlows(ifc.RX.Flows)
			for k := range ifc.RX.Reorders {
				r := &ifc.RX.Reorders[k]
				if r.DataTypes != nil && r.DataTypes.Endianness == "" {
					r.DataTypes.Endianness = EndianHost
				}
				if r.Method.PacketsPerBatch == 0 {
					r.Method.PacketsPerBatch = r.Method.derivedPacketsPerBatch()
				}
			}
		}
		if ifc.TX != nil {
			defaultQueues(ifc.TX.Queues)
			defaultFlows(ifc.TX.Flows)
		}
	}
}

func defaultQueues(qs []Queue) {
	for i := range qs {
		if qs[i].PollMode == "" {
			qs[i].PollMode = PollIndirect
		}
	}
}

func defaultFlows(fs []Flow) {
	for i := range fs {
		for k := range fs[i].Actions {
			a := &fs[i].Actions[k]
			switch a.Type {
			case ActionVLANPush:
				if a.VLAN.EtherType == 0 {
					a.VLAN.EtherType = DefaultVLANEtherType
				}
			case ActionTunnelEncap, ActionTunnelDecap:
				t := &a.Tunnel
				if t.OuterTTL == 0 {
					t.OuterTTL = DefaultTunnelTTL
				}
				if t.Type == TunnelVXLAN && t.OuterUDPDst == 0 {
					t.OuterUDPDst = DefaultVXLANPort
				}
				if t.Type == TunnelGRE && t.GREProtocol == 0 {
					t.GREProtocol = DefaultGREProtocol
				}
			}
		}
	}
}

// derivedPacketsPerBatch is 2^seq_bits / 2^batch_bits for seq_batch_number (0 when the
// widths are out of range or the method is another one).
func (m *ReorderMethod) derivedPacketsPerBatch() int {
	if m.Kind != MethodSeqBatchNumber {
		return 0
	}
	s, b := m.Seq.Width, m.Batch.Width
	if s < 1 || s > 32 || b < 1 || b > 32 || b > s {
		return 0
	}
	return 1 << (s - b)
}

// Region returns the memory region called name, or nil.
func (c *Config) Region(name string) *MemoryRegion {
	for i := range c.MemoryRegions {
		if c.MemoryRegions[i].Name == name {
			return &c.MemoryRegions[i]
		}
	}
	return nil
}

// Interface returns the index and configuration of the interface called name, or -1 and nil.
func (c *Config) Interface(name string) (int, *Interface) {
	for i := range c.Interfaces {
		if c.Interfaces[i].Name == name {
			return i, &c.Interfaces[i]
		}
	}
	return -1, nil
}
