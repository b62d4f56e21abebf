package datapath

import (
	"encoding/binary"

	"github.com/daqiri-go/daqiri/mlx5/prm"
)

type rqt struct {
	p    RQTParams
	refs int
}

type tir struct {
	p    TIRParams
	refs int
	// hash is the Toeplitz table of p.Key, built when the TIR is made or modified.
	hash *toeplitzTable
}

// newTIR is a TIR with its hash table.
func newTIR(p TIRParams) *tir { return &tir{p: p, hash: newToeplitzTable(p.Key[:])} }

// CreateRQT makes an RQ table over existing RQs.
func (n *NIC) CreateRQT(p RQTParams) error {
	n.lock()
	defer n.unlock()
	if n.rqts[p.RQTN] != nil {
		return errf(StatusBadParam, SyndromeDuplicateID, "CREATE_RQT: rqt %#x exists", p.RQTN)
	}
	if err := n.checkRQNs("CREATE_RQT", p.RQNs); err != nil {
		return err
	}
	p.RQNs = append([]uint32(nil), p.RQNs...)
	n.rqts[p.RQTN] = &rqt{p: p}
	n.rqRefs(p.RQNs, 1)
	return nil
}

func (n *NIC) checkRQNs(cmd string, rqns []uint32) error {
	if len(rqns) == 0 {
		return errf(StatusBadParam, SyndromeBadSize, "%s: empty RQ list", cmd)
	}
	for _, q := range rqns {
		if n.rqs[q] == nil {
			return errf(StatusBadParam, SyndromeUnknownID, "%s: rq %#x does not exist", cmd, q)
		}
	}
	return nil
}

func (n *NIC) rqRefs(rqns []uint32, d int) {
	for _, q := range rqns {
		if r := n.rqs[q]; r != nil {
			r.refs += d
		}
	}
}

// ModifyRQT replaces an RQ table's list.
func (n *NIC) ModifyRQT(rqtn uint32, rqns []uint32) error {
	n.lock()
	defer n.unlock()
	t := n.rqts[rqtn]
	if t == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "MODIFY_RQT: no rqt %#x", rqtn)
	}
	if err := n.checkRQNs("MODIFY_RQT", rqns); err != nil {
		return err
	}
	n.rqRefs(t.p.RQNs, -1)
	t.p.RQNs = append([]uint32(nil), rqns...)
	n.rqRefs(t.p.RQNs, 1)
	return nil
}

// QueryRQT reports an RQ table.
func (n *NIC) QueryRQT(rqtn uint32) (RQTParams, error) {
	n.lock()
	defer n.unlock()
	t := n.rqts[rqtn]
	if t == nil {
		return RQTParams{}, errf(StatusBadParam, SyndromeUnknownID, "QUERY_RQT: no rqt %#x", rqtn)
	}
	p := t.p
	p.RQNs = append([]uint32(nil), p.RQNs...)
	return p, nil
}

// DestroyRQT removes an RQ table; one a TIR uses is busy.
func (n *NIC) DestroyRQT(rqtn uint32) error {
	n.lock()
	defer n.unlock()
	t := n.rqts[rqtn]
	if t == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "DESTROY_RQT: no rqt %#x", rqtn)
	}
	if t.refs > 0 {
		return errf(StatusBadResState, SyndromeInUse, "DESTROY_RQT: rqt %#x used by %d TIRs", rqtn, t.refs)
	}
	n.rqRefs(t.p.RQNs, -1)
	delete(n.rqts, rqtn)
	return nil
}

func (n *NIC) checkTIR(cmd string, p TIRParams) error {
	if p.Indirect {
		if n.rqts[p.RQT] == nil {
			return errf(StatusBadParam, SyndromeUnknownID, "%s: tir %#x names rqt %#x, which does not exist", cmd, p.TIRN, p.RQT)
		}
		if p.HashFn > 2 {
			return errf(StatusBadParam, SyndromeBadRSS, "%s: tir %#x rx_hash_fn %d unknown", cmd, p.TIRN, p.HashFn)
		}
		for _, h := range []HashFields{p.Outer, p.Inner} {
			if h.Selected&^0x1f != 0 {
				return errf(StatusBadParam, SyndromeBadRSS, "%s: tir %#x selected_fields %#x unknown", cmd, p.TIRN, h.Selected)
			}
		}
		return nil
	}
	if n.rqs[p.InlineRQ] == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "%s: tir %#x names rq %#x, which does not exist", cmd, p.TIRN, p.InlineRQ)
	}
	return nil
}

