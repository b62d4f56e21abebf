package gpunetio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync"
	"time"

	"github.com/daqiri-go/daqiri/internal/iomem"
	"github.com/daqiri-go/daqiri/mlx5/channel"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"golang.org/x/sys/unix"
)

// Config is a GPU queue's shape. As YAML (the `gpunetio:` block of a tool's config):
//
//	gpunetio:
//	  mem_type: CPU_GPU      # CQs, rings, doorbell records, descriptor
//	  buf_mem_type: GPU      # packet buffers
//	  rx_wqes: 4             # striding RQ WQEs (power of two)
//	  strides_per_wqe: 512   # power of two, 512..65536
//	  stride_size: 2048      # power of two, 64..8192
//	  cqe_compression: true
//	  tx_wqebbs: 1024        # SQ basic blocks (power of two)
//	  tx_buf_size: 1048576
type Config struct {
	MemType        MemType `yaml:"mem_type"`
	BufMemType     MemType `yaml:"buf_mem_type"`
	RxWQEs         int     `yaml:"rx_wqes"`
	StridesPerWQE  int     `yaml:"strides_per_wqe"`
	StrideSize     int     `yaml:"stride_size"`
	CQECompression bool    `yaml:"cqe_compression"`
	// RxCQLog overrides the RX CQ's size (log2 CQEs); 0 sizes it for every stride plus a
	// filler per WQE, so that it cannot overrun while the kernel keeps up. A smaller CQ can
	// overrun when the kernel stalls (the fault tests use one).
	RxCQLog  int `yaml:"rx_cq_log"`
	TxWQEBBs int `yaml:"tx_wqebbs"`
	// TxBufSize is the packet memory the transmitter sends from (0: no TX queue).
	TxBufSize int `yaml:"tx_buf_size"`
	// NoRx opens a TX queue only.
	NoRx bool `yaml:"no_rx"`
}

// Striding RQ limits (mlx5_ifc.h wq log_wqe_num_of_strides from 9, log_wqe_stride_size from
// 6; the mlx5 engine's rx.go uses the same bases).
const (
	strideNumBase  = 9
	strideSizeBase = 6
)

func (c *Config) check() error {
	pow2 := func(v int) bool { return v > 0 && v&(v-1) == 0 }
	var err error
	if c.MemType, err = ParseMemType(string(c.MemType)); err != nil {
		return fmt.Errorf("gpunetio.mem_type: %w", err)
	}
	if c.BufMemType, err = ParseMemType(string(c.BufMemType)); err != nil {
		return fmt.Errorf("gpunetio.buf_mem_type: %w", err)
	}
	if c.RxWQEs == 0 {
		c.RxWQEs = 4
	}
	if c.StridesPerWQE == 0 {
		c.StridesPerWQE = 512
	}
	if c.StrideSize == 0 {
		c.StrideSize = 2048
	}
	if c.TxWQEBBs == 0 {
		c.TxWQEBBs = 1024
	}
	switch {
	case !pow2(c.RxWQEs) || c.RxWQEs > 1<<12:
		return fmt.Errorf("gpunetio.rx_wqes: %d is not a power of two from 1 to 4096", c.RxWQEs)
	case !pow2(c.StridesPerWQE) || c.StridesPerWQE < 1<<strideNumBase || c.StridesPerWQE > 1<<16:
		return fmt.Errorf("gpunetio.strides_per_wqe: %d is not a power of two from 512 to 65536 (mlx5_ifc.h log_wqe_num_of_strides)", c.StridesPerWQE)
	case !pow2(c.StrideSize) || c.StrideSize < 64 || c.StrideSize > 8192:
		return fmt.Errorf("gpunetio.stride_size: %d is not a power of two from 64 to 8192 (mlx5_ifc.h log_wqe_stride_size)", c.StrideSize)
	case !pow2(c.TxWQEBBs) || c.TxWQEBBs < 64 || c.TxWQEBBs > 1<<15:
		return fmt.Errorf("gpunetio.tx_wqebbs: %d is not a power of two from 64 to 32768", c.TxWQEBBs)
	case c.TxBufSize < 0:
		return fmt.Errorf("gpunetio.tx_buf_size: %d", c.TxBufSize)
	case c.RxCQLog < 0 || c.RxCQLog > 22:
		return fmt.Errorf("gpunetio.rx_cq_log: %d is not from 0 to 22", c.RxCQLog)
	case c.NoRx && c.TxBufSize == 0:
		return errors.New("gpunetio: no_rx and no tx_buf_size: the queue would do nothing")
	}
	return nil
}

