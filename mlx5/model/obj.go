package model

import (
	"fmt"

	"github.com/daqiri-go/daqiri/mlx5/model/internal/datapath"
	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// idSpace hands out object numbers of one kind and remembers which uid created each. Numbers
// start at first and are not reused until the space wraps (inferred: firmware's numbering is
// not documented; never reusing at once makes stale-number bugs in a driver visible).
type idSpace struct {
	name  string
	first uint32
	limit uint32 // numbers are below limit (the field width)
	next  uint32
	used  map[uint32]uint16
}

func newIDs(name string, first, limit uint32) idSpace {
	return idSpace{name: name, first: first, limit: limit, next: first, used: map[uint32]uint16{}}
}

// alloc returns a free number; max is how many may exist at once (the caps' limit).
func (s *idSpace) alloc(uid uint16, max int) (uint32, error) {
	if len(s.used) >= max || uint32(len(s.used)) >= s.limit-s.first {
		return 0, fail(prm.StatusLimErr, SyndromeLimit, "no more %ss: %d exist, the limit is %d", s.name, len(s.used), max)
	}
	for {
		n := s.next
		s.next++
		if s.next >= s.limit {
			s.next = s.first
		}
		if _, taken := s.used[n]; !taken {
			s.used[n] = uid
			return n, nil
		}
	}
}

// has reports whether n exists and uid may use it: its creator, uid 0 (the kernel or a VFIO
// driver, which own the function) or, for an object uid 0 or the shared uid created, anyone
// (DevX objects may refer to the kernel's, as the kernel's devx.c allows for UARs, PDs and
// EQs; the kernel creates its completion EQs with MLX5_SHARED_RESOURCE_UID, eq.c
// create_map_eq, for DevX CQs to use). Inferred from devx.c's uid stamping; firmware's exact
// rule is not public.
func (s *idSpace) has(n uint32, uid uint16) bool {
	owner, ok := s.used[n]
	return ok && (uid == 0 || owner == 0 || owner == prm.SharedResourceUID || owner == uid)
}

// owns reports whether uid may modify or destroy n: its creator or uid 0.
func (s *idSpace) owns(n uint32, uid uint16) bool {
	owner, ok := s.used[n]
	return ok && (uid == 0 || owner == uid)
}

func (s *idSpace) free(n uint32) { delete(s.used, n) }

// objects is firmware's object bookkeeping on the control side. The datapath keeps its own
// state for CQs, queues and steering; this side allocates their numbers and counts the
// references that make a destroy busy.
type objects struct {
	uars, pds, tds, eqs, umems, mkeys, qcounters idSpace
	cqs, rqs, sqs, rqts, tirs, tiss              idSpace
	tables, groups, counters, reformats          idSpace
	eqRefs                                       map[uint32]int // CQs on each EQ
	pdRefs, tdRefs, umemRefs                     map[uint32]int
	cqEQ                                         map[uint32]uint32
	queuePD                                      map[uint32]uint32 // rqn/sqn (tagged) → pd
	tirTD, tisTD                                 map[uint32]uint32
	rqtMax                                       map[uint32]uint32   // rqt_max_size as created
	umemUsers                                    map[uint32][]uint32 // object (tagged) → UMEMs it uses
	pacing                                       map[uint16]bool
	ib                                           ibObjects   // mlx5_ib's kinds (ib.go)
	flex                                         flexObjects // flex parser nodes (flex.go)
}

// firstMKey is the lowest MKEY index the model hands out. Index 1 with the key byte 0 is
// key 0x100, MLX5_INVALID_LKEY, which ends a receive scatter list (include/linux/mlx5/qp.h,
// rdma-core mlx5dv.h): the kernel's mlx5e creates its first MKEY with key byte 0 and puts it
// in every RQ entry, so the model, handing out index 1, dropped each frame mlx5e was to
// receive as a length error. Firmware never hands that key out; the model starts at 2.
const firstMKey = 2

func newObjects() objects {
	const n24 = 1 << 24
	return objects{
		uars: newIDs("UAR", firstUAR, maxUAR+1), pds: newIDs("PD", 1, n24), tds: newIDs("transport domain", 1, n24),
		eqs: newIDs("EQ", 0, 256), umems: newIDs("UMEM", 1, n24), mkeys: newIDs("MKEY", firstMKey, n24),
		qcounters: newIDs("Q counter", 1, 256),
		cqs:       newIDs("CQ", 1, n24), rqs: newIDs("RQ", 1, n24), sqs: newIDs("SQ", 1, n24),
		rqts: newIDs("RQT", 1, n24), tirs: newIDs("TIR", 1, n24), tiss: newIDs("TIS", 1, n24),
		tables: newIDs("flow table", 1, n24), groups: newIDs("flow group", 1, n24),
		counters: newIDs("flow counter", 1, n24), reformats: newIDs("packet reformat context", 1, 1<<31),
		eqRefs: map[uint32]int{}, pdRefs: map[uint32]int{}, tdRefs: map[uint32]int{},
		umemRefs: map[uint32]int{}, cqEQ: map[uint32]uint32{},
		queuePD: map[uint32]uint32{}, tirTD: map[uint32]uint32{}, tisTD: map[uint32]uint32{},
		rqtMax: map[uint32]uint32{},
		pacing: map[uint16]bool{}, umemUsers: map[uint32][]uint32{},
		ib: newIBObjects(), flex: newFlexObjects(),
	}
}

// destroyAll is what TEARDOWN_HCA and DISABLE_HCA do to objects: firmware forgets them all
// and the datapath stops.
func (d *Device) destroyAll() {
	d.objs = newObjects()
	d.evMu.Lock()
	d.eqs = map[uint32]*eq{}
	d.evMu.Unlock()
	d.keysMu.Lock()
	d.keysGen.Add(1)
	d.mkeys = map[uint32]*mkey{}
	d.umems = map[uint32]*umem{}
	d.keysMu.Unlock()
	d.replaceNIC()
}

func (d *Device) uarAllocated(n uint32) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.objs.uars.used[n]
	return ok
}

