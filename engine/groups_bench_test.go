package engine

import (
	"testing"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/hugepage"
)

// BenchmarkGroupsFree: Free of a 1024-packet burst whose buffers are consecutive strides of
// two groups of 512 (a striding RQ's burst), the counts taken back after each (ns/op per
// packet: divide by 1024).
func BenchmarkGroupsFree(b *testing.B) {
	m, err := hugepage.Map(4096*2048, false)
	if err != nil {
		b.Fatal(err)
	}
	r, err := NewRegion(&config.MemoryRegion{Name: "g", Kind: config.KindHost, NumBufs: 4096, BufSize: 2048}, m)
	if err != nil {
		b.Fatal(err)
	}
	g, err := r.TakeGroups(9)
	if err != nil {
		b.Fatal(err)
	}
	offs := make([]uint64, 1024)
	for i := range offs {
		offs[i] = uint64(256+i) * 2048
	}
	b.ResetTimer()
	for range b.N {
		g.putOffsets(offs)
		g.Retake(0, 256)
		g.Retake(1, 512)
		g.Retake(2, 256)
	}
	b.StopTimer()
	g.Close(nil)
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
}
