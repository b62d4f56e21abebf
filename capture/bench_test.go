package capture

import (
	"path/filepath"
	"testing"

	"github.com/daqiri-go/daqiri/engine"
	"github.com/daqiri-go/daqiri/internal/testutil/regiontest"
)

// benchBurst is a burst of n packets of size bytes in host memory, kept for the whole
// benchmark (the writers never modify it).
func benchBurst(b *testing.B, n, size int) *engine.Burst {
	r := regiontest.Host(b, "bench", n, size)
	lens := make([][]int, n)
	for i := range lens {
		lens[i] = []int{size}
	}
	burst, _ := makeBurst(b, nil, metaPool(b, 1, n), []*engine.Region{r}, lens, nil)
	b.Cleanup(burst.Free)
	return burst
}

// BenchmarkPcapWrite measures appending 64-packet bursts of 8000-byte packets to a pcap
// file (page cache; no fsync).
func BenchmarkPcapWrite(b *testing.B) {
	burst := benchBurst(b, 64, 8000)
	w, err := OpenPcap(filepath.Join(b.TempDir(), "b.pcap"), PcapOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.SetBytes(int64(burst.TotalBytes()))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Write(burst); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*burst.Len())/b.Elapsed().Seconds()/1e6, "Mpkt/s")
}

// BenchmarkRawWrite measures one file per packet for 64-packet bursts of 8000 bytes.
func BenchmarkRawWrite(b *testing.B) {
	burst := benchBurst(b, 64, 8000)
	w, err := NewRawWriter(RawOptions{Dir: b.TempDir(), Prefix: "b"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	b.SetBytes(int64(burst.TotalBytes()))
	for b.Loop() {
		if _, err := w.Write(burst); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*burst.Len())/b.Elapsed().Seconds()/1e3, "kfiles/s")
}