// Simple allocations: UAR, PD, transport domain (mlx5_ifc.h alloc_*_in/out).

func (d *Device) allocUAR(c *cmd) error {
	if err := c.need(nil, prm.AllocUAROut.UAR); err != nil {
		return err
	}
	n, err := d.objs.uars.alloc(c.uid, maxUAR+1-firstUAR)
	if err != nil {
		return err
	}
	c.set(prm.AllocUAROut.UAR, uint64(n))
	return nil
}

// deallocUAR frees a UAR page even while CQs or SQs name it: a UAR is a doorbell page, not an
// object they hold, and Linux frees the objects of a closing user context in the order they
// were made (drivers/infiniband/core/rdma_core.c __uverbs_cleanup_ufile walks the context's
// object list from its head), so a DevX UAR goes before the CQ made on it: the conformance
// guest saw DEALLOC_UAR refused there when DPDK's process ended (issue 26).
// Doorbells rung on a freed page are ignored, as stores to any unallocated UAR page are
// (bar.go); a queue whose page is freed just hears no more doorbells on it.
func (d *Device) deallocUAR(c *cmd) error {
	return d.dealloc(c, prm.DeallocUARIn.UAR, &d.objs.uars, nil)
}

func (d *Device) allocPD(c *cmd) error {
	if err := c.need(nil, prm.AllocPDOut.PD); err != nil {
		return err
	}
	n, err := d.objs.pds.alloc(c.uid, d.capLimit(prm.CmdHCACap.LogMaxPD))
	if err != nil {
		return err
	}
	c.set(prm.AllocPDOut.PD, uint64(n))
	return nil
}

func (d *Device) deallocPD(c *cmd) error {
	return d.dealloc(c, prm.DeallocPDIn.PD, &d.objs.pds, d.objs.pdRefs)
}

