package ring

import (
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// TestSPSCOrderConcurrent moves a counting sequence through an SPSC ring with random bulk
// and burst sizes on both sides and checks that the consumer sees it in order, exactly once.
func TestSPSCOrderConcurrent(t *testing.T) {
	for _, capacity := range []int{2, 7, 64, 1000} {
		r, _ := New[uint64](capacity, SPSC)
		const total = 50000
		deadline := time.Now().Add(60 * time.Second)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
			buf := make([]uint64, 64)
			next := uint64(0)
			for idle := 0; next < total && time.Now().Before(deadline); {
				n := 1 + rng.IntN(len(buf))
				n = int(min(uint64(n), total-next))
				for i := range n {
					buf[i] = next + uint64(i)
				}
				var k int
				if rng.IntN(2) == 0 {
					if r.EnqueueBulk(buf[:n]) {
						k = n
					}
				} else {
					k = r.EnqueueBurst(buf[:n])
				}
				next += uint64(k)
				if k == 0 {
					idle = yieldSometimes(idle)
				} else {
					idle = 0
				}
			}
		}()
		rng := rand.New(rand.NewPCG(rand.Uint64(), 2))
		dst := make([]uint64, 64)
		want := uint64(0)
		for idle := 0; want < total && time.Now().Before(deadline); {
			n := 1 + rng.IntN(len(dst))
			var k int
			if rng.IntN(2) == 0 {
				if r.DequeueBulk(dst[:n]) {
					k = n
				}
			} else {
				k = r.DequeueBurst(dst[:n])
			}
			if k == 0 {
				idle = yieldSometimes(idle)
			} else {
				idle = 0
			}
			for _, v := range dst[:k] {
				if v != want {
					t.Fatalf("cap %d: got %d, want %d", capacity, v, want)
				}
				want++
			}
		}
		wg.Wait()
		if want != total {
			t.Fatalf("cap %d: %d of %d values arrived before the deadline", capacity, want, total)
		}
		if r.Len() != 0 {
			t.Fatalf("cap %d: %d values left", capacity, r.Len())
		}
	}
}

// TestSPSCClearsSlots: a dequeued pointer must not stay reachable from the ring.
func TestSPSCClearsSlots(t *testing.T) {
	r, _ := New[*int](4, SPSC)
	for round := range 5 {
		vs := []*int{new(int), new(int), new(int)}
		if !r.EnqueueBulk(vs) {
			t.Fatalf("round %d: enqueue failed", round)
		}
		dst := make([]*int, 3)
		if !r.DequeueBulk(dst) {
			t.Fatalf("round %d: dequeue failed", round)
		}
		for i, v := range r.h.vals {
			if v != nil {
				t.Fatalf("round %d: slot %d still holds a pointer", round, i)
			}
		}
	}
}

// TestCursorPadding: the producer's and the consumer's cursors, each side's cached copy of
// the other's cursor and the read-mostly fields sit in five different 128-byte blocks (pairs of
// lines the Xeon's spatial prefetcher moves together) wherever the ring starts, so no
// thread writes a line another thread reads on every call (a cursor line is read by the other
// side only when its cached copy says full or empty), and a waiting side that rewrites its
// cached copy does not touch the line the other side polls.
func TestCursorPadding(t *testing.T) {
	var h Handoff[uint64]
	apart(t, unsafe.Sizeof(h), unsafe.Offsetof(h.vals), map[string]uintptr{
		"enq":     unsafe.Offsetof(h.enq),
		"deq":     unsafe.Offsetof(h.deq),
		"deqSeen": unsafe.Offsetof(h.deqSeen),
		"enqSeen": unsafe.Offsetof(h.enqSeen),
		"mask":    unsafe.Offsetof(h.mask),
	})
	var r Ring[uint64] // the other modes: the two cursors and the read-mostly fields
	apart(t, unsafe.Sizeof(r), unsafe.Offsetof(r.slots), map[string]uintptr{
		"enq":  unsafe.Offsetof(r.enq),
		"deq":  unsafe.Offsetof(r.deq),
		"mask": unsafe.Offsetof(r.mask),
	})
}

// apart checks that the fields at offs lie in different 128-byte blocks wherever the struct
// starts, none shares a block with what precedes the struct, and the last read-mostly field
// (at last) is a block away from what follows it.
func apart(t *testing.T, size, last uintptr, offs map[string]uintptr) {
	t.Helper()
	for a, oa := range offs {
		if oa < gap {
			t.Fatalf("%s at %d shares a block with whatever precedes the ring", a, oa)
		}
		for b, ob := range offs {
			// Offsets at least a block apart stay in different blocks wherever the ring starts.
			if a != b && max(oa, ob)-min(oa, ob) < gap {
				t.Fatalf("%s@%d and %s@%d share a 128-byte block", a, oa, b, ob)
			}
		}
	}
	if size-last < gap {
		t.Fatalf("no padding after the read-mostly fields (size %d)", size)
	}
}

