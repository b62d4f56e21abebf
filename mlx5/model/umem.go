package model

import (
	"fmt"
	"github.com/daqiri-go/daqiri/mlx5/model/internal/datapath"
	"github.com/daqiri-go/daqiri/mlx5/model/internal/dma"
	"github.com/daqiri-go/daqiri/mlx5/prm"
)

// UMEM-backed queues and keys: a CQ, RQ or SQ whose ring (cq_umem_*, wq_umem_*) or doorbell
// record (dbr_umem_*; dbr_addr is then an offset into that UMEM) lives in registered memory
// instead of a PAS list, and an MKEY that translates through a UMEM (mkey_umem_*). This is how
// DevX drivers create queues (DPDK mlx5_devx.c and mlx5_devx_cmds.c, rdma-core's DevX users);
// the field layouts are from DPDK's mlx5_prm.h (package prm, newerIfcField).
//
// Firmware's rules here are inferred, not documented: the model requires the UMEM to exist
// and to be the caller's (or uid 0's), the range to lie wholly inside it, a ring offset
// aligned to 64 bytes (a CQE, a send WQE basic block), a doorbell record 8-byte aligned
// inside one page, and every page the range touches to be mapped for read and write. A UMEM
// in use by a queue or key is busy (DESTROY_UMEM fails with BAD_RES_STATE until they are
// destroyed).

// umemKey tags the object that uses UMEMs in objects.umemUsers: RQ and SQ numbers as
// queuePD tags them, CQs and MKEY indexes with their own tags.
func cqKey(n uint32) uint32   { return n | 1<<30 }
func mkeyKey(n uint32) uint32 { return n | 3<<30 }

// umemOf looks up a UMEM the command may use.
func (d *Device) umemOf(c *cmd, id uint64, what, field string) (*umem, error) {
	if !d.objs.umems.has(uint32(id), c.uid) {
		return nil, noObject("%s: %s %d is not a UMEM", what, field, id)
	}
	d.keysMu.RLock()
	u := d.umems[uint32(id)]
	d.keysMu.RUnlock()
	if u == nil {
		return nil, noObject("%s: %s %d is not a UMEM", what, field, id)
	}
	return u, nil
}

// umemPaged is n bytes at off of UMEM id as a ring the datapath reads and writes.
func (d *Device) umemPaged(c *cmd, id, off, n uint64, what, field string) (datapath.Paged, error) {
	u, err := d.umemOf(c, id, what, field)
	if err != nil {
		return datapath.Paged{}, err
	}
	if off%64 != 0 {
		return datapath.Paged{}, badParam("%s: offset %#x in UMEM %d is not 64-byte aligned", what, off, id)
	}
	size := uint64(len(u.pages)) << u.pageShift
	start := u.offset + off
	if off > size || n > size || start+n > size {
		return datapath.Paged{}, badParam("%s: %d bytes at offset %#x run past UMEM %d (%d bytes)", what, n, off, id, size-u.offset)
	}
	first, last := start>>u.pageShift, (start+n-1)>>u.pageShift
	pages := append([]uint64(nil), u.pages[first:last+1]...)
	io, ioShift, err := d.ioPages(pages, u.pageShift, fmt.Sprintf("%s: UMEM %d page (from %d)", what, id, first), dma.Read|dma.Write)
	if err != nil {
		return datapath.Paged{}, err
	}
	return datapath.Paged{Space: d.space, PageShift: ioShift, Pages: io, Offset: start & (1<<u.pageShift - 1)}, nil
}

// umemDBR is the doorbell record at offset off of UMEM id.
func (d *Device) umemDBR(c *cmd, id, off uint64, what string) (datapath.Contig, error) {
	u, err := d.umemOf(c, id, what, "dbr_umem_id")
	if err != nil {
		return datapath.Contig{}, err
	}
	if off%8 != 0 {
		return datapath.Contig{}, badParam("%s: doorbell record offset %#x in UMEM %d is not 8-byte aligned", what, off, id)
	}
	size := uint64(len(u.pages)) << u.pageShift
	start := u.offset + off
	if off > size || start+8 > size {
		return datapath.Contig{}, badParam("%s: doorbell record at offset %#x runs past UMEM %d (%d bytes)", what, off, id, size-u.offset)
	}
	pa := u.pages[start>>u.pageShift] + start&(1<<u.pageShift-1)
	return d.dbrMemory(pa, what)
}

// useUMEMs makes the UMEMs an object was created over busy until releaseUMEMs.
func (d *Device) useUMEMs(key uint32, ids ...uint32) {
	for _, id := range ids {
		d.objs.umemRefs[id]++
		d.objs.umemUsers[key] = append(d.objs.umemUsers[key], id)
	}
}

func (d *Device) releaseUMEMs(key uint32) {
	for _, id := range d.objs.umemUsers[key] {
		d.objs.umemRefs[id]--
	}
	delete(d.objs.umemUsers, key)
}