func (d *Device) allocTD(c *cmd) error {
	if err := c.need(nil, prm.AllocTransportDomainOut.TransportDomain); err != nil {
		return err
	}
	n, err := d.objs.tds.alloc(c.uid, d.capLimit(prm.CmdHCACap.LogMaxTransportDomain))
	if err != nil {
		return err
	}
	c.set(prm.AllocTransportDomainOut.TransportDomain, uint64(n))
	return nil
}

func (d *Device) deallocTD(c *cmd) error {
	return d.dealloc(c, prm.DeallocTransportDomainIn.TransportDomain, &d.objs.tds, d.objs.tdRefs)
}

// dealloc frees the object the field names, unless another object still refers to it.
func (d *Device) dealloc(c *cmd, f prm.Field, s *idSpace, refs map[uint32]int) error {
	if err := c.need(ins(f)); err != nil {
		return err
	}
	n := uint32(c.get(f))
	if !s.owns(n, c.uid) {
		return noObject("%v: %s %d does not exist", c.op, s.name, n)
	}
	if refs != nil && refs[n] > 0 {
		return fail(prm.StatusResBusy, SyndromeBusy, "%v: %s %d is still used by %d objects", c.op, s.name, n, refs[n])
	}
	s.free(n)
	return nil
}

// umem is registered memory: a list of pages in the DMA space (CREATE_UMEM's umem: page size,
// first-page offset, MTT entries).
type umem struct {
	pages     []uint64
	pageShift uint
	offset    uint64
}

func (d *Device) createUMEM(c *cmd) error {
	base := prm.CreateUMEMIn.UMEM.Off
	u := prm.UMEM
	if err := c.need(ins(u.NumOfMtt.At(base)), prm.CreateUMEMOut.UMEMID); err != nil {
		return err
	}
	n := c.get(u.NumOfMtt.At(base))
	shift := uint(c.get(u.LogPageSize.At(base))) + prm.AdapterPageShift
	if n == 0 || n > maxCmdLen/8 || shift > 30 {
		return badParam("CREATE_UMEM: %d MTT entries of %d-byte pages", n, uint64(1)<<shift)
	}
	if err := c.need(ins(u.Mtt.At(base + uint32(n-1)*64))); err != nil {
		return err
	}
	pages := make([]uint64, n)
	for i := range pages {
		pa := c.get(u.Mtt.At(base+uint32(i)*64)) &^ 0xff
		if pa&(1<<shift-1) != 0 {
			return badParam("CREATE_UMEM: MTT entry %d: page %#x is not aligned to %d bytes", i, pa, uint64(1)<<shift)
		}
		pages[i] = pa
	}
	// Pages larger than 4 KiB whose pieces are separate mappings (vfio-user: mlx5_vfio.c
	// registers a UMEM in pages as large as its I/O address alignment allows) are kept in
	// 4 KiB pieces, as for queue buffers (ioPages). Pages in a window (GPU memory registered
	// by DMA-BUF) are checked whole: a window is one mapping, reached only by copy.
	var err error
	if d.space.Window(pages[0]) {
		for i, pa := range pages {
			if err := d.space.Check(pa, 1<<shift, dma.Read); err != nil {
				return fail(prm.StatusBadParamErr, SyndromeBadMemory, "CREATE_UMEM: MTT entry %d: %v", i, err)
			}
		}
	} else if pages, shift, err = d.ioPages(pages, shift, "CREATE_UMEM: MTT entry", dma.Read); err != nil {
		return err
	}
	id, err := d.objs.umems.alloc(c.uid, d.capLimit(prm.CmdHCACap.LogMaxUMEM))
	if err != nil {
		return err
	}
	d.keysMu.Lock()
	d.keysGen.Add(1)
	d.umems[id] = &umem{pages: pages, pageShift: shift, offset: c.get(u.PageOffset.At(base))}
	d.keysMu.Unlock()
	c.set(prm.CreateUMEMOut.UMEMID, uint64(id))
	return nil
}