// Queue is an RX and/or TX queue pair whose rings a GPU kernel drives.
type Queue struct {
	ch  channel.Channel
	cfg Config
	uar channel.UAR

	objs  []channel.Object
	umems []channel.UMEM
	mems  []Mem
	root  func() error

	rings Mem // CQs, rings, doorbell records, descriptor (cfg.MemType)
	ctrl  Mem // control block and shadow UAR (CPU_GPU)
	rxBuf Mem
	txBuf Mem

	desc                     []byte // the descriptor as written
	descOff                  int
	rqn, sqn, rxCQN, txCQN   uint32
	pd, td, tis              uint32
	rxLKey, txLKey           uint32
	rxCQOff, rqOff, rxDBROff int
	txCQOff, sqOff, txDBROff int
	rxCQLog                  uint8
	stopRelay                chan struct{}
	relayDone                chan struct{}
	closeOnce                sync.Once
	closeErr                 error
	relayed                  uint64 // doorbells forwarded (under relayMu)
	relayMu                  sync.Mutex
}

// Open creates the queues on ch: CQs, a striding RQ whose WQEs are all posted, an SQ, and
// (unless NoRx) a catch-all steering rule sending every frame the port receives to the RQ.
// The memory comes from alloc in cfg's placements. The caller launches kernels with
// Descriptor and Control, and closes the queue after they have finished (Close asks them to).
func Open(ch channel.Channel, cfg Config, alloc Allocator) (_ *Queue, err error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	q := &Queue{ch: ch, cfg: cfg}
	defer func() {
		if err != nil {
			q.release()
		}
	}()
	if q.uar, err = ch.AllocUAR(); err != nil {
		return nil, fmt.Errorf("gpunetio %s: UAR: %w", ch.Name(), err)
	}
	eqn, err := ch.EQN(0)
	if err != nil {
		return nil, fmt.Errorf("gpunetio %s: %w", ch.Name(), err)
	}
	if q.pd, err = q.create("ALLOC_PD", prm.NewCmdIn(prm.CmdOpAllocPD, 0, 16)); err != nil {
		return nil, err
	}
	if q.td, err = q.create("ALLOC_TRANSPORT_DOMAIN", prm.NewCmdIn(prm.CmdOpAllocTransportDomain, 0, 16)); err != nil {
		return nil, err
	}
	// Layout of the ring memory: RX CQ, RQ ring, TX CQ, SQ ring, doorbell records, descriptor.
	spw, wqes := cfg.StridesPerWQE, cfg.RxWQEs
	q.rxCQLog = uint8(bits.Len(uint(wqes*spw + wqes - 1)))
	if cfg.RxCQLog != 0 {
		q.rxCQLog = uint8(cfg.RxCQLog)
	}
	rqLog := uint8(bits.Len(uint(wqes - 1)))
	sqLog := uint8(bits.Len(uint(cfg.TxWQEBBs - 1)))
	const txCQLog = 10
	off := 0
	take := func(n, align int) int {
		o := (off + align - 1) &^ (align - 1)
		off = o + n
		return o
	}
	rx, tx := !cfg.NoRx, cfg.TxBufSize > 0
	if rx {
		q.rxCQOff = take(64<<q.rxCQLog, 4096)
		q.rqOff = take(max(32<<rqLog, 4096), 4096)
	}
	if tx {
		q.txCQOff = take(64<<txCQLog, 4096)
		q.sqOff = take(prm.SendWQEBB<<sqLog, 4096)
	}
	dbr := take(128, 4096)
	q.rxDBROff, q.txDBROff = dbr, dbr+64
	q.descOff = take(DescSize, 64)
	size := (off + 4095) &^ 4095
	if q.rings, err = q.alloc(alloc, cfg.MemType, size, "rings"); err != nil {
		return nil, err
	}
	if q.ctrl, err = q.alloc(alloc, CtrlMem(cfg.MemType), 4096, "control block"); err != nil {
		return nil, err
	}
	ringsUMEM, err := q.register(q.rings, "rings", channel.AccessLocalWrite)
	if err != nil {
		return nil, err
	}
	// The ring memory as the CPU writes it first; copied to device memory at the end.
	img := make([]byte, size)
	if b := q.rings.Bytes(); b != nil {
		img = b
	}
	desc := img[q.descOff : q.descOff+DescSize]
	le.PutUint32(desc[DescMagic:], descMagicValue)
	le.PutUint32(desc[DescVersion:], descVersion)
	le.PutUint64(desc[DescCtrl:], q.ctrl.DevAddr())
	le.PutUint64(desc[DescUAR:], q.ctrl.DevAddr()+CtrlUAR)
	base := q.rings.DevAddr()
	var flags uint32
	if rx {
		flags |= FlagRx
		if cfg.CQECompression {
			flags |= FlagCompressed
		}
		for i := 0; i < 1<<q.rxCQLog; i++ {
			img[q.rxCQOff+i*64+63] = prm.CQEOpInvalid<<4 | 1 // hardware-owned at first (rdma-core cq.c)
		}
		if err := q.openRx(img, ringsUMEM, eqn, rqLog, alloc); err != nil {
			return nil, err
		}
		le.PutUint64(desc[DescRxCQ:], base+uint64(q.rxCQOff))
		le.PutUint64(desc[DescRxCQDBR:], base+uint64(q.rxDBROff))
		le.PutUint64(desc[DescRQ:], base+uint64(q.rqOff))
		le.PutUint64(desc[DescRQDBR:], base+uint64(q.rxDBROff+32))
		le.PutUint64(desc[DescRxBuf:], q.rxBuf.DevAddr())
		le.PutUint32(desc[DescRxCQLog:], uint32(q.rxCQLog))
		le.PutUint32(desc[DescRQLog:], uint32(rqLog))
		le.PutUint32(desc[DescStrideLog:], uint32(bits.Len(uint(cfg.StrideSize))-1))
		le.PutUint32(desc[DescStridesLog:], uint32(bits.Len(uint(spw))-1))
		le.PutUint32(desc[DescRxLKey:], q.rxLKey)
		le.PutUint32(desc[DescRxBufSize:], uint32(min(wqes*spw*cfg.StrideSize, 1<<32-1)))
	}
	if tx {
		flags |= FlagTx
		for i := 0; i < 1<<txCQLog; i++ {
			img[q.txCQOff+i*64+63] = prm.CQEOpInvalid<<4 | 1
		}
		if err := q.openTx(img, ringsUMEM, eqn, sqLog, txCQLog, alloc); err != nil {
			return nil, err
		}
		le.PutUint64(desc[DescTxCQ:], base+uint64(q.txCQOff))
		le.PutUint64(desc[DescTxCQDBR:], base+uint64(q.txDBROff))
		le.PutUint64(desc[DescSQ:], base+uint64(q.sqOff))
		le.PutUint64(desc[DescSQDBR:], base+uint64(q.txDBROff+32))
		le.PutUint64(desc[DescTxBuf:], q.txBuf.DevAddr())
		le.PutUint32(desc[DescTxCQLog:], txCQLog)
		le.PutUint32(desc[DescSQLog:], uint32(sqLog))
		le.PutUint32(desc[DescSQN:], q.sqn)
		le.PutUint32(desc[DescTxLKey:], q.txLKey)
		le.PutUint32(desc[DescTxBufSize:], uint32(cfg.TxBufSize))
	}
	le.PutUint32(desc[DescFlags:], flags)
	q.desc = append([]byte(nil), desc...)
	if q.rings.Bytes() == nil {
		if err := q.rings.(DeviceMem).WriteAt(img, 0); err != nil {
			return nil, fmt.Errorf("gpunetio %s: writing the rings to GPU memory: %w", ch.Name(), err)
		}
	}
	if rx {
		// Ready only now: the WQEs and the doorbell record are in place.
		if err := q.modify(prm.CmdOpModifyRQ, q.rqn, prm.RQStateRST, prm.RQStateRDY); err != nil {
			return nil, err
		}
		if err := q.steer(); err != nil {
			return nil, err
		}
	}
	if tx {
		if err := q.modify(prm.CmdOpModifySQ, q.sqn, prm.SQStateRST, prm.SQStateRDY); err != nil {
			return nil, err
		}
		q.stopRelay, q.relayDone = make(chan struct{}), make(chan struct{})
		go q.relay()
	}
	return q, nil
}

