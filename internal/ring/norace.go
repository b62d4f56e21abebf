//go:build !race

package ring

// raceEnabled is false outside the race detector: publish stores all but the first slot's
// sequence with plain stores.
const raceEnabled = false
