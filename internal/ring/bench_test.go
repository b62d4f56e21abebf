package ring

import (
	"strconv"
	"testing"
)

// BenchmarkSPSCSameThread is the cost of the calls alone (no cache line crosses cores): one
// goroutine enqueues and dequeues bulk values.
func BenchmarkSPSCSameThread(b *testing.B) {
	for _, mode := range []Mode{SPSC, MPMC} {
		for _, bulk := range []int{1, 8, 32} {
			b.Run([]string{"mpmc", "spsc"}[btoi(mode == SPSC)]+"/bulk"+strconv.Itoa(bulk), func(b *testing.B) {
				r, _ := New[uint64](1024, mode)
				buf := make([]uint64, bulk)
				for b.Loop() {
					if bulk == 1 {
						r.Enqueue(1)
						r.Dequeue()
						continue
					}
					r.EnqueueBulk(buf)
					r.DequeueBulk(buf)
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*bulk), "ns/item")
			})
		}
	}
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}

// BenchmarkPoolGetPut is upstream's one-thread pool loop (pool_ring_bench's ObjectPool get/put
// 1t): take up to 16 indices one at a time, return them one at a time; ns/pair is one Get and
// one Put.
func BenchmarkPoolGetPut(b *testing.B) {
	p, _ := NewPool(4096)
	var held [16]uint32
	n := 0
	for b.Loop() {
		k := 0
		for ; k < len(held); k++ {
			v, ok := p.Get()
			if !ok {
				break
			}
			held[k] = v
		}
		for _, v := range held[:k] {
			p.Put(v)
		}
		n += k
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/pair")
}