// CtrlMem is the memory type of the control block and semaphore ring for rings of type t:
// CPU_GPU, or CPU without a GPU.
func CtrlMem(t MemType) MemType {
	if t == MemCPU {
		return MemCPU
	}
	return MemCPUGPU
}

func (q *Queue) alloc(a Allocator, t MemType, n int, what string) (Mem, error) {
	m, err := a.Alloc(t, n)
	if err != nil {
		return nil, fmt.Errorf("gpunetio %s: %s (%s, %d bytes): %w", q.ch.Name(), what, t, n, err)
	}
	q.mems = append(q.mems, m)
	return m, nil
}

// register makes m reachable by the device: host memory as is, device memory as a DMA-BUF.
func (q *Queue) register(m Mem, what string, acc channel.Access) (channel.UMEM, error) {
	var um channel.UMEM
	var err error
	if b := m.Bytes(); b != nil {
		um, err = q.ch.RegisterMemory(b, acc)
	} else {
		dm, ok := m.(DeviceMem)
		reg, ok2 := q.ch.(channel.DMABufRegistrar)
		switch {
		case !ok:
			return nil, fmt.Errorf("gpunetio %s: %s: %T has neither host bytes nor a DMA-BUF export", q.ch.Name(), what, m)
		case !ok2:
			return nil, fmt.Errorf("gpunetio %s: %s are GPU memory, which %s cannot register (no DMA-BUF registration)", q.ch.Name(), what, q.ch.Name())
		}
		fd, off, e := dm.DMABuf()
		if e != nil {
			return nil, fmt.Errorf("gpunetio %s: %s: exporting GPU memory as a DMA-BUF: %w", q.ch.Name(), what, e)
		}
		um, err = reg.RegisterDMABuf(fd, off, uint64(m.Size()), acc)
		unix.Close(fd)
	}
	if err != nil {
		return nil, fmt.Errorf("gpunetio %s: register %s (%d bytes at %#x): %w", q.ch.Name(), what, m.Size(), m.DevAddr(), err)
	}
	q.umems = append(q.umems, um)
	return um, nil
}