// mttPage reads one MTT entry (mlx5_ifc.h mtt: address bits 63:8) and checks the page.
func (d *Device) mttPage(c *cmd, f prm.Field, shift uint, off, n uint64) (uint64, error) {
	// The entry is an mlx5_ifc_mtt (ptag_63_32, then ptag_31_8 and the enable bits): 64 bits,
	// of which klm_pas_mtt's 32-bit elements are only the first half. Reading just that half
	// took the high word for the address — 0 for every page below 4 GiB, which the model
	// accepted whenever something happened to be mapped at I/O address 0 (a flaky ibv_reg_mr
	// under rdma-core's VFIO provider in the conformance VM).
	pa := c.get(prm.MTT.PtagHi.At(f.Off))<<32 | c.get(prm.MTT.PtagLo.At(f.Off))<<8
	if pa&(1<<shift-1) != 0 {
		return 0, badParam("page %#x is not aligned to %d bytes", pa, uint64(1)<<shift)
	}
	if err := d.space.Check(pa+off, n, dma.Read); err != nil {
		return 0, fail(prm.StatusBadParamErr, SyndromeBadMemory, "page %#x: %v", pa, err)
	}
	return pa, nil
}

func (d *Device) destroyUMEM(c *cmd) error {
	if err := c.need(ins(prm.DestroyUMEMIn.UMEMID)); err != nil {
		return err
	}
	id := uint32(c.get(prm.DestroyUMEMIn.UMEMID))
	if err := d.dealloc(c, prm.DestroyUMEMIn.UMEMID, &d.objs.umems, d.objs.umemRefs); err != nil {
		return err
	}
	d.keysMu.Lock()
	d.keysGen.Add(1)
	delete(d.umems, id)
	d.keysMu.Unlock()
	return nil
}

// mkey is a memory key: a range of virtual addresses of one PD and how they translate (PA:
// the address is the I/O address; MTT: a page list).
type mkey struct {
	index     uint32
	variant   uint8 // mkey_7_0: the key's low byte, chosen by the driver
	uid       uint16
	pd        uint32
	mode      uint64
	start     uint64
	length    uint64
	any       bool // length64: the whole address space
	lr, lw    bool
	pages     []uint64
	pageShift uint
	ctx       []byte
	// viaUMEM: the key translates through a UMEM's pages, start_addr at byte umemBase.
	viaUMEM  bool
	umemBase uint64
}

