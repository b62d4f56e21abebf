package config

import (
	"strings"
	"testing"
)

// TestRegionBufferBounds (issue 30 item 2): one region holds at most 2^24 buffers and all
// regions together at most 2^26, in a configuration and for a region added at run time
// (CheckMemoryRegion), so that the pools' link arrays (8 bytes a buffer, written at Open) fit
// a small machine; factors whose product wraps int64 are refused, not wrapped.
func TestRegionBufferBounds(t *testing.T) {
	full := func(name string) MemoryRegion {
		return MemoryRegion{Name: name, Kind: KindHost, NumBufs: MaxNumBufs, BufSize: 64}
	}
	c := &Config{Version: 1, StreamType: StreamRaw}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		c.MemoryRegions = append(c.MemoryRegions, full(n))
	}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "memory_regions: the memory regions hold 83886080 buffers together; at most 67108864") {
		t.Errorf("five full regions: %v", err)
	}
	existing := c.MemoryRegions[:4]
	mr := full("e")
	if err := CheckMemoryRegion("memory_regions[4]", &mr, existing); err == nil || !strings.Contains(err.Error(), "memory_regions[4].num_bufs: 16777216 more buffers make 83886080 in all regions; at most 67108864") {
		t.Errorf("a fifth full region at run time: %v", err)
	}
	mr.NumBufs = 1
	if err := CheckMemoryRegion("memory_regions[4]", &mr, existing[:3]); err != nil {
		t.Errorf("a small region next to three full ones: %v", err)
	}
	for _, c := range []struct {
		mr   MemoryRegion
		want string
	}{
		{MemoryRegion{Name: "w", Kind: KindHost, NumBufs: 4, BufSize: 1<<62 + 16}, "memory_regions[0].buf_size: must be ≤ 2147483647"},
		{MemoryRegion{Name: "w", Kind: KindHost, NumBufs: 1 << 33, BufSize: 1 << 31}, "memory_regions[0].num_bufs: must be ≤ 16777216"},
		{MemoryRegion{Name: "w", Kind: KindHost, NumBufs: 1 << 24, BufSize: 1<<31 - 1}, "memory_regions[0]: num_bufs × buf_size = 16777216 × 2147483647 exceeds 70368744177664 bytes (2^46)"},
		{MemoryRegion{Name: "w", Kind: KindHost, NumBufs: -1, BufSize: 0}, "memory_regions[0].buf_size: must be > 0, got 0"},
	} {
		if err := CheckMemoryRegion("memory_regions[0]", &c.mr, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d × %d: %v, want %q", c.mr.NumBufs, c.mr.BufSize, err, c.want)
		}
	}
}