func (q *Queue) create(what string, in []byte) (uint32, error) {
	out := make([]byte, 16)
	o, err := q.ch.Create(in, out)
	if err != nil {
		return 0, fmt.Errorf("gpunetio %s: %s: %w", q.ch.Name(), what, err)
	}
	q.objs = append(q.objs, o)
	return o.ID(), nil
}

// mkey creates a key over a whole UMEM at its device address (prm.UMEMMKeyIn, as the mlx5
// engine's keys).
func (q *Queue) mkey(um channel.UMEM, start, n uint64) (uint32, error) {
	id, err := q.create("CREATE_MKEY", prm.UMEMMKeyIn(q.pd, um.ID(), start, n))
	return id<<8 | prm.UMEMKeyVariant, err
}

// cqIn is CREATE_CQ with ring and doorbell record in the ring UMEM.
func (q *Queue) cqIn(logSize uint8, um channel.UMEM, eqn uint32, ringOff, dbrOff int) []byte {
	base := prm.CreateCQIn.CQContext.Off
	in := prm.NewCmdIn(prm.CmdOpCreateCQ, 0, prm.CreateCQIn.PAS.ByteOff())
	c := prm.CQC
	c.LogCQSize.At(base).Set(in, uint64(logSize))
	c.UARPage.At(base).Set(in, uint64(q.uar.Index()))
	c.CEQNOrApuElement.At(base).Set(in, uint64(eqn))
	c.DbrUMEMValid.At(base).Set(in, 1)
	c.DbrUMEMID.At(base).Set(in, uint64(um.ID()))
	c.DbrAddr.At(base).Set(in, uint64(dbrOff))
	prm.CreateCQIn.CQUMEMValid.Set(in, 1)
	prm.CreateCQIn.CQUMEMID.Set(in, uint64(um.ID()))
	prm.CreateCQIn.CQUMEMOffset.Set(in, uint64(ringOff))
	return in
}

func wqUMEM(in []byte, wb uint32, um channel.UMEM, ringOff, dbrOff int) {
	w := prm.WQ
	w.WQUMEMValid.At(wb).Set(in, 1)
	w.WQUMEMID.At(wb).Set(in, uint64(um.ID()))
	w.WQUMEMOffset.At(wb).Set(in, uint64(ringOff))
	w.DbrUMEMValid.At(wb).Set(in, 1)
	w.DbrUMEMID.At(wb).Set(in, uint64(um.ID()))
	w.DbrAddr.At(wb).Set(in, uint64(dbrOff))
}