// createMKey is CREATE_MKEY with access mode PA or MTT (mkc access_mode_1_0/4_2; the MTT
// list follows the context as klm_pas_mtt, translations_octword_actual_size octwords of two
// entries), or over a UMEM (mkey_umem_valid; see umem.go). KLM/KSM keys are not modelled.
func (d *Device) createMKey(c *cmd) error {
	in := prm.CreateMKeyIn
	base := in.MemoryKeyMKeyEntry.Off
	k := prm.MKC
	if err := c.need(ins(in.MemoryKeyMKeyEntry), prm.CreateMKeyOut.MKeyIndex); err != nil {
		return err
	}
	m := &mkey{
		variant: uint8(c.get(k.MKey70.At(base))), uid: c.uid,
		pd:    uint32(c.get(k.PD.At(base))),
		mode:  c.get(k.AccessMode42.At(base))<<2 | c.get(k.AccessMode10.At(base)),
		start: c.get(k.StartAddr.At(base)), length: c.get(k.Len.At(base)),
		any: c.get(k.Length64.At(base)) != 0,
		lr:  c.get(k.Lr.At(base)) != 0, lw: c.get(k.Lw.At(base)) != 0,
		ctx: append([]byte(nil), in.MemoryKeyMKeyEntry.Slice(c.in)...),
	}
	if !d.objs.pds.has(m.pd, c.uid) {
		return noObject("CREATE_MKEY: PD %d does not exist", m.pd)
	}
	var umemID uint32
	viaUMEM := c.get(in.MKeyUMEMValid) != 0
	switch {
	case viaUMEM:
		id, err := d.mkeyUMEM(c, m)
		if err != nil {
			return err
		}
		umemID = id
	case m.mode == prm.MKeyAccessPA:
	case m.mode == prm.MKeyAccessMTT:
		m.pageShift = uint(c.get(k.LogPageSize.At(base)))
		// Up to 2 GiB pages: rdma-core's VFIO provider sizes one page to span a whole
		// buffer and caps it at MLX5_MAX_PAGE_SHIFT, 31 (mlx5_vfio.c mlx5_vfio_reg_mr).
		if m.pageShift < prm.AdapterPageShift || m.pageShift > 31 {
			return badParam("CREATE_MKEY: log_page_size %d", m.pageShift)
		}
		n := c.get(k.TranslationsOctwordSize.At(base)) * 2
		if n == 0 || n > maxCmdLen/8 {
			return badParam("CREATE_MKEY: %d translation entries", n)
		}
		if !m.any && (m.start>>m.pageShift+n)<<m.pageShift < m.start+m.length {
			return badParam("CREATE_MKEY: %d pages of %d bytes do not cover %d bytes", n, 1<<m.pageShift, m.length)
		}
		if err := c.need(ins(in.KlmPASMtt.At(uint32(n-1) * 64))); err != nil {
			return err
		}
		// Only the part of each page the key's range covers must be mapped: firmware does
		// not walk the pages when it creates a key (an access outside the IOMMU's mappings
		// faults when it happens), and rdma-core's VFIO provider maps just the registered
		// bytes of a page it sized to span the buffer (calc_spanning_page_size), which can
		// be far larger: the model refused such keys whenever no neighbouring mapping
		// happened to fill the rest of the page (a flaky ibv_reg_mr EINVAL in the
		// conformance VM). A length64 key covers every page whole; its first byte is checked.
		size := uint64(1) << m.pageShift
		for i := uint64(0); i < n; i++ {
			pageVA := (m.start>>m.pageShift + i) << m.pageShift
			lo, hi := max(pageVA, m.start), min(pageVA+size, m.start+m.length)
			if m.any {
				lo, hi = pageVA, pageVA+1
			}
			if hi <= lo { // a trailing entry past the range
				lo, hi = pageVA, pageVA
			}
			pa, err := d.mttPage(c, in.KlmPASMtt.At(uint32(i)*64), m.pageShift, lo-pageVA, hi-lo)
			if err != nil {
				return fmt.Errorf("CREATE_MKEY: %w", err)
			}
			m.pages = append(m.pages, pa)
		}
	default:
		return fail(prm.StatusBadParamErr, SyndromeNotModelled, "CREATE_MKEY: access mode %d is not modelled (PA and MTT are)", m.mode)
	}
	n, err := d.objs.mkeys.alloc(c.uid, d.capLimit(prm.CmdHCACap.LogMaxMKey))
	if err != nil {
		return err
	}
	m.index = n
	d.objs.pdRefs[m.pd]++
	if viaUMEM {
		d.useUMEMs(mkeyKey(n), umemID)
	}
	d.keysMu.Lock()
	d.keysGen.Add(1)
	d.mkeys[n] = m
	d.keysMu.Unlock()
	c.set(prm.CreateMKeyOut.MKeyIndex, uint64(n))
	return nil
}

func (d *Device) queryMKey(c *cmd) error {
	if err := c.need(ins(prm.QueryMKeyIn.MKeyIndex), prm.QueryMKeyOut.MemoryKeyMKeyEntry); err != nil {
		return err
	}
	n := uint32(c.get(prm.QueryMKeyIn.MKeyIndex))
	if !d.objs.mkeys.has(n, c.uid) {
		return noObject("QUERY_MKEY: MKEY index %d does not exist", n)
	}
	d.keysMu.RLock()
	copy(prm.QueryMKeyOut.MemoryKeyMKeyEntry.Slice(c.out), d.mkeys[n].ctx)
	d.keysMu.RUnlock()
	return nil
}

