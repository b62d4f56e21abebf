package config_test

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/daqiri-go/daqiri/config"
)

// codeConfig is a configuration built in code, as the socket tests and applications do:
// defaultable fields are left zero.
func codeConfig() *config.Config {
	mac, _ := net.ParseMAC("02:00:00:00:00:01")
	return &config.Config{
		Version: 1, StreamType: config.StreamRaw,
		MemoryRegions: []config.MemoryRegion{
			{Name: "rx", Kind: config.KindHuge, NumBufs: 1024, BufSize: 2048},
			{Name: "tx", Kind: config.KindHost, NumBufs: 1024, BufSize: 2048},
			{Name: "out", Kind: config.KindHost, NumBufs: 2, BufSize: 64 * 2048},
		},
		Interfaces: []config.Interface{{
			Name: "p0", Address: "0000:3b:00.0",
			RX: &config.RxConfig{
				Queues: []config.Queue{
					{Name: "q0", ID: 0, CPUCore: "1", BatchSize: 64, MemoryRegions: []string{"rx"}},
					{Name: "q1", ID: 1, PollMode: config.PollDirect, MemoryRegions: []string{"rx"}},
				},
				Flows: []config.Flow{
					{Name: "f", ID: 7, Actions: []config.Action{{Type: config.ActionQueue, Queues: []int{0}}},
						Match: config.Match{UDPDst: config.PortRange{Lo: 1000, Hi: 1010}, IPv4Src: netip.MustParseAddr("10.0.0.1")}},
				},
				Reorders: []config.Reorder{{Name: "r", Type: config.ReorderCPU, MemoryRegion: "out", FlowIDs: []int{7},
					Method: config.ReorderMethod{Kind: config.MethodSeqPacketsPerBatch, Seq: config.BitField{Offset: 0, Width: 16}, PacketsPerBatch: 64}}},
			},
			TX: &config.TxConfig{
				Queues: []config.Queue{{Name: "t", ID: 0, CPUCore: "2", BatchSize: 8, MemoryRegions: []string{"tx"}}},
				Flows: []config.Flow{{Name: "g", ID: 1, Actions: []config.Action{
					{Type: config.ActionVLANPush, VLAN: config.VLAN{ID: 5}},
					{Type: config.ActionTunnelEncap, Tunnel: config.Tunnel{Type: config.TunnelVXLAN, VNI: 9, OuterEthSrc: mac, OuterEthDst: mac,
						OuterIPv4Src: netip.MustParseAddr("10.0.0.1"), OuterIPv4Dst: netip.MustParseAddr("10.0.0.2")}},
				}}},
			},
		}},
	}
}

