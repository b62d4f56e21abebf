//go:build race

package model_test

// raceEnabled: the race detector is on (see TestLoopbackFreeRunning).
const raceEnabled = true
