package mlx5

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"

	"github.com/daqiri-go/daqiri/config"
	"github.com/daqiri-go/daqiri/flow"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// txTable is the NIC TX flow table that applies TX rules' transforms to frames the port's
// SQs send: per rule, entries matching its fields whose action allows the frame on to the
// wire with a VLAN push (flow_context push_vlan) and/or a packet-reformat context holding
// the tunnel's outer headers. Frames no rule matches miss the table and go out unchanged
// (NIC TX table_miss_action default).
type txTable struct {
	s      *Steering
	table  channel.Object
	detach func() error
	objs   []channel.Object // reformats, then groups and entries in creation order
	rules  []*flow.TxRule
}

// checkTX reports whether a TX rule can be expressed: at most one vlan_push and one
// tunnel_encap, the push first (the entry pushes the tag on the frame as sent, then the
// reformat prepends the outer headers; a tag on the outer frame is not expressible).
func checkTX(r *flow.TxRule) error {
	var push, encap int
	for _, a := range r.Actions {
		switch a.Type {
		case config.ActionVLANPush:
			if encap > 0 {
				return fmt.Errorf("TX flow %q: vlan_push after tunnel_encap (a tag on the outer frame): %w", r.Name, ErrNotExpressible)
			}
			push++
		case config.ActionTunnelEncap:
			encap++
		default:
			return fmt.Errorf("TX flow %q: action %s: %w", r.Name, a.Type, ErrNotExpressible)
		}
	}
	if push > 1 || encap > 1 {
		return fmt.Errorf("TX flow %q: %d vlan_push and %d tunnel_encap actions, at most one each: %w", r.Name, push, encap, ErrNotExpressible)
	}
	return nil
}

// CheckTX reports whether a TX rule can be installed (nil) or why not.
func CheckTX(r *flow.TxRule) error {
	if err := checkTX(r); err != nil {
		return err
	}
	_, err := ruleMatches(txMatchRule(r), checkSampler{})
	return err
}

// txMatchRule is the TX rule's match fields as an RX rule ruleMatches understands.
func txMatchRule(r *flow.TxRule) *flow.Rule {
	m := *r.Match
	m.Queues = []int{0}
	return &m
}

func newTX(s *Steering, rules []*flow.TxRule) (*txTable, error) {
	if len(rules) > MaxRules {
		return nil, fmt.Errorf("flow/mlx5: %d TX rules, at most %d", len(rules), MaxRules)
	}
	t := &txTable{s: s, rules: rules}
	logSize := uint64(bits.Len(uint(len(rules)*EntriesPerRule - 1)))
	tb, err := s.createTable(prm.FlowTableNICTX, logSize)
	if err != nil {
		return nil, fmt.Errorf("flow/mlx5: TX flow table: %w", err)
	}
	t.table = tb
	for i, r := range rules {
		if err := t.install(i, r); err != nil {
			return nil, errors.Join(err, t.close())
		}
	}
	root := prm.NewCmdIn(prm.CmdOpSetFlowTableRoot, 0, int(prm.SetFlowTableRootIn.TableID.End()/8)+8)
	prm.SetFlowTableRootIn.TableType.Set(root, prm.FlowTableNICTX)
	prm.SetFlowTableRootIn.TableID.Set(root, uint64(tb.ID()))
	if err := s.ch.Exec(root, make([]byte, 16)); err != nil {
		return nil, errors.Join(fmt.Errorf("flow/mlx5: TX table at the root: %w", err), t.close())
	}
	t.detach = func() error {
		// Disconnect (op_mod 1), as the kernel's fs_cmd.c mlx5_cmd_update_root_ft does.
		in := prm.NewCmdIn(prm.CmdOpSetFlowTableRoot, 0, int(prm.SetFlowTableRootIn.TableID.End()/8)+8)
		prm.CmdIn.OpMod.Set(in, 1)
		prm.SetFlowTableRootIn.TableType.Set(in, prm.FlowTableNICTX)
		return s.ch.Exec(in, make([]byte, 16))
	}
	return t, nil
}

func (t *txTable) install(i int, r *flow.TxRule) error {
	if err := checkTX(r); err != nil {
		return err
	}
	ms, err := ruleMatches(txMatchRule(r), t.s)
	if err != nil {
		return err
	}
	sortByMask(ms)
	s := t.s
	e := entry{table: t.table.ID(), typ: prm.FlowTableNICTX, action: prm.FlowActionAllow}
	for _, a := range r.Actions {
		switch a.Type {
		case config.ActionVLANPush:
			e.action |= prm.FlowActionVLANPush
			e.vlan = pushVLAN(&a.VLAN)
		case config.ActionTunnelEncap:
			data, typ, err := encapHeader(&a.Tunnel)
			if err != nil {
				return fmt.Errorf("flow/mlx5: TX flow %q: %w", r.Name, err)
			}
			o, err := t.allocReformat(typ, data)
			if err != nil {
				return fmt.Errorf("flow/mlx5: TX flow %q: packet reformat context: %w", r.Name, err)
			}
			e.action |= prm.FlowActionPacketReformat
			e.reformat = o.ID()
		}
	}
	base := uint32(i * EntriesPerRule)
	var group channel.Object
	for k, m := range ms {
		if k == 0 || m.key() != ms[k-1].key() {
			end := k
			for end+1 < len(ms) && ms[end+1].key() == m.key() {
				end++
			}
			g, err := s.createGroup(prm.FlowTableNICTX, t.table.ID(), base+uint32(k), base+uint32(end), m)
			if err != nil {
				return fmt.Errorf("flow/mlx5: TX flow %q: group: %w", r.Name, err)
			}
			t.objs = append(t.objs, g)
			group = g
		}
		x := e
		x.index, x.group, x.m = base+uint32(k), group.ID(), m
		o, err := s.ch.Create(x.bytes(), make([]byte, 16))
		if err != nil {
			return fmt.Errorf("flow/mlx5: TX flow %q: entry: %w", r.Name, err)
		}
		t.objs = append(t.objs, o)
	}
	return nil
}

// allocReformat makes a packet reformat context with the outer header data.
func (t *txTable) allocReformat(typ uint8, data []byte) (channel.Object, error) {
	base := prm.AllocPacketReformatContextIn.PacketReformatContext.Off
	r := prm.PacketReformatContextIn
	start := r.ReformatData.At(base).ByteOff()
	in := prm.NewCmdIn(prm.CmdOpAllocPacketReformatContext, 0, start+len(data))
	r.ReformatType.At(base).Set(in, uint64(typ))
	r.ReformatDataSize.At(base).Set(in, uint64(len(data)))
	copy(in[start:], data)
	o, err := t.s.ch.Create(in, make([]byte, outBytes(prm.AllocPacketReformatContextOut.PacketReformatID)))
	if err != nil {
		return nil, err
	}
	// Reformats are destroyed after the entries that use them: keep them first.
	t.objs = slices.Insert(t.objs, 0, o)
	return o, nil
}

// close takes the table off the NIC TX root and destroys its entries, groups and reformat
// contexts; the table itself goes with the Steering's objects, after them.
func (t *txTable) close() error {
	var errs []error
	if t.detach != nil {
		errs = append(errs, t.detach())
		t.detach = nil
	}
	for _, o := range slices.Backward(t.objs) {
		errs = append(errs, o.Destroy())
	}
	t.objs = nil
	return errors.Join(errs...)
}