func (n *NIC) tirRefs(p TIRParams, d int) {
	if p.Indirect {
		n.rqts[p.RQT].refs += d
	} else {
		n.rqs[p.InlineRQ].refs += d
	}
}

// CreateTIR makes a TIR.
func (n *NIC) CreateTIR(p TIRParams) error {
	n.lock()
	defer n.unlock()
	if n.tirs[p.TIRN] != nil {
		return errf(StatusBadParam, SyndromeDuplicateID, "CREATE_TIR: tir %#x exists", p.TIRN)
	}
	if err := n.checkTIR("CREATE_TIR", p); err != nil {
		return err
	}
	n.tirs[p.TIRN] = newTIR(p)
	n.tirRefs(p, 1)
	return nil
}

// ModifyTIR replaces a TIR's parameters (MODIFY_TIR with its bitmask applied by the caller).
func (n *NIC) ModifyTIR(p TIRParams) error {
	n.lock()
	defer n.unlock()
	t := n.tirs[p.TIRN]
	if t == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "MODIFY_TIR: no tir %#x", p.TIRN)
	}
	if err := n.checkTIR("MODIFY_TIR", p); err != nil {
		return err
	}
	n.tirRefs(t.p, -1)
	t.p = p
	if t.hash.key != p.Key {
		t.hash = newToeplitzTable(p.Key[:])
	}
	n.tirRefs(p, 1)
	return nil
}

// QueryTIR reports a TIR.
func (n *NIC) QueryTIR(tirn uint32) (TIRParams, error) {
	n.lock()
	defer n.unlock()
	t := n.tirs[tirn]
	if t == nil {
		return TIRParams{}, errf(StatusBadParam, SyndromeUnknownID, "QUERY_TIR: no tir %#x", tirn)
	}
	return t.p, nil
}

// DestroyTIR removes a TIR; one a flow entry forwards to is busy.
func (n *NIC) DestroyTIR(tirn uint32) error {
	n.lock()
	defer n.unlock()
	t := n.tirs[tirn]
	if t == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "DESTROY_TIR: no tir %#x", tirn)
	}
	if t.refs > 0 {
		return errf(StatusBadResState, SyndromeInUse, "DESTROY_TIR: tir %#x is the destination of %d flow entries", tirn, t.refs)
	}
	n.tirRefs(t.p, -1)
	delete(n.tirs, tirn)
	return nil
}

// CreateTIS makes a TIS.
func (n *NIC) CreateTIS(p TISParams) error {
	n.lock()
	defer n.unlock()
	if n.tiss[p.TISN] != nil {
		return errf(StatusBadParam, SyndromeDuplicateID, "CREATE_TIS: tis %#x exists", p.TISN)
	}
	n.tiss[p.TISN] = &p
	return nil
}

// QueryTIS reports a TIS.
func (n *NIC) QueryTIS(tisn uint32) (TISParams, error) {
	n.lock()
	defer n.unlock()
	t := n.tiss[tisn]
	if t == nil {
		return TISParams{}, errf(StatusBadParam, SyndromeUnknownID, "QUERY_TIS: no tis %#x", tisn)
	}
	return *t, nil
}

// DestroyTIS removes a TIS; one an SQ uses is busy.
func (n *NIC) DestroyTIS(tisn uint32) error {
	n.lock()
	defer n.unlock()
	if n.tiss[tisn] == nil {
		return errf(StatusBadParam, SyndromeUnknownID, "DESTROY_TIS: no tis %#x", tisn)
	}
	for _, s := range n.sqs {
		if s.p.TISN == tisn {
			return errf(StatusBadResState, SyndromeInUse, "DESTROY_TIS: tis %#x used by sq %#x", tisn, s.p.SQN)
		}
	}
	delete(n.tiss, tisn)
	return nil
}

// SetPacing sets a rate-limit index's rate (SET_PP_RATE_LIMIT); rate 0 clears it.
func (n *NIC) SetPacing(p PacingParams) error {
	n.lock()
	defer n.unlock()
	if p.Index == 0 {
		return errf(StatusBadParam, SyndromeBadIndex, "SET_PP_RATE_LIMIT: index 0 is the unlimited rate")
	}
	if p.RateKbps == 0 {
		delete(n.pacing, p.Index)
		return nil
	}
	n.pacing[p.Index] = p
	return nil
}