func TestProgrammaticConfig(t *testing.T) {
	c := codeConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("valid code config: %v", err)
	}
	if e, err := c.ResolveEngine(0); e != config.EngineMLX5 || err != nil {
		t.Errorf("engine %q %v", e, err)
	}
	// Validate does not fill defaults; SetDefaults does, and the result is still valid.
	if c.LogLevel != "" || c.Interfaces[0].RX.Queues[0].PollMode != "" {
		t.Errorf("Validate changed the config")
	}
	c.SetDefaults()
	if c.LogLevel != "warn" || c.RxMetaBuffers != 256 || c.MemoryRegions[0].Access != config.AccessLocal ||
		c.Interfaces[0].TX.Flows[0].Actions[1].Tunnel.OuterUDPDst != 4789 || c.Interfaces[0].TX.Flows[0].Actions[0].VLAN.EtherType != 0x8100 {
		t.Errorf("SetDefaults: %+v", c)
	}
	if err := c.Validate(); err != nil {
		t.Fatalf("after SetDefaults: %v", err)
	}

	for _, tc := range []struct {
		name   string
		break_ func(c *config.Config)
		want   []string // "path: fragment"
	}{
		{"version", func(c *config.Config) { c.Version = 0 }, []string{"version: version is required"}},
		{"stream type", func(c *config.Config) { c.StreamType = "tcp" }, []string{"stream_type: invalid stream_type"}},
		{"batch size", func(c *config.Config) { c.Interfaces[0].TX.Queues[0].BatchSize = 0 },
			[]string{"interfaces[0].tx.queues[0].batch_size: needs batch_size"}},
		{"negative batch size", func(c *config.Config) { c.Interfaces[0].TX.Queues[0].BatchSize = -1 },
			[]string{"interfaces[0].tx.queues[0].batch_size: must be > 0, got -1"}},
		{"bad core", func(c *config.Config) { c.Interfaces[0].RX.Queues[0].CPUCore = "x" },
			[]string{"interfaces[0].rx.queues[0].cpu_core: must be a CPU core number"}},
		{"unknown region", func(c *config.Config) { c.Interfaces[0].RX.Queues[1].MemoryRegions = []string{"nope"} },
			[]string{"interfaces[0].rx.queues[1].memory_regions[0]: \"nope\" is not defined"}},
		{"reversed range", func(c *config.Config) { c.Interfaces[0].RX.Flows[0].Match.UDPDst = config.PortRange{Lo: 9, Hi: 1} },
			[]string{"interfaces[0].rx.flows[0].match.udp_dst: port range 9-1 is empty"}},
		{"ipv6 match", func(c *config.Config) { c.Interfaces[0].RX.Flows[0].Match.IPv4Src = netip.MustParseAddr("::1") },
			[]string{"interfaces[0].rx.flows[0].match.ipv4_src: must be an IPv4 address"}},
		{"vlan id", func(c *config.Config) { c.Interfaces[0].TX.Flows[0].Actions[0].VLAN.ID = 4096 },
			[]string{"interfaces[0].tx.flows[0].actions[0].vlan_id: must be between 0 and 4095"}},
		{"vni on gre", func(c *config.Config) { c.Interfaces[0].TX.Flows[0].Actions[1].Tunnel.Type = config.TunnelGRE },
			[]string{"interfaces[0].tx.flows[0].actions[1].vni: vni is a vxlan field; this tunnel is gre", "interfaces[0].tx.flows[0].actions[1]: tunnel_encap gre after vlan_push"}},
		{"missing mac", func(c *config.Config) { c.Interfaces[0].TX.Flows[0].Actions[1].Tunnel.OuterEthDst = nil },
			[]string{"interfaces[0].tx.flows[0].actions[1].outer_eth_dst: needs outer_eth_dst"}},
		{"empty queue action", func(c *config.Config) { c.Interfaces[0].RX.Flows[0].Actions[0].Queues = nil },
			[]string{"interfaces[0].rx.flows[0].actions[0].id: needs a queue id"}},
		{"no actions", func(c *config.Config) { c.Interfaces[0].RX.Flows[0].Actions = nil },
			[]string{"interfaces[0].rx.flows[0].actions: at least one action"}},
		{"flow id range", func(c *config.Config) { c.Interfaces[0].RX.Flows[0].ID = config.MaxFlowID + 1 },
			[]string{"interfaces[0].rx.flows[0].id: must be between 0 and 16777215", "interfaces[0].rx.reorder_configs[0].flow_ids[0]: flow id 7 is not an RX flow"}},
		{"endpoint on raw", func(c *config.Config) { c.Interfaces[0].Socket = &config.SocketConfig{Mode: config.ModeServer} },
			[]string{"interfaces[0].socket_config: only for stream_type socket"}},
		{"method", func(c *config.Config) { c.Interfaces[0].RX.Reorders[0].Method.Kind = "fancy" },
			[]string{"interfaces[0].rx.reorder_configs[0].method: unknown reorder method \"fancy\""}},
		{"derived ppb", func(c *config.Config) {
			c.Interfaces[0].RX.Reorders[0].Method = config.ReorderMethod{Kind: config.MethodSeqBatchNumber,
				Seq: config.BitField{Width: 8}, Batch: config.BitField{Width: 2}, PacketsPerBatch: 5}
		}, []string{"interfaces[0].rx.reorder_configs[0].method.seq_batch_number: packets_per_batch 5 disagrees with 2^8 / 2^2 = 64"}},
		{"access mask", func(c *config.Config) { c.MemoryRegions[0].Access = 8 },
			[]string{"memory_regions[0].access: invalid access mask 0x8"}},
		{"meta buffers", func(c *config.Config) { c.TxMetaBuffers = -1 }, []string{"tx_meta_buffers: must be between 1 and 1048576"}},
		{"placeholder address", func(c *config.Config) {
			c.Interfaces[0].Address = ""
			c.Placeholders = []string{"interfaces[0].address"}
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := codeConfig()
			tc.break_(c)
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			es := config.AsErrors(err)
			if len(es) != len(tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			for i, w := range tc.want {
				path, frag, _ := strings.Cut(w, ": ")
				e := es[i]
				if e.Path != path || !strings.Contains(e.Msg, frag) || e.Line != 0 || e.File != "" {
					t.Errorf("error %d = %+v, want %s", i, e, w)
				}
			}
		})
	}
	// Endpoints built in code get the checks ParseEndpoint applies to URIs.
	sock := func(ep config.Endpoint) *config.Config {
		return &config.Config{Version: 1, StreamType: config.StreamSocket, Interfaces: []config.Interface{{Name: "s", Address: "x",
			Socket: &config.SocketConfig{Mode: config.ModeServer, Local: ep}}}}
	}
	for _, tc := range []struct {
		ep   config.Endpoint
		frag string
	}{
		{config.Endpoint{Proto: "sctp", Host: "1.2.3.4", Port: 1}, "unknown protocol"},
		{config.Endpoint{Proto: config.ProtoUDP, Host: "a b", Port: 1}, "neither an IPv4 address nor a host name"},
		{config.Endpoint{Proto: config.ProtoUDP, Host: "1.2.3.4", Port: 70000}, "out of range"},
		{config.Endpoint{Proto: config.ProtoTCP, Host: "1.2.3.4", Port: 1, Query: "engine=ibverbs"}, "only allowed on roce"},
	} {
		err := sock(tc.ep).Validate()
		if err == nil || !strings.Contains(err.Error(), "interfaces[0].socket_config.local_addr: ") || !strings.Contains(err.Error(), tc.frag) {
			t.Errorf("%+v: %v", tc.ep, err)
		}
	}
	if es := config.AsErrors(sock(config.Endpoint{}).Errorf("x", "y")); len(es) != 1 || es[0].Path != "x" {
		t.Errorf("AsErrors(*Error) = %v", es)
	}
	if config.AsErrors(errors.New("plain")) != nil {
		t.Errorf("AsErrors of a plain error")
	}

	var nilCfg *config.Config
	if err := nilCfg.Validate(); err == nil {
		t.Errorf("nil config validated")
	}
}

