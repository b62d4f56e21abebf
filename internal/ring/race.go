//go:build race

package ring

// raceEnabled makes publish store every slot's sequence atomically, so the race detector sees
// only synchronised accesses to it.
const raceEnabled = true