// Toeplitz is the RSS hash the TIR computes (Microsoft's RSS specification: for every set
// bit of the input, most significant bit of the first byte first, XOR in the 32 key bits
// that start at that bit position).
func Toeplitz(key, input []byte) uint32 {
	var h uint32
	for i, b := range input {
		for bit := 0; bit < 8; bit++ {
			if b&(0x80>>bit) == 0 {
				continue
			}
			pos := i*8 + bit
			var w uint32
			for k := 0; k < 32; k++ {
				p := pos + k
				if p/8 < len(key) && key[p/8]&(0x80>>(p%8)) != 0 {
					w |= 1 << (31 - k)
				}
			}
			h ^= w
		}
	}
	return h
}

// maxHashInput is the longest RSS hash input: IPv6 source and destination and two ports.
const maxHashInput = 16 + 16 + 2 + 2

// toeplitzTable is a key's Toeplitz hash by input byte: t[i][v] is the hash of an input
// whose byte i is v and whose other bytes are zero, so that a hash is the XOR of one entry
// per input byte (the hash is linear in its input), the same value Toeplitz computes bit by
// bit.
type toeplitzTable struct {
	key [40]byte
	t   [maxHashInput][256]uint32
}

func newToeplitzTable(key []byte) *toeplitzTable {
	tt := &toeplitzTable{}
	copy(tt.key[:], key)
	for i := range tt.t {
		var bit [8]uint32 // the 32 key bits from input bit 8i+b on, for b = 0 (MSB) .. 7
		for b := range bit {
			var w uint32
			for k := 0; k < 32; k++ {
				p := 8*i + b + k
				if p/8 < len(key) && key[p/8]&(0x80>>(p%8)) != 0 {
					w |= 1 << (31 - k)
				}
			}
			bit[b] = w
		}
		for v := 1; v < 256; v++ {
			low := v & -v // the lowest set bit: bit 7-b of the byte for b = TrailingZeros
			b := 7
			for low > 1 {
				low >>= 1
				b--
			}
			tt.t[i][v] = tt.t[i][v&(v-1)] ^ bit[b]
		}
	}
	return tt
}

// sum hashes in (at most maxHashInput bytes; callers build it so).
func (tt *toeplitzTable) sum(in []byte) uint32 {
	var h uint32
	for i, b := range in[:min(len(in), maxHashInput)] {
		h ^= tt.t[i][b]
	}
	return h
}

// appendHashInput builds the RSS hash input from the fields a selector picks, in the order of
// Microsoft's RSS specification (source address, destination address, source port,
// destination port); a frame that lacks the selected L3/L4 protocol hashes nothing and
// gets hash 0 (the first RQ), as with the PRM's field selector the other protocol's
// traffic does not match the TIR's hash (kernel en/rss.c gives each traffic type its TIR).
// The input is appended to in (a caller's buffer, so that no hash allocates).
func appendHashInput(in []byte, h *headers, sel HashFields) ([]byte, uint8) {
	wantV := uint8(4)
	if sel.IPv6 {
		wantV = 6
	}
	if h.l3 < 0 || h.ipVersion != wantV || sel.Selected == 0 {
		return nil, 0
	}
	var ht uint8
	addr := func(a [16]byte) []byte {
		if wantV == 4 {
			return a[12:]
		}
		return a[:]
	}
	if sel.Selected&HashSrcIP != 0 {
		in = append(in, addr(h.src)...)
	}
	if sel.Selected&HashDstIP != 0 {
		in = append(in, addr(h.dst)...)
	}
	if sel.Selected&(HashSrcIP|HashDstIP) != 0 {
		// device.h CQE_RSS_HTYPE_IP: bits 3:2 say which IP version was hashed.
		if wantV == 4 {
			ht |= 1 << 2
		} else {
			ht |= 2 << 2
		}
	}
	if sel.Selected&(HashL4SPort|HashL4DPort) != 0 {
		wantP := uint8(protoTCP)
		if sel.UDP {
			wantP = protoUDP
		}
		if h.proto == wantP && h.l4 >= 0 {
			if sel.Selected&HashL4SPort != 0 {
				in = binary.BigEndian.AppendUint16(in, h.sport)
			}
			if sel.Selected&HashL4DPort != 0 {
				in = binary.BigEndian.AppendUint16(in, h.dport)
			}
			// device.h CQE_RSS_HTYPE_L4: bits 7:6, 1 TCP, 2 UDP.
			if sel.UDP {
				ht |= 2 << 6
			} else {
				ht |= 1 << 6
			}
		}
	}
	return in, ht
}

