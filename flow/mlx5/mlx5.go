// Package mlx5 is the ConnectX backend of package flow: it compiles flow's neutral rules into
// the NIC's receive steering — TIRs (one direct TIR per RX queue, an indirect TIR over an RQT
// for each flow that spreads over several queues with Toeplitz RSS), one NIC RX flow table
// whose entries match the rules' fields and carry the flow id as the flow tag — and its TX
// transforms into a NIC TX flow table with packet-reformat contexts and VLAN push. Everything
// goes through a channel.Channel, so the same code drives the device model, DevX and VFIO.
// It is a sibling of flow/xdp; the Go reference classifier (flow.Table.Classify) is its
// specification, and its tests run both on the same random frames through the device model.
//
// # How rules become flow-table entries
//
// Rule slot s owns a block of EntriesPerRule consecutive entry indexes of the RX table, so
// the lowest index that matches is the first rule in slot order (the PRM's lookup order within
// a table, which the model implements) and a rule is added or deleted without touching the
// others. A rule becomes one or more entries with the same action: a UDP port range is split
// into prefix masks (a range 1000-1003 is one entry with mask 0xfffc, 1000-1004 two), and a
// source range and a destination range give the cross product; a VLAN-pop rule becomes one
// entry per tag kind (C-VLAN, S-VLAN). Entries with the same mask share a flow group.
//
// Unmatched frames: with flow isolation they miss the table (on the real NIC they go on to
// the kernel's tables; the model counts them as steering misses); otherwise a catch-all entry
// at the table's last index forwards them to the default queue's TIR. DropAll replaces every
// entry's action by drop without changing the matches, so counts per flow stay meaningful.
//
// # What the NIC cannot express
//
// A rule that the fte_match_param layout cannot express is refused with an error wrapping
// ErrNotExpressible that names the field: an IPv4 total-length match (no such field in
// fte_match_set_lyr_2_4), flex-item payload words and eCPRI message type / PC_ID (they need
// the flex parser of misc_parameters_4, which the model does not have), and VXLAN on a UDP
// port other than 4789 (the parser recognises VXLAN on the port the device is told; the
// model knows only 4789). Engines fall back or report the flow as unsupported.
package mlx5

import (
	"errors"

	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/mlx5/channel"
)

// Limits of one port's steering.
const (
	// MaxRules is the number of rule slots (static and dynamic flows), as flow/xdp has.
	MaxRules = 128
	// EntriesPerRule is the size of each slot's block of flow-table entries: enough for two
	// port ranges split into prefixes (at most 30 each for an arbitrary 16-bit range would be
	// 900; a rule whose split needs more is refused with ErrNotExpressible).
	EntriesPerRule = 256
)

// ErrNotExpressible is wrapped by the error for a rule the NIC's match layout cannot express.
var ErrNotExpressible = errors.New("flow cannot be expressed in the NIC's flow tables")

// Params describe one port's receive steering.
type Params struct {
	// RQNs are the RQ numbers of the port's RX queues, by queue position (flow.Rule.Queues
	// and DefaultQueue are positions). The RQs must exist and be ready.
	RQNs []uint32
	// TD is the transport domain of the TIRs (tir_context.transport_domain).
	TD uint32
	// Isolation: unmatched frames are not given to any queue (upstream's flow isolation).
	Isolation bool
	// DefaultQueue is where unmatched frames go without isolation.
	DefaultQueue int
	// DropAll starts with every frame dropped (drop_all_traffic).
	DropAll bool
	// RSSKey is the Toeplitz key (40 bytes); nil means flow.DefaultRSSKey.
	RSSKey []byte
	// Rules are the static rules, installed in slots 0.. in order.
	Rules []*flow.Rule
	// TxRules are the TX transforms (VLAN push, tunnel encap), matched in order on frames
	// the port's SQs send; none means no NIC TX table is created.
	TxRules []*flow.TxRule
}

// Steering is one port's compiled steering on the device. Its methods are safe for
// concurrent use; traffic keeps flowing while rules change (an entry is written complete or
// deleted, never half-written).
type Steering struct {
	ch channel.Channel
}

// New builds the port's steering on ch: TIRs, RQTs, the RX flow table with its groups and
// entries for p.Rules, the TX table for p.TxRules, and attaches both at the root. On error
// everything created so far is destroyed.
func New(ch channel.Channel, p Params) (*Steering, error) {
	return nil, errors.ErrUnsupported
}

// Set installs r in slot (0 ≤ slot < MaxRules), replacing what was there: the new entries are
// written before the old ones are deleted, so a frame meets the old rule or the new one.
func (s *Steering) Set(slot int, r *flow.Rule) error { return errors.ErrUnsupported }

// Clear empties a slot (deletes its entries, and its RSS TIR and RQT when no other slot uses
// the same queue set).
func (s *Steering) Clear(slot int) error { return errors.ErrUnsupported }

// SetDropAll switches drop_all_traffic on (every frame dropped, matched or not) or off.
func (s *Steering) SetDropAll(on bool) error { return errors.ErrUnsupported }

// Check reports whether r can be installed (nil) or why not (an error wrapping
// ErrNotExpressible), without touching the device.
func Check(r *flow.Rule) error { return errors.ErrUnsupported }

// Table is the reference of what is installed: flow.Table.Classify on it gives, for any
// frame, the verdict the NIC's steering gives (queue position, flow id, drop or pass).
func (s *Steering) Table() *flow.Table { return nil }

// TIR returns the TIR number frames steered to queue position q arrive through (for tests
// and the trace); ok is false for a position without an RQ.
func (s *Steering) TIR(q int) (tirn uint32, ok bool) { return 0, false }

// Close detaches the tables and destroys every object New and Set created, in reverse order.
func (s *Steering) Close() error { return errors.ErrUnsupported }

// FlowID is the flow id a received frame's CQE flow tag carries (the CQE's sop_drop_qpn
// low 24 bits, mlx5dv.h struct mlx5_cqe64): the matched rule's id, 0 when no rule matched —
// as flow.Verdict.FlowID. Flow ids are 24-bit (config.MaxFlowID), like the flow tag.
func FlowID(cqeFlowTag uint32) uint32 { return cqeFlowTag & 0xffffff }