func (q *Queue) openRx(img []byte, um channel.UMEM, eqn uint32, rqLog uint8, alloc Allocator) error {
	cfg := q.cfg
	spw, wqes, ss := cfg.StridesPerWQE, cfg.RxWQEs, cfg.StrideSize
	n := wqes * spw * ss
	var err error
	if q.rxBuf, err = q.alloc(alloc, cfg.BufMemType, n, "receive buffers"); err != nil {
		return err
	}
	bum, err := q.register(q.rxBuf, "receive buffers", channel.AccessLocalWrite)
	if err != nil {
		return err
	}
	if q.rxLKey, err = q.mkey(bum, q.rxBuf.DevAddr(), uint64(q.rxBuf.Size())); err != nil {
		return err
	}
	in := q.cqIn(q.rxCQLog, um, eqn, q.rxCQOff, q.rxDBROff)
	if cfg.CQECompression {
		base := prm.CreateCQIn.CQContext.Off
		prm.CQC.CQECompEn.At(base).Set(in, 1)
		prm.CQC.MiniCQEResFormat.At(base).Set(in, prm.MiniCQEFormatCsumStrIdx)
	}
	if q.rxCQN, err = q.create("RX CREATE_CQ", in); err != nil {
		return err
	}
	base := prm.CreateRQIn.Ctx.Off
	wb := base + prm.RQC.WQ.Off
	in = prm.NewCmdIn(prm.CmdOpCreateRQ, 0, int(prm.WQ.PAS.At(wb).ByteOff()))
	rc, w := prm.RQC, prm.WQ
	rc.CQN.At(base).Set(in, uint64(q.rxCQN))
	rc.Vsd.At(base).Set(in, 1)
	rc.FlushInErrorEn.At(base).Set(in, 1)
	w.PD.At(wb).Set(in, uint64(q.pd))
	wqUMEM(in, wb, um, q.rqOff, q.rxDBROff+32)
	w.LogWQStride.At(wb).Set(in, 5) // 32-byte WQEs: mlx5dv.h struct mlx5_mprq_wqe
	w.LogWQSz.At(wb).Set(in, uint64(rqLog))
	w.WQType.At(wb).Set(in, prm.WQTypeCyclicStriding)
	w.LogWQENumOfStrides.At(wb).Set(in, uint64(bits.Len(uint(spw))-1-strideNumBase))
	w.LogWQEStrideSize.At(wb).Set(in, uint64(bits.Len(uint(ss))-1-strideSizeBase))
	if q.rqn, err = q.create("CREATE_RQ", in); err != nil {
		return err
	}
	// Every WQE posted once: slot i owns strides [i*spw, (i+1)*spw) for good, so that the
	// kernel re-posts a WQE by moving the counter alone.
	for i := 0; i < wqes; i++ {
		d := img[q.rqOff+i*32+16 : q.rqOff+i*32+32]
		prm.WQEData.ByteCount.Set(d, uint64(spw*ss))
		prm.WQEData.LKey.Set(d, uint64(q.rxLKey))
		prm.WQEData.Addr.Set(d, q.rxBuf.DevAddr()+uint64(i*spw*ss))
	}
	binary.BigEndian.PutUint32(img[q.rxDBROff+32+4*prm.RcvDBR:], uint32(wqes))
	return nil
}