// TestResolveEngine covers stream type × engine × address/URI.
func TestResolveEngine(t *testing.T) {
	raw := func(engine, loopback, addr string, ph bool) *config.Config {
		c := &config.Config{Version: 1, StreamType: config.StreamRaw, Engine: engine, Loopback: loopback,
			Interfaces: []config.Interface{{Name: "p", Address: addr}}}
		if ph {
			c.Placeholders = []string{"interfaces[0].address"}
		}
		return c
	}
	sock := func(engine, uri string) *config.Config {
		ep, err := config.ParseEndpoint(uri)
		if err != nil {
			t.Fatal(err)
		}
		return &config.Config{Version: 1, StreamType: config.StreamSocket, Engine: engine,
			Interfaces: []config.Interface{{Name: "p", Address: "x", Socket: &config.SocketConfig{Mode: config.ModeServer, Local: ep}}}}
	}
	for _, tc := range []struct {
		name string
		c    *config.Config
		want string
		err  string
	}{
		{"pci", raw("", "", "0000:3b:00.0", false), "mlx5", ""},
		{"short pci", raw("default", "", "3b:00.1", false), "mlx5", ""},
		{"netdev", raw("", "", "enp59s0f0np0", false), "xdp", ""},
		{"loopback sw", raw("", "sw", "loopback", false), "loopback", ""},
		{"loopback sw any address", raw("dpdk", "sw", "0000:3b:00.0", false), "loopback", ""},
		{"engine loopback", raw("loopback", "", "whatever", false), "loopback", ""},
		{"engine dpdk", raw("dpdk", "", "0000:3b:00.0", false), "dpdk", ""},
		{"engine ibverbs raw", raw("ibverbs", "", "mlx5_0", false), "mlx5", ""},
		{"engine mlx5", raw("mlx5", "", "eth0", false), "mlx5", ""},
		{"engine xdp with pci", raw("xdp", "", "0000:3b:00.0", false), "xdp", ""},
		{"placeholder", raw("", "", "", true), "", ""},
		{"placeholder with engine", raw("xdp", "", "", true), "xdp", ""},
		{"ip on raw", raw("", "", "10.0.0.1", false), "", "is an IP address"},
		{"mac on raw", raw("", "", "00:11:22:33:44:55", false), "", "neither a PCI address"},
		{"no address", raw("", "", "", false), "", "raw interfaces need an address"},
		{"rdma", raw("rdma", "", "eth0", false), "", "use engine: ibverbs"},
		{"foo", raw("foo", "", "eth0", false), "", "unknown engine \"foo\""},
		{"socket on raw", raw("socket", "", "eth0", false), "", "not valid for stream_type raw"},
		{"loopback hw", raw("", "hw", "eth0", false), "mlx5", ""},
		{"loopback hw on xdp", raw("xdp", "hw", "eth0", false), "", "loopback: hw loops a ConnectX port"},
		{"loopback bogus", raw("", "on", "eth0", false), "", "invalid loopback \"on\""},
		{"model port", raw("", "", "model:3", false), "mlx5", ""},
		{"bridged model port", raw("", "", "model:0@veth0", false), "mlx5", ""},
		{"model port over vfio", raw("", "", "vfio+model:1", false), "mlx5", ""},
		{"udp", sock("", "udp://1.2.3.4:5"), "socket", ""},
		{"tcp socket", sock("socket", "tcp://1.2.3.4:5"), "socket", ""},
		{"roce", sock("", "roce://1.2.3.4:5"), "roce", ""},
		{"roce via socket engine", sock("socket", "roce://1.2.3.4:5"), "roce", ""},
		{"roce via ibverbs", sock("ibverbs", "rdma://1.2.3.4:5"), "roce", ""},
		{"roce engine", sock("roce", "roce://1.2.3.4"), "roce", ""},
		{"ibverbs with udp", sock("ibverbs", "udp://1.2.3.4:5"), "", "udp:// endpoints need engine socket"},
		{"dpdk on socket", sock("dpdk", "udp://1.2.3.4:5"), "", "not valid for stream_type socket"},
		{"no stream type", &config.Config{Interfaces: []config.Interface{{}}}, "", "stream_type is required"},
		{"no socket_config", &config.Config{StreamType: config.StreamSocket, Interfaces: []config.Interface{{}}}, "", "need socket_config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.c.ResolveEngine(0)
			if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ResolveEngine = %q, %v; want %q, %q", got, err, tc.want, tc.err)
			}
		})
	}
}