func TestHasPointers(t *testing.T) {
	type plain struct {
		a uint64
		b [4]int32
	}
	type withPtr struct {
		a uint64
		p *int
	}
	for _, c := range []struct {
		got, want bool
	}{
		{hasPointers(reflect.TypeFor[uint64]()), false},
		{hasPointers(reflect.TypeFor[plain]()), false},
		{hasPointers(reflect.TypeFor[*int]()), true},
		{hasPointers(reflect.TypeFor[withPtr]()), true},
		{hasPointers(reflect.TypeFor[[]byte]()), true},
		{hasPointers(reflect.TypeFor[string]()), true},
		{hasPointers(reflect.TypeFor[[2]*int]()), true},
	} {
		if c.got != c.want {
			t.Errorf("hasPointers = %v, want %v", c.got, c.want)
		}
	}
}

// TestHandoffInlined: where another package instantiates them (testdata/inline, as the
// engines and applications do), Handoff's single-value calls are inlined into the caller and
// no ring path calls the release store instead of inlining it: a call around every cursor
// store or every single-value handoff made the handoff between two cores several times slower
// (release.go, BENCHMARKS.md issue 18 third step). Reads the compiled code with
// `go tool objdump`.
func TestHandoffInlined(t *testing.T) {
	if runtime.GOARCH != "amd64" || raceEnabled {
		t.Skip("StoreRelease32 is a plain store on amd64 without -race only")
	}
	gobin := filepath.Join(runtime.GOROOT(), "bin", "go")
	bin := filepath.Join(t.TempDir(), "inline")
	if out, err := exec.Command(gobin, "build", "-o", bin, "./testdata/inline").CombinedOutput(); err != nil {
		t.Fatalf("go build ./testdata/inline: %v\n%s", err, out)
	}
	if out, err := exec.Command(bin).CombinedOutput(); err != nil || string(out) != "45 0\n" {
		t.Fatalf("testdata/inline: %q, %v", out, err)
	}
	for fn, banned := range map[string][]string{
		`main\.handoffLoop$`: {"Handoff[go.shape.uint64]).Enqueue", "Handoff[go.shape.uint64]).Dequeue", "ring.storeRelease"},
		`ring\.\(\*Handoff\[go\.shape\.uint64\]\)\.(enqueue|dequeue)$`: {"ring.storeRelease"},
		`ring\.\(\*Ring\[go\.shape\.uint64\]\)\.(claim|publish)$`:      {"ring.storeRelease"},
	} {
		out, err := exec.Command(gobin, "tool", "objdump", "-s", fn, bin).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool objdump: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "TEXT ") {
			t.Fatalf("%s: not found in %s", fn, bin)
		}
		for _, line := range strings.Split(string(out), "\n") {
			for _, b := range banned {
				if strings.Contains(line, "CALL") && strings.Contains(line, b) {
					t.Errorf("%s calls %s:\n%s", fn, b, line)
				}
			}
		}
	}
}

