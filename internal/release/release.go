// Package release stores a word with release ordering only: every load and store the calling
// goroutine made before the store is visible to a goroutine whose atomic load observes it,
// which is all a single-writer cursor or a slot sequence needs to publish what it guards.
//
// sync/atomic's stores are sequentially consistent; on amd64 that makes them an XCHG, a full
// barrier that waits for every earlier store to reach the cache (including the lines the other
// side of a ring owns) before the thread can go on. Under x86-TSO an ordinary MOV already has
// release semantics (Intel SDM vol. 3A §9.2.2: stores are not reordered with earlier loads or
// stores), so on amd64 StoreUint32 is one MOV in assembly, which the compiler cannot move
// earlier stores across either. Elsewhere, and under the race detector (which must see the
// store as synchronising), it is atomic.StoreUint32.
//
// Loads pair with sync/atomic's: on amd64 atomic.LoadUint32 is a plain MOV with acquire
// semantics. What is not ordered is a release store followed by a load of another word
// (store-load); an algorithm that needs that needs sync/atomic.
package release
