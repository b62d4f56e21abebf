package config_test

import (
	"fmt"

	"github.com/daqiri-go/daqiri/config"
	"go.yaml.in/yaml/v3"
)

const udpServer = `daqiri:
  cfg:
    version: 1
    stream_type: socket
    memory_regions:
    - {name: rx_mem, kind: host, affinity: 0, num_bufs: 1024, buf_size: 9000}
    interfaces:
    - name: sensor_in
      address: 127.0.0.1
      socket_config: {mode: server, local_addr: "udp://127.0.0.1:5001"}
      rx:
        queues:
        - {name: q0, id: 0, cpu_core: 1, batch_size: 64, memory_regions: [rx_mem]}
my_app:
  gain: 2.5
`

// Parse reads upstream DAQIRI's YAML: the `daqiri: cfg:` document, with the application's
// own sections beside it (read with App), or a bare config map.
func ExampleParse() {
	cfg, err := config.Parse([]byte(udpServer), "server.yaml")
	if err != nil {
		fmt.Println(err)
		return
	}
	ifc := cfg.Interfaces[0]
	fmt.Println(cfg.StreamType, ifc.Name, ifc.Socket.Mode, ifc.Socket.Local)
	q := ifc.RX.Queues[0]
	fmt.Println(q.Name, q.BatchSize, q.MemoryRegions, cfg.Region("rx_mem").BufSize)
	engine, _ := cfg.ResolveEngine(0)
	fmt.Println("engine:", engine)

	var app struct {
		Gain float64 `yaml:"gain"`
	}
	if err := cfg.App("my_app", &app); err != nil {
		fmt.Println(err)
	}
	fmt.Println(cfg.AppNames(), app.Gain)
	// Output:
	// socket sensor_in server udp://127.0.0.1:5001
	// q0 64 [rx_mem] 9000
	// engine: socket
	// [my_app] 2.5
}

// Every problem in a file is reported at once, each with its line, column and key path.
func ExampleParse_errors() {
	bad := `daqiri:
  cfg:
    version: 1
    stream_type: socket
    memory_regions:
    - {name: rx_mem, kind: hots, num_bufs: 1024, buf_size: 9000}
    interfaces:
    - name: sensor_in
      address: 127.0.0.1
      socket_config: {mode: server, local_addr: "udp://127.0.0.1:99999"}
      rx:
        queues:
        - {name: q0, id: 0, cpu_core: 1, batch_size: 0, memory_regions: [rx_mem]}
`
	_, err := config.Parse([]byte(bad), "server.yaml")
	for _, e := range config.AsErrors(err) {
		fmt.Println(e)
	}
	// Output:
	// server.yaml:6:7: memory_regions[0].affinity: a memory region needs affinity
	// server.yaml:6:22: memory_regions[0].kind: unknown memory kind "hots" (valid: host, host_pinned, huge, device)
	// server.yaml:10:37: interfaces[0].socket_config.local_addr: port 99999 in "udp://127.0.0.1:99999" is out of range 1..65535
	// server.yaml:13:42: interfaces[0].rx.queues[0].batch_size: must be > 0, got 0
}

// A configuration built in code is checked by Validate (Open calls it too); MarshalYAML
// writes it back as YAML that Parse reads into an equal Config.
func ExampleConfig_Validate() {
	cfg := &config.Config{
		Version:    1,
		StreamType: config.StreamRaw,
		Loopback:   "sw",
		MemoryRegions: []config.MemoryRegion{
			{Name: "rx", Kind: config.KindHost, NumBufs: 256, BufSize: 2048},
		},
		Interfaces: []config.Interface{{
			Name:    "lb",
			Address: "loopback",
			RX: &config.RxConfig{Queues: []config.Queue{
				{Name: "q0", ID: 0, CPUCore: "0", BatchSize: 32, MemoryRegions: []string{"rx"}},
			}},
		}},
	}
	fmt.Println("valid:", cfg.Validate())
	out, _ := yaml.Marshal(cfg)
	fmt.Print(string(out))

	cfg.Interfaces[0].RX.Queues[0].MemoryRegions = []string{"tx"}
	fmt.Println(cfg.Validate())
	// Output:
	// valid: <nil>
	// version: 1
	// stream_type: raw
	// master_core: 0
	// loopback: sw
	// memory_regions:
	//     - name: rx
	//       kind: host
	//       affinity: 0
	//       num_bufs: 256
	//       buf_size: 2048
	// interfaces:
	//     - name: lb
	//       address: loopback
	//       rx:
	//         queues:
	//             - name: q0
	//               id: 0
	//               cpu_core: 0
	//               batch_size: 32
	//               memory_regions: [rx]
	// interfaces[0].rx.queues[0].memory_regions[0]: memory region "tx" is not defined in memory_regions
}

// Socket endpoints are URIs; a bad one names what is wrong.
func ExampleParseEndpoint() {
	for _, uri := range []string{"udp://127.0.0.1:4096", "tcp://[::1]:80", "roce://10.0.0.1", "http://host:1"} {
		ep, err := config.ParseEndpoint(uri)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		fmt.Printf("%s host %s port %d\n", ep.Proto, ep.Host, ep.Port)
	}
	// Output:
	// udp host 127.0.0.1 port 4096
	// tcp host ::1 port 80
	// roce host 10.0.0.1 port 0
	// error: unknown scheme "http" in "http://host:1" (valid: tcp, udp, roce)
}
