package ring

// StoreRelease32 and StoreRelease64 store a word with release ordering only: every load and
// store the calling goroutine made before the store is visible to a goroutine whose atomic
// load observes it, which is all a single-writer cursor or a slot sequence needs to publish
// what it guards.
//
// sync/atomic's stores are sequentially consistent; on amd64 that makes them an XCHG, a full
// barrier that waits for every earlier store to reach the cache (including the lines the other
// side of a ring owns) before the thread can go on. Under x86-TSO an ordinary MOV already has
// release semantics (Intel SDM vol. 3A §9.2.2: stores are not reordered with earlier loads or
// stores), so on amd64 they are plain Go stores (release_amd64.go). What keeps the compiler
// from moving earlier loads and stores after them is how gc compiles a function: every load
// and store of a goroutine hangs off one chain of memory states in its SSA form, a store is
// never scheduled before a memory operation that precedes it in that chain, and a load never
// after a store that follows it; dead-store elimination only drops a store that a later store
// to the same word overwrites with no load between, which publishes the same values later,
// never earlier. Elsewhere, and under the race detector (which must see the store as
// synchronising), they are sync/atomic's (release_other.go).
//
// They live in this package, not one of their own, because of inlining: a generic method such
// as Handoff.Enqueue is compiled where it is instantiated (the engine, an application), and
// there the compiler inlines only calls into the generic's own package; a store in another
// package stayed a call. So did the earlier one-MOV assembly version everywhere. A call
// around every cursor store or every single-value handoff made the handoff between two cores
// several times slower on the 16-vCPU Xeon host (BENCHMARKS.md, issue 18 third step);
// TestHandoffInlined checks the compiled code.
//
// Loads pair with sync/atomic's: on amd64 atomic.LoadUint32 is a plain MOV with acquire
// semantics. What is not ordered is a release store followed by a load of another word
// (store-load); an algorithm that needs that needs sync/atomic.