// rssHash is a TIR's hash of a packet and the CQE's hash type for it.
func rssHash(t *tir, pkt *packet) (uint32, uint8) {
	p := &t.p
	h, sel := &pkt.outer, p.Outer
	if p.Tunneled && pkt.tunneled && pkt.inner.l3 >= 0 {
		h, sel = &pkt.inner, p.Inner
	}
	var buf [maxHashInput]byte
	in, ht := appendHashInput(buf[:0], h, sel)
	if len(in) == 0 {
		return 0, 0
	}
	switch p.HashFn {
	case 2:
		return t.hash.sum(in), ht
	case 1:
		// Inverted XOR8 (MLX5_RX_HASH_FN_INVERTED_XOR8): the complement of the XOR of
		// the input bytes; its exact definition is not public (inferred).
		var x byte
		for _, b := range in {
			x ^= b
		}
		return uint32(^x), ht
	}
	return 0, 0
}

// rqtIndex picks an RQT entry for a hash: the low bits for a power-of-two table, as the
// kernel always sizes RQTs (en/rqt.c), and the remainder otherwise (inferred).
func rqtIndex(hash uint32, n int) int {
	if n&(n-1) == 0 {
		return int(hash & uint32(n-1))
	}
	return int(hash % uint32(n))
}

// receive runs one frame from the wire through RX steering, the TIR and an RQ.
//
// A frame whose key (keyOf) has a decision cached since the last change of the port's
// objects takes it (steercache.go): its flow counters are counted and it is delivered as the
// walk below would deliver it.
func (n *NIC) receive(f []byte) {
	k, keyed := keyOf(f)
	keyed = keyed && !n.noRXCache
	if keyed {
		if e := n.rxCache.get(&k, n.gen); e != nil {
			n.countFlows(e.counters[:e.nc], len(f))
			if e.route.stat != nil {
				*e.route.stat++
				return
			}
			n.deliver(e.route.r, f, &e.pkt, e.route.meta)
			return
		}
	}
	v := n.steer(TableNICRX, f)
	rt := n.route(&v)
	if keyed && !v.rewritten && !v.flex && (v.pkt != nil || rt.stat != nil) {
		n.rxCache.put(&k, n.gen, v.pkt, rt, n.steerCounted)
	}
	if rt.stat != nil {
		*rt.stat++
		return
	}
	pkt := v.pkt
	if pkt == nil {
		pkt = parse(v.frame)
	}
	n.deliver(rt.r, v.frame, pkt, rt.meta)
}

// route is where a steering verdict sends the frame: the RQ its TIR picks (by RSS hash
// through the RQT, or the TIR's own RQ), or the counter of a drop or miss.
func (n *NIC) route(v *verdict) rxRoute {
	if v.drop {
		if v.miss {
			return rxRoute{stat: &n.stats.RXSteeringMiss}
		}
		return rxRoute{stat: &n.stats.RXDropRule}
	}
	if !v.haveTIR {
		return rxRoute{stat: &n.stats.RXSteeringMiss}
	}
	t := n.tirs[v.tir]
	if t == nil {
		return rxRoute{stat: &n.stats.RXSteeringMiss}
	}
	meta := rxMeta{flowTag: v.flowTag}
	var r *rq
	if t.p.Indirect {
		q := n.rqts[t.p.RQT]
		if q == nil || len(q.p.RQNs) == 0 {
			return rxRoute{stat: &n.stats.RXSteeringMiss}
		}
		pkt := v.pkt
		if pkt == nil {
			pkt = parse(v.frame)
		}
		meta.hash, meta.hashType = rssHash(t, pkt)
		r = n.rqs[q.p.RQNs[rqtIndex(meta.hash, len(q.p.RQNs))]]
	} else {
		r = n.rqs[t.p.InlineRQ]
	}
	if r == nil {
		return rxRoute{stat: &n.stats.RXSteeringMiss}
	}
	return rxRoute{r: r, meta: meta}
}

var _ = prm.CQESize