func (q *Queue) openTx(img []byte, um channel.UMEM, eqn uint32, sqLog, cqLog uint8, alloc Allocator) error {
	var err error
	if q.txBuf, err = q.alloc(alloc, q.cfg.BufMemType, q.cfg.TxBufSize, "send buffers"); err != nil {
		return err
	}
	bum, err := q.register(q.txBuf, "send buffers", 0)
	if err != nil {
		return err
	}
	if q.txLKey, err = q.mkey(bum, q.txBuf.DevAddr(), uint64(q.txBuf.Size())); err != nil {
		return err
	}
	tisIn := prm.NewCmdIn(prm.CmdOpCreateTIS, 0, int(prm.CreateTISIn.Ctx.End()/8))
	prm.TISC.TransportDomain.At(prm.CreateTISIn.Ctx.Off).Set(tisIn, uint64(q.td))
	if q.tis, err = q.create("CREATE_TIS", tisIn); err != nil {
		return err
	}
	if q.txCQN, err = q.create("TX CREATE_CQ", q.cqIn(cqLog, um, eqn, q.txCQOff, q.txDBROff)); err != nil {
		return err
	}
	sb := prm.CreateSQIn.Ctx.Off
	wb := sb + prm.SQC.WQ.Off
	in := prm.NewCmdIn(prm.CmdOpCreateSQ, 0, int(prm.WQ.PAS.At(wb).ByteOff()))
	s, w := prm.SQC, prm.WQ
	s.CQN.At(sb).Set(in, uint64(q.txCQN))
	s.TISNum0.At(sb).Set(in, uint64(q.tis))
	s.TISLstSz.At(sb).Set(in, 1)
	s.AllowMultiPktSendWQE.At(sb).Set(in, 1)
	s.FlushInErrorEn.At(sb).Set(in, 1)
	w.WQType.At(wb).Set(in, prm.WQTypeCyclic)
	w.PD.At(wb).Set(in, uint64(q.pd))
	w.UARPage.At(wb).Set(in, uint64(q.uar.Index()))
	wqUMEM(in, wb, um, q.sqOff, q.txDBROff+32)
	w.LogWQStride.At(wb).Set(in, prm.SendWQEShift)
	w.LogWQSz.At(wb).Set(in, uint64(sqLog))
	q.sqn, err = q.create("CREATE_SQ", in)
	return err
}

func (q *Queue) modify(op prm.CmdOp, n uint32, cur, next uint64) error {
	var in []byte
	if op == prm.CmdOpModifyRQ {
		in = prm.NewCmdIn(op, 0, int(prm.ModifyRQIn.Ctx.End()/8))
		prm.ModifyRQIn.RQN.Set(in, uint64(n))
		prm.ModifyRQIn.RQState.Set(in, cur)
		prm.RQC.State.At(prm.ModifyRQIn.Ctx.Off).Set(in, next)
	} else {
		in = prm.NewCmdIn(op, 0, int(prm.ModifySQIn.Ctx.End()/8))
		prm.ModifySQIn.SQN.Set(in, uint64(n))
		prm.ModifySQIn.SQState.Set(in, cur)
		prm.SQC.State.At(prm.ModifySQIn.Ctx.Off).Set(in, next)
	}
	if err := q.ch.Exec(in, make([]byte, 16)); err != nil {
		return fmt.Errorf("gpunetio %s: %s %#x state %d → %d: %w", q.ch.Name(), op, n, cur, next, err)
	}
	return nil
}

// steer sends every frame to the RQ: a TIR, a NIC RX table with one group without match
// criteria and one entry forwarding to the TIR, attached at the root (the mlx5 engine's
// catch-all steering).
func (q *Queue) steer() error {
	tb := prm.CreateTIRIn.Ctx.Off
	in := prm.NewCmdIn(prm.CmdOpCreateTIR, 0, int(prm.CreateTIRIn.Ctx.End()/8))
	prm.TIRC.TransportDomain.At(tb).Set(in, uint64(q.td))
	prm.TIRC.InlineRQN.At(tb).Set(in, uint64(q.rqn))
	tir, err := q.create("CREATE_TIR", in)
	if err != nil {
		return err
	}
	fb := prm.CreateFlowTableIn.FlowTableContext.Off
	in = prm.NewCmdIn(prm.CmdOpCreateFlowTable, 0, int(prm.CreateFlowTableIn.FlowTableContext.End()/8))
	prm.CreateFlowTableIn.TableType.Set(in, prm.FlowTableNICRX)
	prm.FlowTableContext.LogSize.At(fb).Set(in, 1)
	ft, err := q.create("CREATE_FLOW_TABLE", in)
	if err != nil {
		return err
	}
	in = prm.NewCmdIn(prm.CmdOpCreateFlowGroup, 0, int(prm.CreateFlowGroupIn.MatchCriteria.End()/8))
	prm.CreateFlowGroupIn.TableType.Set(in, prm.FlowTableNICRX)
	prm.CreateFlowGroupIn.TableID.Set(in, uint64(ft))
	fg, err := q.create("CREATE_FLOW_GROUP", in)
	if err != nil {
		return err
	}
	cb := prm.SetFTEIn.FlowContext.Off
	fc := prm.FlowContext
	in = prm.NewCmdIn(prm.CmdOpSetFlowTableEntry, 0, int(fc.Destination.At(cb).End()/8))
	prm.SetFTEIn.TableType.Set(in, prm.FlowTableNICRX)
	prm.SetFTEIn.TableID.Set(in, uint64(ft))
	fc.GroupID.At(cb).Set(in, uint64(fg))
	fc.Action.At(cb).Set(in, prm.FlowActionFwdDest)
	fc.DestinationListSize.At(cb).Set(in, 1)
	prm.DestFormatStruct.DestinationType.At(cb+fc.Destination.Off).Set(in, prm.FlowDestTIR)
	prm.DestFormatStruct.DestinationID.At(cb+fc.Destination.Off).Set(in, uint64(tir))
	if _, err := q.create("SET_FLOW_TABLE_ENTRY", in); err != nil {
		return err
	}
	detach, err := q.ch.AttachRoot(ft)
	if err != nil {
		return fmt.Errorf("gpunetio %s: attach root table: %w", q.ch.Name(), err)
	}
	q.root = detach
	return nil
}

