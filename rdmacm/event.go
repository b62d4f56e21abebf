package rdmacm

import (
	"fmt"
	"syscall"
)

// EventType is enum rdma_cm_event_type (include/rdma/rdma_cm.h in the
// kernel, librdmacm's rdma_cma.h): the values the kernel reports in
// rdma_ucm_event_resp.event.
type EventType uint32

// Event types.
const (
	EventAddrResolved    EventType = 0
	EventAddrError       EventType = 1
	EventRouteResolved   EventType = 2
	EventRouteError      EventType = 3
	EventConnectRequest  EventType = 4
	EventConnectResponse EventType = 5
	EventConnectError    EventType = 6
	EventUnreachable     EventType = 7
	EventRejected        EventType = 8
	EventEstablished     EventType = 9
	EventDisconnected    EventType = 10
	EventDeviceRemoval   EventType = 11
	EventMulticastJoin   EventType = 12
	EventMulticastError  EventType = 13
	EventAddrChange      EventType = 14
	EventTimewaitExit    EventType = 15
)

var eventNames = [...]string{
	"ADDR_RESOLVED", "ADDR_ERROR", "ROUTE_RESOLVED", "ROUTE_ERROR", "CONNECT_REQUEST",
	"CONNECT_RESPONSE", "CONNECT_ERROR", "UNREACHABLE", "REJECTED", "ESTABLISHED",
	"DISCONNECTED", "DEVICE_REMOVAL", "MULTICAST_JOIN", "MULTICAST_ERROR", "ADDR_CHANGE",
	"TIMEWAIT_EXIT",
}

// String is the event's name as librdmacm's rdma_event_str gives it, without
// the RDMA_CM_EVENT_ prefix.
func (t EventType) String() string {
	if int(t) < len(eventNames) {
		return eventNames[t]
	}
	return fmt.Sprintf("EventType(%d)", uint32(t))
}

// ECE is the enhanced connection establishment option pair the kernel passes
// through (struct rdma_ucm_ece); zero when unused.
type ECE struct {
	VendorID uint32
	AttrMod  uint32
}

// Event is one rdma_cm event.
type Event struct {
	Type EventType
	// Status is the kernel's status: 0 on success, a negative errno for
	// address/route/connect errors, and for EventRejected the IB CM reject
	// reason (28 = consumer reject, 8 = invalid service id: nobody listens).
	Status int32
	// ID is the ID the event concerns; for EventConnectRequest it is a new
	// ID for the incoming connection, which the caller must Accept, Reject
	// or Destroy.
	ID *ID
	// Listen is the listening ID of an EventConnectRequest.
	Listen *ID
	// Conn is the peer's connection parameters and private data
	// (connect request and response, established, rejected, disconnected).
	Conn ConnParam
	// ECE is the peer's enhanced connection establishment options.
	ECE ECE
}

// Err describes a failure event as an error, nil for events that report
// progress (resolved, connected, ...).
func (e Event) Err() error {
	switch e.Type {
	case EventAddrError, EventRouteError, EventConnectError, EventUnreachable:
		return &EventError{Event: e.Type, Status: e.Status}
	case EventRejected:
		return &EventError{Event: e.Type, Status: e.Status, Rejected: true}
	case EventDeviceRemoval:
		return &EventError{Event: e.Type}
	}
	if e.Status != 0 {
		return &EventError{Event: e.Type, Status: e.Status}
	}
	return nil
}

// EventError is an event that reports a failure.
type EventError struct {
	Event    EventType
	Status   int32
	Rejected bool // Status is an IB CM reject reason, not an errno
}

// Error describes the failure event.
func (e *EventError) Error() string {
	switch {
	case e.Rejected:
		return fmt.Sprintf("rdmacm: connection rejected by the peer (IB CM reject reason %d%s)", e.Status, rejectReason(e.Status))
	case e.Status < 0:
		return fmt.Sprintf("rdmacm: %v: %v", e.Event, syscall.Errno(-e.Status))
	case e.Status > 0:
		return fmt.Sprintf("rdmacm: %v: status %d", e.Event, e.Status)
	}
	return fmt.Sprintf("rdmacm: %v", e.Event)
}

// Unwrap is the errno of errno-valued statuses (ETIMEDOUT, EHOSTUNREACH, …),
// ECONNREFUSED for a rejection, ENODEV for a device removal.
func (e *EventError) Unwrap() error {
	switch {
	case e.Rejected:
		return syscall.ECONNREFUSED
	case e.Event == EventDeviceRemoval:
		return syscall.ENODEV
	case e.Status < 0:
		return syscall.Errno(-e.Status)
	}
	return nil
}

// rejectReason names the IB CM reject reasons a RoCE peer commonly sends
// (IBTA table "REJ reason", include/rdma/ib_cm.h enum ib_cm_rej_reason).
func rejectReason(r int32) string {
	switch r {
	case 1:
		return ": no QP"
	case 8:
		return ": invalid service id (nothing listens on that address and port)"
	case 28:
		return ": consumer reject (the application refused)"
	}
	return ""
}