// TestParseEndpoint covers the URI grammar of §2.4.
func TestParseEndpoint(t *testing.T) {
	for _, tc := range []struct {
		uri  string
		want config.Endpoint
		err  string
	}{
		{"udp://1.2.3.4:5", config.Endpoint{Proto: config.ProtoUDP, Host: "1.2.3.4", Port: 5}, ""},
		{"tcp://h.example:65535", config.Endpoint{Proto: config.ProtoTCP, Host: "h.example", Port: 65535}, ""},
		{"roce://1.2.3.4", config.Endpoint{Proto: config.ProtoRoCE, Host: "1.2.3.4"}, ""},
		{"rdma://1.2.3.4:7?engine=ibverbs", config.Endpoint{Proto: config.ProtoRoCE, Host: "1.2.3.4", Port: 7, Query: "engine=ibverbs"}, ""},
		{"1.2.3.4:5", config.Endpoint{}, "scheme://"},
		{"://1.2.3.4:5", config.Endpoint{}, "scheme://"},
		{"sctp://1.2.3.4:5", config.Endpoint{}, "unknown scheme"},
		{"udp://", config.Endpoint{}, "scheme://"},
		{"udp://1.2.3.4/x:5", config.Endpoint{}, "scheme://"},
		{"udp://:5", config.Endpoint{}, "host and a port"},
		{"udp://1.2.3.4:", config.Endpoint{}, "host and a port"},
		{"udp://1.2.3.4:x", config.Endpoint{}, "not a number"},
		{"udp://1.2.3.4:-1", config.Endpoint{}, "not a number"},
		{"udp://1.2.3.4:70000", config.Endpoint{}, "out of range"},
		{"udp://[::1]:5", config.Endpoint{Proto: config.ProtoUDP, Host: "::1", Port: 5}, ""},
		{"tcp://[fd00::2]", config.Endpoint{Proto: config.ProtoTCP, Host: "fd00::2"}, ""},
		{"udp://[::1", config.Endpoint{}, "closing ']'"},
		{"udp://[1.2.3.4]:5", config.Endpoint{}, "not an IPv6 address"},
		{"udp://[::ffff:1.2.3.4]:5", config.Endpoint{}, "not an IPv6 address"},
		{"udp://[::1]x", config.Endpoint{}, "nothing or :port"},
		{"udp://[::1]:70000", config.Endpoint{}, "1..65535"},
		{"roce://[::1]", config.Endpoint{}, "roce endpoints take an IPv4 address"},
		{"udp://::1:5", config.Endpoint{}, "brackets"},
		{"udp://bad_host:5", config.Endpoint{}, "neither an IPv4 address nor a host name"},
		{"udp://1.2.3.4:5?engine=ibverbs", config.Endpoint{}, "only allowed on roce"},
		{"roce://1.2.3.4?engine=dpdk", config.Endpoint{}, "not supported"},
		{"roce://1.2.3.4?engine=ibverbs&x=y", config.Endpoint{}, "not supported"},
	} {
		got, err := config.ParseEndpoint(tc.uri)
		if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseEndpoint(%q) = %+v, %v; want %+v, %q", tc.uri, got, err, tc.want, tc.err)
		}
	}
}