// relay is the doorbell watcher standing in for a UAR the GPU reaches: each new value of the
// shadow UAR word is the control segment's first 8 bytes of the last WQE posted, which it
// stores to the device's BlueFlame register as the kernel would (rdma-core qp.c
// post_send_db; the model reads the SQ's doorbell record for the producer counter).
func (q *Queue) relay() {
	defer close(q.relayDone)
	w := (*[8]byte)(q.ctrl.Bytes()[CtrlUAR:])
	var last uint64
	idle := 0
	for {
		select {
		case <-q.stopRelay:
			return
		default:
		}
		v := iomem.Load64(w)
		if v != last {
			last, idle = v, 0
			// The word holds the bytes big-endian as the kernel stored them.
			var b [8]byte
			le.PutUint64(b[:], v)
			// Around the BlueFlame store as the engine's txq.ring_ (rdma-core
			// post_send_db: mmio_wc_start, the store, mmio_flush_writes).
			iomem.WCStart()
			q.uar.Write64(prm.UARBlueFlame, binary.BigEndian.Uint64(b[:]))
			iomem.FlushWrites()
			q.relayMu.Lock()
			q.relayed++
			q.relayMu.Unlock()
			continue
		}
		// Spin briefly, then sleep: a real UAR costs the GPU one store; the relay must not
		// hold a CPU of a small machine.
		if idle++; idle > 64 {
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// DoorbellPath says how the kernel's send doorbells reach the device, and what a GPU-rung
// doorbell would need that is missing here: the channel's UAR (channel.UAR) offers stores,
// not an address to register for the GPU (IBGDA: cuMemHostRegister with
// CU_MEMHOSTREGISTER_IOMEMORY over the UAR's mmap, then a peer mapping for the GPU), and the
// device model has no BAR a GPU could reach at all. Receive needs no register.
func (q *Queue) DoorbellPath() string {
	if q.txBuf == nil {
		return "no send queue: receive needs no doorbell register (the RQ's doorbell record is in the queue memory)"
	}
	return fmt.Sprintf("relayed by the CPU: the kernel stores the doorbell to a shadow UAR word at %#x, a goroutine forwards it to %s's UAR page %d; "+
		"missing for a GPU-rung doorbell: the UAR page's address to register as I/O memory for the GPU (cuMemHostRegister with CU_MEMHOSTREGISTER_IOMEMORY, as NVSHMEM IBGDA does), which channel.UAR does not give",
		q.ctrl.DevAddr()+CtrlUAR, q.ch.Name(), q.uar.Index())
}

// Doorbells is how many doorbells the relay forwarded.
func (q *Queue) Doorbells() uint64 {
	q.relayMu.Lock()
	defer q.relayMu.Unlock()
	return q.relayed
}

// Descriptor is the GPU address of the queue descriptor (struct dqg_queue *).
func (q *Queue) Descriptor() uint64 { return q.rings.DevAddr() + uint64(q.descOff) }

// DescriptorBytes is the descriptor as Open wrote it.
func (q *Queue) DescriptorBytes() []byte { return q.desc }

// Control is the control block (struct dqg_ctrl), host and GPU views.
func (q *Queue) Control() Mem { return q.ctrl }

// RxBuf and TxBuf are the packet memories.
func (q *Queue) RxBuf() Mem { return q.rxBuf }

// TxBuf is the memory the transmitter sends from.
func (q *Queue) TxBuf() Mem { return q.txBuf }

// Rings is the CQ/ring memory; its Bytes are nil for GPU placement.
func (q *Queue) Rings() Mem { return q.rings }

// RQWQE returns the host bytes of RQ WQE slot i (CPU-visible rings only): for diagnostics
// and fault injection.
func (q *Queue) RQWQE(i int) []byte {
	b := q.rings.Bytes()
	if b == nil || q.cfg.NoRx || i < 0 || i >= q.cfg.RxWQEs {
		return nil
	}
	return b[q.rqOff+i*32 : q.rqOff+i*32+32]
}

// RxCQ returns the RX CQ ring's host bytes (CPU-visible rings only) and its log2 size.
func (q *Queue) RxCQ() ([]byte, uint8) {
	b := q.rings.Bytes()
	if b == nil || q.cfg.NoRx {
		return nil, 0
	}
	return b[q.rxCQOff : q.rxCQOff+64<<q.rxCQLog], q.rxCQLog
}

// RQN, SQN and the CQ numbers name the queues.
func (q *Queue) RQN() uint32 { return q.rqn }

// SQN is the send queue's number.
func (q *Queue) SQN() uint32 { return q.sqn }

// RxCQN is the receive CQ's number.
func (q *Queue) RxCQN() uint32 { return q.rxCQN }

// CQState reads a CQ's status with QUERY_CQ: 0 OK, 9 overflow (mlx5_ifc.h cqc status).
func (q *Queue) CQState(cqn uint32) (status uint8, pi uint32, err error) {
	in := prm.NewCmdIn(prm.CmdOpQueryCQ, 0, 16)
	prm.QueryCQIn.CQN.Set(in, uint64(cqn))
	out := make([]byte, prm.QueryCQOut.CQContext.End()/8)
	if err := q.ch.Exec(in, out); err != nil {
		return 0, 0, fmt.Errorf("gpunetio %s: QUERY_CQ %#x: %w", q.ch.Name(), cqn, err)
	}
	b := prm.QueryCQOut.CQContext.Off
	return uint8(prm.CQC.Status.At(b).Get(out)), uint32(prm.CQC.ProducerCounter.At(b).Get(out)), nil
}

// CQStatusOverflow is cqc status CQ_OVERFLOW (mlx5_ifc.h MLX5_CQC_STATUS_CQ_OVERFLOW).
const CQStatusOverflow = 9

// Close detaches the steering, then releases every object, registration and memory, in
// reverse order. Kernels using the queue must have finished (Stop asks them to).
//
// A kernel still running on the queue makes Close fail with ErrKernelRunning and release
// nothing: freeing GPU memory (cuMemFree) waits for every kernel running in the context, so
// closing under a persistent kernel would never return. The same holds for any GPU memory
// freed while another queue's persistent kernel runs: stop kernels before closing queues.
func (q *Queue) Close() error {
	if q.ctrl != nil && q.ctrl.Bytes() != nil {
		if c := q.Counters(); c.Running && !c.Exited {
			return fmt.Errorf("%w: Close while the kernel runs (heartbeat %d); Stop it first, since freeing GPU memory waits for running kernels", ErrKernelRunning, c.Heartbeat)
		}
	}
	q.closeOnce.Do(func() { q.closeErr = q.release() })
	return q.closeErr
}

func (q *Queue) release() error {
	var errs []error
	if q.root != nil {
		errs = append(errs, q.root())
		q.root = nil
	}
	if q.stopRelay != nil {
		close(q.stopRelay)
		<-q.relayDone
		q.stopRelay = nil
	}
	for i := len(q.objs) - 1; i >= 0; i-- {
		errs = append(errs, q.objs[i].Destroy())
	}
	q.objs = nil
	for i := len(q.umems) - 1; i >= 0; i-- {
		errs = append(errs, q.umems[i].Release())
	}
	q.umems = nil
	if q.uar != nil {
		errs = append(errs, q.uar.Release())
		q.uar = nil
	}
	for i := len(q.mems) - 1; i >= 0; i-- {
		errs = append(errs, q.mems[i].Close())
	}
	q.mems = nil
	return errors.Join(errs...)
}