func (d *Device) destroyMKey(c *cmd) error {
	if err := c.need(ins(prm.DestroyMKeyIn.MKeyIndex)); err != nil {
		return err
	}
	n := uint32(c.get(prm.DestroyMKeyIn.MKeyIndex))
	if !d.objs.mkeys.owns(n, c.uid) {
		return noObject("DESTROY_MKEY: MKEY index %d does not exist", n)
	}
	d.keysMu.Lock()
	d.keysGen.Add(1)
	m := d.mkeys[n]
	delete(d.mkeys, n)
	d.keysMu.Unlock()
	d.objs.pdRefs[m.pd]--
	d.releaseUMEMs(mkeyKey(n))
	d.objs.mkeys.free(n)
	return nil
}

// keys is the datapath's MKEY table.
type keys struct{ d *Device }

// Translate resolves lkey + addr: the key's index and variant byte must match a key, the
// range must lie inside it, the access must be allowed (local read for TX gathers, local
// write for RX scatters), and the bytes must be mapped — within one page of an MTT or UMEM
// key, or over pages that follow each other in I/O address space. Bytes in a window (GPU
// memory) come back as a copy for a read and fail a write (Store writes them).
func (k keys) Translate(lkey uint32, addr uint64, n int, perm dma.Perm) ([]byte, error) {
	io, err := k.resolve(lkey, addr, n, perm)
	if err != nil {
		return nil, err
	}
	b, err := k.d.space.Slice(io, n, perm)
	if err != nil && perm == dma.Read {
		// A read may run over IOMMU pages that are separate mappings, or lie in a window
		// (dma.Gather copies).
		return k.d.space.Gather(io, n, perm)
	}
	return b, err
}

// Direct is Translate for host bytes only: a range in a window (GPU memory) or over
// several mappings fails instead of coming back as a copy (datapath.DirectTranslator).
func (k keys) Direct(lkey uint32, addr uint64, n int, perm dma.Perm) ([]byte, error) {
	io, err := k.resolve(lkey, addr, n, perm)
	if err != nil {
		return nil, err
	}
	return k.d.space.Slice(io, n, perm)
}

// keys serves the datapath's TX gathers and RX scatters, whole spans included.
var _ datapath.SpanTranslator = keys{}

// maxSpan bounds the keys Span hands out whole (a length64 key, or one larger than any
// memory region, is translated range by range as before).
const maxSpan = 1 << 40

// Span is lkey's whole range as one slice of host memory (datapath.SpanTranslator): the key
// must exist with its variant, allow perm, and its range must translate as a whole (pages
// that follow each other in I/O address space, in one host mapping), checked as Direct
// checks it. Any range inside then translates to the matching bytes of the span: the
// translation is linear over adjacent pages, and a mapping holding the whole holds each part.
func (k keys) Span(lkey uint32, perm dma.Perm) (start uint64, mem []byte, ok bool) {
	d := k.d
	d.keysMu.RLock()
	m := d.mkeys[lkey>>8]
	d.keysMu.RUnlock()
	if m == nil || m.variant != uint8(lkey) || m.any || m.length == 0 || m.length > maxSpan {
		return 0, nil, false
	}
	b, err := k.Direct(lkey, m.start, int(m.length), perm)
	if err != nil {
		return 0, nil, false
	}
	return m.start, b, true
}

// Gen changes whenever a translation may have: an MKEY or UMEM created or destroyed
// (keysGen), or a DMA mapping added or removed (dma.Space.Gen); both only grow.
func (k keys) Gen() uint64 { return k.d.keysGen.Load() + k.d.space.Gen() }