// cqMemory is a CQ's ring and doorbell record, from the PAS list and dbr_addr or from UMEMs;
// ids are the UMEMs used.
func (d *Device) cqMemory(c *cmd, logSize uint8) (buf datapath.Paged, dbr datapath.Contig, ids []uint32, err error) {
	in, q := prm.CreateCQIn, prm.CQC
	base := in.CQContext.Off
	if c.get(in.CQUMEMValid) != 0 {
		id := c.get(in.CQUMEMID)
		if buf, err = d.umemPaged(c, id, c.get(in.CQUMEMOffset), 64<<logSize, "CREATE_CQ", "cq_umem_id"); err != nil {
			return
		}
		ids = append(ids, uint32(id))
	} else if buf, _, err = d.pasMemory(c, in.PAS, uint8(c.get(q.LogPageSize.At(base))), c.get(q.PageOffset.At(base)), 64<<logSize, "CREATE_CQ"); err != nil {
		return
	}
	if c.get(q.DbrUMEMValid.At(base)) != 0 {
		id := c.get(q.DbrUMEMID.At(base))
		if dbr, err = d.umemDBR(c, id, c.get(q.DbrAddr.At(base)), "CREATE_CQ"); err != nil {
			return
		}
		ids = append(ids, uint32(id))
	} else if dbr, err = d.dbrMemory(c.get(q.DbrAddr.At(base)), "CREATE_CQ"); err != nil {
		return
	}
	return
}

// wqMemory is a work queue's ring (ring bytes) and doorbell record, from the PAS list and
// dbr_addr or from UMEMs.
func (d *Device) wqMemory(c *cmd, base uint32, ring uint64, what string) (buf datapath.Paged, dbr datapath.Contig, err error) {
	w := prm.WQ
	if c.get(w.WQUMEMValid.At(base)) != 0 {
		if buf, err = d.umemPaged(c, c.get(w.WQUMEMID.At(base)), c.get(w.WQUMEMOffset.At(base)), ring, what, "wq_umem_id"); err != nil {
			return
		}
	} else if buf, _, err = d.pasMemory(c, w.PAS.At(base), uint8(c.get(w.LogWQPgSz.At(base))), c.get(w.PageOffset.At(base)), ring, what); err != nil {
		return
	}
	if c.get(w.DbrUMEMValid.At(base)) != 0 {
		dbr, err = d.umemDBR(c, c.get(w.DbrUMEMID.At(base)), c.get(w.DbrAddr.At(base)), what)
	} else {
		dbr, err = d.dbrMemory(c.get(w.DbrAddr.At(base)), what)
	}
	return
}

// wqUMEMs lists the UMEMs a wq at base names.
func wqUMEMs(c *cmd, base uint32) []uint32 {
	w := prm.WQ
	var ids []uint32
	if c.get(w.WQUMEMValid.At(base)) != 0 {
		ids = append(ids, uint32(c.get(w.WQUMEMID.At(base))))
	}
	if c.get(w.DbrUMEMValid.At(base)) != 0 {
		ids = append(ids, uint32(c.get(w.DbrUMEMID.At(base))))
	}
	return ids
}

// mkeyUMEM sets up a key that translates through a UMEM: start_addr..+len maps to the
// UMEM's bytes from mkey_umem_offset on, in its pages. The key must use MTT access mode
// with no MTT list of its own (translations_octword_size 0; DPDK mlx5_devx_cmd_mkey_create
// leaves the list empty for a UMEM key), and must not be length64.
func (d *Device) mkeyUMEM(c *cmd, m *mkey) (uint32, error) {
	in, k := prm.CreateMKeyIn, prm.MKC
	base := in.MemoryKeyMKeyEntry.Off
	if err := c.need(ins(in.MKeyUMEMOffset)); err != nil {
		return 0, err
	}
	if m.mode != prm.MKeyAccessMTT {
		return 0, badParam("CREATE_MKEY: a UMEM key uses access mode MTT (1), not %d", m.mode)
	}
	if m.any {
		return 0, badParam("CREATE_MKEY: a UMEM key cannot be length64")
	}
	if n := c.get(k.TranslationsOctwordSize.At(base)); n != 0 {
		return 0, badParam("CREATE_MKEY: a UMEM key has no MTT list of its own (translations_octword_size %d)", n)
	}
	id := c.get(in.MKeyUMEMID)
	u, err := d.umemOf(c, id, "CREATE_MKEY", "mkey_umem_id")
	if err != nil {
		return 0, err
	}
	off := c.get(in.MKeyUMEMOffset)
	size := uint64(len(u.pages)) << u.pageShift
	if off > size || m.length > size || u.offset+off+m.length > size {
		return 0, badParam("CREATE_MKEY: %d bytes at offset %#x run past UMEM %d (%d bytes)", m.length, off, id, size-u.offset)
	}
	m.pages, m.pageShift = u.pages, u.pageShift
	m.viaUMEM, m.umemBase = true, u.offset+off
	return uint32(id), nil
}
