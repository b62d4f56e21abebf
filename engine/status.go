// Package engine is the contract between a daqiri session and the engines that move packets:
// status errors, memory regions and their buffer pools, bursts, queues and their statistics.
// The public package daqiri re-exports what applications use; engine packages (socket, afxdp,
// ...) import this package directly.
package engine

import "errors"

// Status is one of DAQIRI's status codes. Every Status is an error (except StatusSuccess), so
// errors.Is(err, engine.ErrNotReady) works through any wrapping.
type Status int

// Status codes, in upstream's ordinal order (include/daqiri/types.h).
const (
	StatusSuccess Status = iota
	StatusNullPtr
	StatusNoFreeBurstBuffers
	StatusNoFreePacketBuffers
	StatusNotReady
	StatusInvalidParameter
	StatusNoSpaceAvailable
	StatusNotSupported
	StatusGenericFailure
	StatusConnectFailure
	StatusInternalError
)

var statusNames = [...]string{
	"success", "null pointer", "no free burst buffers", "no free packet buffers", "not ready",
	"invalid parameter", "no space available", "not supported", "generic failure",
	"connect failure", "internal error",
}

// Error is the status's description.
func (s Status) Error() string {
	if s >= 0 && int(s) < len(statusNames) {
		return statusNames[s]
	}
	return "unknown status"
}

// Sentinel errors, one per failure status.
var (
	ErrNullPtr             error = StatusNullPtr
	ErrNoFreeBurstBuffers  error = StatusNoFreeBurstBuffers
	ErrNoFreePacketBuffers error = StatusNoFreePacketBuffers
	ErrNotReady            error = StatusNotReady
	ErrInvalidParameter    error = StatusInvalidParameter
	ErrNoSpaceAvailable    error = StatusNoSpaceAvailable
	ErrNotSupported        error = StatusNotSupported
	ErrGenericFailure      error = StatusGenericFailure
	ErrConnectFailure      error = StatusConnectFailure
	ErrInternalError       error = StatusInternalError
)

// StatusOf maps an error to the DAQIRI status it carries: nil → StatusSuccess, an error that
// wraps a Status → that status, anything else → StatusGenericFailure.
func StatusOf(err error) Status {
	if err == nil {
		return StatusSuccess
	}
	var s Status
	if errors.As(err, &s) {
		return s
	}
	return StatusGenericFailure
}