// Store writes p at lkey + addr (an RX scatter), checked as Translate checks a write: into
// host memory by copy, into a window (GPU memory) through its copy engine.
func (k keys) Store(lkey uint32, addr uint64, p []byte) error {
	io, err := k.resolve(lkey, addr, len(p), dma.Write)
	if err != nil {
		return err
	}
	return k.d.space.Write(io, p)
}

// resolve is the I/O address of n bytes at lkey + addr, after Translate's checks.
func (k keys) resolve(lkey uint32, addr uint64, n int, perm dma.Perm) (uint64, error) {
	d := k.d
	d.keysMu.RLock()
	m := d.mkeys[lkey>>8]
	d.keysMu.RUnlock()
	if m == nil || m.variant != uint8(lkey) {
		return 0, fmt.Errorf("mlx5 model: lkey %#x does not exist", lkey)
	}
	if n < 0 || (!m.any && (addr < m.start || addr-m.start > m.length || uint64(n) > m.length-(addr-m.start))) {
		return 0, fmt.Errorf("mlx5 model: %d bytes at %#x outside lkey %#x (%#x+%#x)", n, addr, lkey, m.start, m.length)
	}
	if (perm&dma.Write != 0 && !m.lw) || (perm&dma.Read != 0 && !m.lr) {
		return 0, fmt.Errorf("mlx5 model: lkey %#x does not allow local %v", lkey, perm)
	}
	if m.mode == prm.MKeyAccessPA {
		return addr, nil
	}
	off := addr - m.start&^(1<<m.pageShift-1)
	if m.viaUMEM {
		off = m.umemBase + (addr - m.start)
	}
	page := off >> m.pageShift
	in := off & (1<<m.pageShift - 1)
	if page >= uint64(len(m.pages)) {
		return 0, fmt.Errorf("mlx5 model: %d bytes at %#x beyond the pages of lkey %#x", n, addr, lkey)
	}
	// A range that runs into the next pages is one slice when those pages follow each other
	// in I/O address space (registered memory mapped in one piece); the device itself
	// walks any page list, but Translate hands out one contiguous view.
	last := (in + uint64(n) - 1) >> m.pageShift
	if n > 0 && page+last >= uint64(len(m.pages)) {
		return 0, fmt.Errorf("mlx5 model: %d bytes at %#x run past the pages of lkey %#x", n, addr, lkey)
	}
	for i := uint64(1); n > 0 && i <= last; i++ {
		if m.pages[page+i] != m.pages[page]+i<<m.pageShift {
			return 0, fmt.Errorf("mlx5 model: %d bytes at %#x cross into a non-adjacent page of lkey %#x (the model serves one contiguous view)", n, addr, lkey)
		}
	}
	return m.pages[page] + in, nil
}

// Q counters (ALLOC/DEALLOC/QUERY_Q_COUNTER): out_of_buffer counts the frames dropped for
// want of a WQE on the RQs attached to the set (rqc counter_set_id).

func (d *Device) allocQCounter(c *cmd) error {
	if err := c.need(nil, prm.AllocQCounterOut.CounterSetID); err != nil {
		return err
	}
	n, err := d.objs.qcounters.alloc(c.uid, 255)
	if err != nil {
		return err
	}
	c.set(prm.AllocQCounterOut.CounterSetID, uint64(n))
	return nil
}

func (d *Device) deallocQCounter(c *cmd) error {
	return d.dealloc(c, prm.DeallocQCounterIn.CounterSetID, &d.objs.qcounters, nil)
}

func (d *Device) queryQCounter(c *cmd) error {
	in := prm.QueryQCounterIn
	if err := c.need(ins(in.CounterSetID), prm.QueryQCounterOut.OutOfBuffer); err != nil {
		return err
	}
	n := uint32(c.get(in.CounterSetID))
	if !d.objs.qcounters.has(n, c.uid) {
		return noObject("QUERY_Q_COUNTER: counter set %d does not exist", n)
	}
	c.set(prm.QueryQCounterOut.OutOfBuffer, d.dp().QCounterOutOfBuffer(n, c.get(in.Clear) != 0))
	return nil
}