func mustHandoff(t *testing.T, n int) *Handoff[uint64] {
	t.Helper()
	h, err := NewHandoff[uint64](n)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestHandoffDirect: Handoff used on its own (as daqiri-ringbench's SPSC cases do) keeps FIFO
// order and loses nothing across two goroutines with single and bulk calls mixed at random,
// holds exactly Cap values, and refuses bad capacities.
func TestHandoffDirect(t *testing.T) {
	for _, c := range []int{0, -1, 1<<30 + 1} {
		if _, err := NewHandoff[uint64](c); err == nil {
			t.Errorf("capacity %d accepted", c)
		}
	}
	h := mustHandoff(t, 5)
	if h.Cap() != 8 {
		t.Fatalf("Cap %d, want 8", h.Cap())
	}
	for i := range 8 {
		if !h.Enqueue(uint64(i)) {
			t.Fatalf("enqueue %d of 8 refused", i)
		}
	}
	if h.Enqueue(99) || h.Len() != 8 {
		t.Fatalf("a full handoff took a ninth value (len %d)", h.Len())
	}
	for range 8 {
		h.Dequeue()
	}
	if _, ok := h.Dequeue(); ok || h.Len() != 0 {
		t.Fatal("an empty handoff gave a value")
	}

	const total = 200000
	h = mustHandoff(t, 64)
	deadline := time.Now().Add(30 * time.Second)
	seed := rand.Uint64()
	var wg sync.WaitGroup
	wg.Go(func() {
		r := rand.New(rand.NewPCG(seed, 1))
		buf := make([]uint64, 16)
		for idle, next := 0, uint64(0); next < total && time.Now().Before(deadline); {
			was := next
			if r.IntN(2) == 0 {
				if h.Enqueue(next) {
					next++
				}
			} else {
				n := min(1+r.IntN(len(buf)), int(total-next))
				for i := range n {
					buf[i] = next + uint64(i)
				}
				next += uint64(h.EnqueueBurst(buf[:n]))
			}
			if next == was {
				idle = yieldSometimes(idle)
			} else {
				idle = 0
			}
		}
	})
	r := rand.New(rand.NewPCG(seed, 2))
	dst := make([]uint64, 16)
	want := uint64(0)
	for idle := 0; want < total && time.Now().Before(deadline); {
		was := want
		if r.IntN(2) == 0 {
			if v, ok := h.Dequeue(); ok {
				if v != want {
					t.Fatalf("got %d, want %d (seed %d)", v, want, seed)
				}
				want++
			}
		} else {
			for _, v := range dst[:h.DequeueBurst(dst[:1+r.IntN(len(dst))])] {
				if v != want {
					t.Fatalf("got %d, want %d (seed %d)", v, want, seed)
				}
				want++
			}
		}
		if want == was {
			idle = yieldSometimes(idle)
		} else {
			idle = 0
		}
	}
	wg.Wait()
	if want != total {
		t.Fatalf("%d of %d values arrived before the deadline (seed %d)", want, total, seed)
	}
}

// TestHandoffRunsEveryOffset moves every run length from 1 to past shortRun (the values moved
// one by one and those moved with copy) from every slot of a small ring, so each length also
// wraps, with bulk and burst calls; values arrive in order, bulk calls take all or nothing,
// a burst takes what fits, and dequeued pointers are cleared from their slots.
func TestHandoffRunsEveryOffset(t *testing.T) {
	const size = 16
	h := mustHandoff(t, size)
	p, _ := NewHandoff[*int](size)
	next, want := uint64(0), uint64(0)
	ppos := 0 // values through p
	src := make([]uint64, size+1)
	dst := make([]uint64, size+1)
	for n := 1; n <= shortRun+2; n++ {
		for start := range size {
			// Empty the ring, then move both cursors to slot start.
			for h.Len() > 0 || next%size != uint64(start) {
				if h.Len() == 0 {
					h.Enqueue(next)
					next++
				}
				if v, _ := h.Dequeue(); v != want {
					t.Fatalf("n %d start %d: got %d, want %d", n, start, v, want)
				}
				want++
			}
			for i := range n {
				src[i] = next + uint64(i)
			}
			if start%2 == 0 {
				if !h.EnqueueBulk(src[:n]) {
					t.Fatalf("n %d start %d: bulk enqueue into an empty ring refused", n, start)
				}
			} else if k := h.EnqueueBurst(src[:n]); k != n {
				t.Fatalf("n %d start %d: burst enqueue took %d of %d", n, start, k, n)
			}
			next += uint64(n)
			if h.DequeueBulk(dst[:n+1]) {
				t.Fatalf("n %d start %d: bulk dequeue of %d from %d values succeeded", n, start, n+1, n)
			}
			got := n
			if start%2 == 0 {
				if !h.DequeueBulk(dst[:n]) {
					t.Fatalf("n %d start %d: bulk dequeue of all %d refused", n, start, n)
				}
			} else {
				got = h.DequeueBurst(dst[:n+1])
			}
			if got != n {
				t.Fatalf("n %d start %d: dequeued %d of %d", n, start, got, n)
			}
			for _, v := range dst[:n] {
				if v != want {
					t.Fatalf("n %d start %d: got %d, want %d", n, start, v, want)
				}
				want++
			}
			// A full ring: a bulk that does not fit is refused whole, a burst takes the room.
			for h.Len() < size-n+1 {
				h.Enqueue(next)
				next++
			}
			if h.EnqueueBulk(src[:n]) {
				t.Fatalf("n %d start %d: bulk of %d into %d free slots accepted", n, start, n, n-1)
			}
			if n > 1 {
				for i := range n - 1 {
					src[i] = next + uint64(i)
				}
				if k := h.EnqueueBurst(src[:n]); k != n-1 {
					t.Fatalf("n %d start %d: burst into %d free slots took %d", n, start, n-1, k)
				}
				next += uint64(n - 1)
			}

			// Pointers: the same run through a ring of *int, every slot it used cleared.
			for ; ppos%size != start; ppos++ {
				p.Enqueue(nil)
				p.Dequeue()
			}
			ppos += n
			ps := make([]*int, n)
			for i := range ps {
				ps[i] = new(int)
			}
			if !p.EnqueueBulk(ps) || !p.DequeueBulk(make([]*int, n)) {
				t.Fatalf("n %d start %d: pointer run refused", n, start)
			}
			for i, v := range p.vals {
				if v != nil {
					t.Fatalf("n %d start %d: slot %d still holds a pointer", n, start, i)
				}
			}
		}
	}
}

// TestHandoffBulkModel runs random single, bulk and burst calls of every length up to past
// shortRun, longer than the ring included, on rings of 2 to 16 slots against a model queue,
// with fresh random values: a bulk call succeeds exactly when all of it fits (or is there),
// takes all or nothing, and values come out in order; a ring of pointers is left holding no
// dequeued pointer.
func TestHandoffBulkModel(t *testing.T) {
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 7))
	for _, size := range []int{2, 4, 8, 16} {
		h := mustHandoff(t, size)
		p, _ := NewHandoff[*uint64](size)
		var model []uint64
		buf := make([]uint64, shortRun+2)
		pbuf := make([]*uint64, shortRun+2)
		for step := range 5000 {
			n := 1 + rng.IntN(shortRun+2)
			free := size - len(model)
			switch rng.IntN(6) {
			case 0: // bulk enqueue
				for i := range n {
					v := rng.Uint64()
					buf[i], pbuf[i] = v, &v
				}
				ok, pok := h.EnqueueBulk(buf[:n]), p.EnqueueBulk(pbuf[:n])
				if ok != (n <= free) || pok != ok {
					t.Fatalf("seed %d size %d step %d: bulk enqueue of %d with %d free: %v/%v", seed, size, step, n, free, ok, pok)
				}
				if ok {
					model = append(model, buf[:n]...)
				}
			case 1: // bulk dequeue
				ok, pok := h.DequeueBulk(buf[:n]), p.DequeueBulk(pbuf[:n])
				if ok != (n <= len(model)) || pok != ok {
					t.Fatalf("seed %d size %d step %d: bulk dequeue of %d from %d: %v/%v", seed, size, step, n, len(model), ok, pok)
				}
				if ok {
					for i, v := range buf[:n] {
						if v != model[i] || *pbuf[i] != model[i] {
							t.Fatalf("seed %d size %d step %d: value %d is %d/%d, want %d", seed, size, step, i, v, *pbuf[i], model[i])
						}
					}
					model = model[n:]
				}
			case 2: // burst enqueue
				for i := range n {
					v := rng.Uint64()
					buf[i], pbuf[i] = v, &v
				}
				k, pk := h.EnqueueBurst(buf[:n]), p.EnqueueBurst(pbuf[:n])
				if k != min(n, free) || pk != k {
					t.Fatalf("seed %d size %d step %d: burst of %d with %d free took %d/%d", seed, size, step, n, free, k, pk)
				}
				model = append(model, buf[:k]...)
			case 3: // burst dequeue
				k, pk := h.DequeueBurst(buf[:n]), p.DequeueBurst(pbuf[:n])
				if k != min(n, len(model)) || pk != k {
					t.Fatalf("seed %d size %d step %d: burst of %d from %d gave %d/%d", seed, size, step, n, len(model), k, pk)
				}
				for i, v := range buf[:k] {
					if v != model[i] || *pbuf[i] != model[i] {
						t.Fatalf("seed %d size %d step %d: value %d is %d/%d, want %d", seed, size, step, i, v, *pbuf[i], model[i])
					}
				}
				model = model[k:]
			case 4:
				v := rng.Uint64()
				ok, pok := h.Enqueue(v), p.Enqueue(&v)
				if ok != (free > 0) || pok != ok {
					t.Fatalf("seed %d size %d step %d: enqueue with %d free: %v/%v", seed, size, step, free, ok, pok)
				}
				if ok {
					model = append(model, v)
				}
			default:
				v, ok := h.Dequeue()
				pv, pok := p.Dequeue()
				if ok != (len(model) > 0) || pok != ok {
					t.Fatalf("seed %d size %d step %d: dequeue from %d: %v/%v", seed, size, step, len(model), ok, pok)
				}
				if ok {
					if v != model[0] || *pv != model[0] {
						t.Fatalf("seed %d size %d step %d: got %d/%d, want %d", seed, size, step, v, *pv, model[0])
					}
					model = model[1:]
				}
			}
			if h.Len() != len(model) || p.Len() != len(model) {
				t.Fatalf("seed %d size %d step %d: Len %d/%d, model %d", seed, size, step, h.Len(), p.Len(), len(model))
			}
			// Slots outside the held run hold no pointer.
			for i := range size {
				if off := (uint32(i) - p.deq) & p.mask; int(off) >= len(model) && p.vals[i] != nil {
					t.Fatalf("seed %d size %d step %d: free slot %d still holds a pointer", seed, size, step, i)
				}
			}
		}
	}
}
