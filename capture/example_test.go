package capture_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/daqiri-go/daqiri"
	"github.com/daqiri-go/daqiri/capture"
	"github.com/daqiri-go/daqiri/config"
	"github.com/gopacket/gopacket/pcapgo"
)

// Received bursts go to pcapng files that Wireshark and tshark read, one interface block per
// (port, direction, queue). With RotateBytes the writer starts a new file (<stem>.1.pcapng,
// ...) before one would grow past the limit. The packets come from the software loopback
// here; any engine's RX bursts are written the same way.
func ExampleOpenPcapng() {
	dir, err := os.MkdirTemp("", "daqiri-capture-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	cfg := &config.Config{
		Version: 1, StreamType: config.StreamRaw, Loopback: "sw", LogLevel: "error",
		MemoryRegions: []config.MemoryRegion{
			{Name: "tx", Kind: config.KindHost, NumBufs: 64, BufSize: 2048},
			{Name: "rx", Kind: config.KindHost, NumBufs: 64, BufSize: 2048},
		},
		Interfaces: []config.Interface{{
			Name: "lb", Address: "loopback",
			TX: &config.TxConfig{Queues: []config.Queue{{Name: "t", ID: 0, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"tx"}}}},
			RX: &config.RxConfig{Queues: []config.Queue{{Name: "r", ID: 0, CPUCore: "0", BatchSize: 16, MemoryRegions: []string{"rx"}}}},
		}},
	}
	s, err := daqiri.Open(context.Background(), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	w, err := capture.OpenPcapng(filepath.Join(dir, "rx.pcapng"), capture.PcapngOptions{
		RotateBytes: 4096, // small, to show rotation; a real capture rotates at hundreds of MB
		PortNames:   map[int]string{0: "lb"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var total capture.Status
	for range 4 { // 4 bursts of 10 frames of 200 bytes
		tx, _ := s.TxBurst(0, 0, 10)
		tx.SetAllPacketLengths(200)
		s.Send(tx)
		rx, err := s.RxBurst(0, 0)
		if err != nil {
			fmt.Println(err)
			return
		}
		st, err := w.Write(rx)
		rx.Free() // Write returned: the burst is free to go
		if err != nil {
			fmt.Println(err)
			return
		}
		total.Add(st)
	}
	if err := w.Close(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(total.Completed, "packets written")
	for _, path := range w.Files() {
		f, _ := os.Open(path)
		r, err := pcapgo.NewNgReader(f, pcapgo.DefaultNgReaderOptions)
		n := 0
		for err == nil {
			if _, _, err = r.ReadPacketData(); err == nil {
				n++
			}
		}
		f.Close()
		fmt.Printf("%s: %d packets\n", filepath.Base(path), n)
	}
	// Output:
	// 40 packets written
	// rx.pcapng: 14 packets
	// rx.1.pcapng: 14 packets
	// rx.2.pcapng: 12 packets
}