// pasMemory decodes a queue's buffer given as a PAS list in the command (an array of 64-bit
// page addresses at pas, each page 1 << (log_page_size + 12) bytes) and checks that the pages
// cover the ring and are mapped. page_offset is in 64-byte units (cqc/eqc/wq page_offset).
func (d *Device) pasMemory(c *cmd, pas prm.Field, logPageSize uint8, pageOffset, ringBytes uint64, what string) (datapath.Paged, int, error) {
	shift := uint(logPageSize) + prm.AdapterPageShift
	if shift > 30 {
		return datapath.Paged{}, 0, badParam("%s: log_page_size %d", what, logPageSize)
	}
	off := pageOffset * 64
	npages := (off + ringBytes + 1<<shift - 1) >> shift
	if npages > maxCmdLen/8 {
		return datapath.Paged{}, 0, badParam("%s: %d pages", what, npages)
	}
	if err := c.need(ins(pas.At(uint32(npages-1) * 64))); err != nil {
		return datapath.Paged{}, 0, err
	}
	pages := make([]uint64, npages)
	for i := range pages {
		pa := c.get(pas.At(uint32(i) * 64))
		if pa&(1<<prm.AdapterPageShift-1) != 0 {
			return datapath.Paged{}, 0, badParam("%s: PAS entry %d (%#x) is not page aligned", what, i, pa)
		}
		pages[i] = pa
	}
	io, ioShift, err := d.ioPages(pages, shift, what+": PAS entry", dma.Read|dma.Write)
	if err != nil {
		return datapath.Paged{}, 0, err
	}
	return datapath.Paged{Space: d.space, PageShift: ioShift, Pages: io, Offset: off}, int(npages), nil
}

// ioPages checks that pages of 1<<shift bytes are mapped for reading and writing and returns
// them as the datapath is to address them: as given when each page is one piece of the DMA
// space, otherwise every page cut into 4 KiB pages. A device reaches memory through an IOMMU
// page by page, and under QEMU's vfio-user client each IOMMU page the guest maps is a
// mapping of its own, so a queue the VFIO provider puts in one 16 KiB page (mlx5_vfio.c
// create_map_eq: log_page_size 2, one PAS entry) lies in four mappings. Inferred limit: a
// WQE or CQE that crosses a 4 KiB boundary inside such a page faults; the drivers' entries
// (64-byte CQEs and EQEs, WQEs kept within a page) do not.
func (d *Device) ioPages(pages []uint64, shift uint, what string, perm dma.Perm) ([]uint64, uint, error) {
	whole := true
	for _, pa := range pages {
		if _, err := d.space.Slice(pa, 1<<shift, perm); err != nil {
			whole = false
			break
		}
	}
	if whole || shift == prm.AdapterPageShift {
		if !whole {
			for i, pa := range pages {
				if _, err := d.space.Slice(pa, 1<<shift, perm); err != nil {
					return nil, 0, fail(prm.StatusBadParamErr, SyndromeBadMemory, "%s %d: %v", what, i, err)
				}
			}
		}
		return pages, shift, nil
	}
	per := 1 << (shift - prm.AdapterPageShift)
	io := make([]uint64, 0, len(pages)*per)
	for i, pa := range pages {
		for j := range per {
			sub := pa + uint64(j)<<prm.AdapterPageShift
			if _, err := d.space.Slice(sub, 1<<prm.AdapterPageShift, perm); err != nil {
				return nil, 0, fail(prm.StatusBadParamErr, SyndromeBadMemory, "%s %d, 4 KiB page %d: %v", what, i, j, err)
			}
			io = append(io, sub)
		}
	}
	return io, prm.AdapterPageShift, nil
}
