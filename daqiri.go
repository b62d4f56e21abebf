// Package daqiri moves Ethernet packets between the network and CPU or GPU memory in bursts,
// with the configuration and concepts of NVIDIA DAQIRI, in pure Go.
//
// A Session is opened from a configuration (package config): memory regions are allocated
// outside the Go heap, queues are set up and the engines' workers start. Received packets
// arrive in bursts (RxBurst) that the application frees when done; packets are sent by taking
// a TX burst (TxBurst), filling it and handing it to Send. Several sessions can live in one
// process.
package daqiri

import (
	"github.com/daqiri-go/daqiri/engine"
)

// Version is the daqiri-go release, in upstream's YYYY.MM.PATCH form.
const Version = "2026.11.0"

// Burst is a batch of packets on one queue; see engine.Burst for its methods.
type Burst = engine.Burst

// Status is a DAQIRI status code; every failure status is an error.
type Status = engine.Status

// Flags are burst flags.
type Flags = engine.Flags

// ReorderInfo describes a reorder aggregate burst.
type ReorderInfo = engine.ReorderInfo

// QueueStats is a snapshot of one queue's counters.
type QueueStats = engine.QueueStats

// Burst flags.
const (
	FlagReordered      = engine.FlagReordered
	FlagReorderTimeout = engine.FlagReorderTimeout
)

// Errors, one per DAQIRI failure status; test with errors.Is.
var (
	ErrNullPtr             = engine.ErrNullPtr
	ErrNoFreeBurstBuffers  = engine.ErrNoFreeBurstBuffers
	ErrNoFreePacketBuffers = engine.ErrNoFreePacketBuffers
	ErrNotReady            = engine.ErrNotReady
	ErrInvalidParameter    = engine.ErrInvalidParameter
	ErrNoSpaceAvailable    = engine.ErrNoSpaceAvailable
	ErrNotSupported        = engine.ErrNotSupported
	ErrGenericFailure      = engine.ErrGenericFailure
	ErrConnectFailure      = engine.ErrConnectFailure
	ErrInternalError       = engine.ErrInternalError
)

// StatusOf maps an error to the DAQIRI status it carries.
func StatusOf(err error) Status { return engine.StatusOf(err) }
