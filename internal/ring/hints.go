package ring

import "sync/atomic"

// The pool's hints take a dependent load off the path from one compare-and-swap on the head to
// the next. Popping needs the top's next index and pushing needs the top's depth, both in the
// top's link word, whose address is known only once the head has been loaded: two loads in a
// row after the previous CAS, which as a locked instruction lets no later load start before it
// completes. The hints sit beside the head, in its cache line, and are loaded together with it;
// a hint whose tag is the head's describes the top that head names. One thread taking up to
// 16 buffers and returning them (upstream's pool loop) took 23.8 ns per get and put with the
// hints against 27.4 without on the development machine (upstream's C++ pool, a ring whose
// loads before each CAS are independent of each other, 20.4); on the H200 host the gain was
// a few per cent (BENCHMARKS.md, issue 31).
//
// Why a hint can be trusted: only the thread whose CAS installed a tag writes hints with that
// tag, and it writes what was true of the top right after that CAS — the index it pushed and
// the depth it computed, or (after a pop) the new top's link word, loaded after the CAS. While
// the head still holds that tag, that top is in the pool and nothing writes a free index's link
// word, so the word it loaded is the top's. A reader uses a hint only if its tag is the tag of
// the head it loaded, and its own CAS succeeds only if the head still holds that tag, so the
// head held it from the writer's CAS until the reader's: what the reader took from the hint is
// what the top's link word says. A hint written late, after its tag has gone, carries an old
// tag and is never used; one that is not written yet sends the reader to the link word. Tags
// are 32 bits, as the head's protection from ABA already assumes (a reader would have to stall
// across 2^32 operations on the pool).
//
// The head hint. Get and Put make their first attempt without loading the head at all: the
// head they expect is hintHead, the value the last successful CAS installed, stored (a plain
// store) by the thread that installed it, together with the other two hints. Loading the word
// a locked instruction has just written is what made the chain from one CAS to the next slow:
// on the development machine, two CAS per get and put on one word, each expecting a value
// loaded from that word, took 21.3 ns; expecting a copy kept in another word of the same line
// (or held in a register), 12.7 — as fast as two XCHG (12.2), which load nothing. The pool
// went from 23.3 to 17.7 ns per get and put. On the H200 host (fastest of 120 chunks, two
// rounds): 25.0–26.0 ns loading the word, 17.6–19.5 from a copy, 14.2–15.6 from a register,
// 14.3–15.4 for two XCHG; the pool 28.8–28.9 before, 21.3–24.2 after (BENCHMARKS.md, issue
// 31, fourth round). The head
// hint needs no trust of its own: the CAS compares it with the head, tag included, so a stale
// one (a late writer's, or one another thread has moved past) only fails the first attempt,
// and the loop that follows starts from the head itself. The next and depth hints are used
// with it only when their tag is its tag, and then the argument above holds for the head the
// CAS found, which is that head. A stale hint saying "empty" is not believed: Get looks at the
// head itself before reporting an empty pool.
//
// The hints are plain stores on amd64 (StoreRelease64) to the head's line, right after the CAS
// that took it, so under contention they rarely cost a transfer of the line of their own (with
// 4 and 8 threads on the H200 host the pool moved 28.0 and 24.1 M buffers a second, against
// 26.6 and 18.4 at 72c3aaf).

// next is the next index+1 below head h's top (none if the top is the last free index): from
// the hint when it is h's, else from the top's link word. h's top must not be none.
func (p *Pool) next(h uint64) uint32 {
	if x := atomic.LoadUint64(&p.hintNext); x>>32 == h>>32 {
		return uint32(x)
	}
	return uint32(atomic.LoadUint64(&p.link[uint32(h)-1]))
}

// setHints records the head tag|top (tag in the high 32 bits, top = index+1) that a CAS
// installed and link word l (depth<<32 | next+1) as that top's.
func (p *Pool) setHints(tag uint64, top uint32, l uint64) {
	StoreRelease64(&p.hintHead, tag|uint64(top))
	StoreRelease64(&p.hintNext, tag|uint64(uint32(l)))
	StoreRelease64(&p.hintDepth, tag|l>>32)
}

// hintAfterPop records the new top's link word after a CAS that made top (index+1) the top
// with tag tag. The load comes after the CAS, although a load after a locked instruction waits
// for it: loading the word before Get's first CAS instead (valid when that CAS succeeds) was
// slower on the H200 host, 3–10 % fewer gets and puts in each of six interleaved runs of
// upstream's loop (BENCHMARKS.md, issue 31, fourth round, "pool, second pass").
func (p *Pool) hintAfterPop(tag uint64, top uint32) {
	var l uint64
	if top != none && int(top) <= p.n {
		l = atomic.LoadUint64(&p.link[top-1])
	}
	p.setHints(tag, top, l)
}
