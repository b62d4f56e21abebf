package vfioch

import (
	"errors"
	"fmt"
	"sync"

	"github.com/daqiri-go/daqiri/internal/iomem"
	"github.com/daqiri-go/daqiri/mlx5/prm"
	"github.com/daqiri-go/daqiri/vfio"
)

// Geometry of the channel's control chunk: the command queue page, the async EQ's ring, then
// mailbox blocks.
const (
	asyncEQLog    = 7 // 128 EQEs: room for a storm of page requests between two drains
	eqeSize       = 64
	ctlEQOff      = 4096
	ctlMailboxOff = ctlEQOff + eqeSize<<asyncEQLog
)

// asyncEQ is the EQ on MSI-X vector 0 that carries command completions and page requests
// (mlx5_vfio.c create_async_eqs: MLX5_EVENT_TYPE_CMD and MLX5_EVENT_TYPE_PAGE_REQUEST).
type asyncEQ struct {
	n    uint32
	uar  uint32
	ring []byte
	ci   uint32
}

// createAsyncEQ allocates the EQ's UAR, creates the EQ over the ring in the control chunk,
// arms it and starts the event loop; commands wait for completion events from then on.
func (c *Channel) createAsyncEQ() error {
	irq, err := c.fn.EnableMSIX(1)
	if err != nil {
		return fmt.Errorf("enable MSI-X vector 0: %w", err)
	}
	c.irq = irq
	uar, err := c.allocUARIndex()
	if err != nil {
		return err
	}
	ring := c.q.buf.b[ctlEQOff : ctlEQOff+eqeSize<<asyncEQLog]
	for i := 0; i < 1<<asyncEQLog; i++ {
		// Owner 1 in every EQE at first, so that the first lap's zeros are not taken
		// (kernel eq.c init_eq_buf).
		prm.EQE.Owner.Set(ring[i*eqeSize:], 1)
	}
	base := prm.CreateEQIn.EQContextEntry.Off
	npages := len(ring) / 4096
	in := prm.NewCmdIn(prm.CmdOpCreateEQ, 0, prm.CreateEQIn.PAS.ByteOff()+8*npages)
	prm.EQC.LogEQSize.At(base).Set(in, asyncEQLog)
	prm.EQC.UARPage.At(base).Set(in, uint64(uar))
	prm.EQC.Intr.At(base).Set(in, 0)
	for i := range npages {
		prm.CreateEQIn.PAS.At(uint32(i)*64).Set(in, c.q.buf.iova+ctlEQOff+uint64(i)*4096)
	}
	prm.CreateEQIn.EventBitmask.Set(in, 1<<prm.EventTypeCmd|1<<prm.EventTypePageRequest)
	out := make([]byte, 16)
	if err := c.run(in, out); err != nil {
		c.releaseUARIndex(uar)
		return err
	}
	c.eq = &asyncEQ{n: uint32(prm.CreateEQOut.EQNumber.Get(out)), uar: uar, ring: ring}
	c.hw.Lock()
	c.armEQ()
	c.hw.Unlock()
	c.stop = make(chan struct{})
	c.loopDone = make(chan struct{})
	c.pageKick = make(chan struct{}, 1)
	c.pageDone = make(chan struct{})
	go c.eventLoop()
	go c.pageWorker()
	c.events.Store(true)
	return nil
}

// armEQ writes the consumer index to the EQ's arm doorbell (eq.c eq_update_ci: eqn << 24 |
// ci, at UAR offset 0x40). Called with c.hw held.
func (c *Channel) armEQ() {
	c.wr(int(c.eq.uar)*prm.UARPageSize+prm.UAREQDoorbellArm, c.eq.n<<24|c.eq.ci&0xffffff)
	iomem.ToDevice() // after the doorbell, as mlx5_vfio.c eq_update_ci has it: udma_to_device_barrier
}

// drainEQ consumes every EQE software owns: an EQE is valid when its owner bit equals the
// consumer index's lap parity (eq.c next_eqe_sw). It returns the completed command slots
// and the net pages firmware asked for, and re-arms the EQ.
func (c *Channel) drainEQ() (slots uint32, pages int64, n int) {
	c.hw.Lock()
	defer c.hw.Unlock()
	e := c.eq
	for ; n < 1<<asyncEQLog; n++ {
		eqe := e.ring[(e.ci&(1<<asyncEQLog-1))*eqeSize:][:eqeSize]
		if uint32(prm.EQE.Owner.Get(eqe)) != e.ci>>asyncEQLog&1 {
			break
		}
		iomem.FromDevice() // the EQE after its owner bit (mlx5_vfio.c mlx5_eq_get_eqe: udma_from_device_barrier)
		data := prm.EQE.EventData.Slice(eqe)
		switch prm.EventType(prm.EQE.EventType.Get(eqe)) {
		case prm.EventTypeCmd:
			slots |= uint32(prm.CmdInterCompEvent.CommandCompletionVector.Get(data))
		case prm.EventTypePageRequest:
			// num_pages is signed: positive asks for pages, negative returns them
			// (device.h struct mlx5_eqe_page_req; pagealloc.c req_pages_handler).
			pages += int64(int32(uint32(prm.EQEPageReq.NumPages.Get(data))))
			c.stats.add(func(s *Stats) { s.PageRequests++ })
		}
		e.ci++
	}
	c.armEQ()
	return slots, pages, n
}

// eventLoop waits for the EQ's interrupt, drains the EQ, hands completed slots to their
// waiters and page requests to the page worker, and checks the device's health. It polls
// the EQ without waiting for the interrupt once an interrupt was found missing.
func (c *Channel) eventLoop() {
	defer close(c.loopDone)
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		_, err := c.irq.Wait(0, c.opts.PollInterval)
		fired := err == nil
		if err != nil && !errors.Is(err, vfio.ErrTimeout) {
			c.fail(fmt.Errorf("interrupt eventfd: %w", err))
		}
		// Without an interrupt the EQ is still read once per health interval, so that
		// page requests are served even before polling mode starts.
		if c.Health() == nil && (fired || c.polling.Load() || c.healthDue()) {
			slots, pages, _ := c.drainEQ()
			for i := 0; slots != 0 && i < c.q.nslots; i++ {
				if slots&(1<<i) != 0 {
					select {
					case c.q.done[i] <- struct{}{}:
					default:
					}
				}
			}
			if pages != 0 {
				c.pageMu.Lock()
				c.pageWant += pages
				c.pageMu.Unlock()
				select {
				case c.pageKick <- struct{}{}:
				default:
				}
			}
		}
		c.checkHealth()
	}
}

// missedInterrupt is called when a command was found complete without its event. One such
// command may only mean that the event loop was late (a loaded machine); missedLimit in a
// row with no event between mean the interrupt does not arrive: from then on the event loop
// polls the EQ every poll interval (said once in the log).
func (c *Channel) missedInterrupt() {
	if c.missed.Add(1) < missedLimit {
		return
	}
	if !c.polling.Swap(true) {
		c.log.Warn("mlx5 vfio: commands complete without their completion interrupt; polling the event queue from now on",
			"device", c.name, "commands", missedLimit, "interval", c.opts.PollInterval)
	}
}

// missedLimit is how many commands in a row must complete without their event before the
// interrupt counts as lost.
const missedLimit = 3

// pageWorker answers page requests with MANAGE_PAGES: requests are summed, so a storm of
// them costs a few commands (kernel pagealloc.c queues one work item per request; summing
// keeps the count firmware asked for and bounds the work).
func (c *Channel) pageWorker() {
	defer close(c.pageDone)
	for {
		select {
		case <-c.stop:
			return
		case <-c.pageKick:
		}
		c.pageMu.Lock()
		n := c.pageWant
		c.pageWant = 0
		c.pageMu.Unlock()
		var err error
		switch {
		case n > 0:
			if err = c.givePages(int(n)); err != nil && c.Health() == nil {
				// Tell firmware the pages will not come (MANAGE_PAGES op_mod 0,
				// pagealloc.c page_notify_fail).
				cant := prm.NewCmdIn(prm.CmdOpManagePages, prm.ManagePagesCantGive, 16)
				err = errors.Join(err, c.run(cant, make([]byte, 16)))
			}
		case n < 0:
			err = c.reclaimPages(int(-n))
		}
		if err != nil && c.Health() == nil {
			c.log.Error("mlx5 vfio: page request", "device", c.name, "pages", n, "err", err)
			c.stats.add(func(s *Stats) { s.PageErrors++ })
		}
	}
}

// pagePool is the memory given to firmware: 4 KiB pages carved from DMA-mapped chunks.
type pagePool struct {
	mu    sync.Mutex
	free  []uint64
	given map[uint64]bool
	limit int
	total int
}

// givePages gives firmware n pages (MANAGE_PAGES give, at most 512 per command so that a
// command's PAS list stays within a few mailboxes).
func (c *Channel) givePages(n int) error {
	const batch = 512
	for n > 0 {
		k := min(n, batch)
		pages, err := c.takeFree(k)
		if err != nil {
			return err
		}
		pas := prm.ManagePagesIn.PAS
		in := prm.NewCmdIn(prm.CmdOpManagePages, prm.ManagePagesGive, pas.ByteOff()+8*k)
		prm.ManagePagesIn.InputNumEntries.Set(in, uint64(k))
		for i, p := range pages {
			pas.At(uint32(i)*64).Set(in, p)
		}
		if err := c.run(in, make([]byte, 16)); err != nil {
			c.pages.mu.Lock()
			c.pages.free = append(c.pages.free, pages...)
			c.pages.mu.Unlock()
			return fmt.Errorf("give %d pages: %w", k, err)
		}
		c.pages.mu.Lock()
		for _, p := range pages {
			c.pages.given[p] = true
		}
		c.pages.mu.Unlock()
		c.stats.add(func(s *Stats) { s.PagesGiven += k })
		n -= k
	}
	return nil
}

// takeFree takes k free pages, mapping another chunk when the free list is short.
func (c *Channel) takeFree(k int) ([]uint64, error) {
	p := c.pages
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) < k {
		if p.total+chunkSize/4096 > p.limit {
			return nil, fmt.Errorf("firmware wants more pages than the channel's limit of %d (Options.MaxPages)", p.limit)
		}
		buf, err := c.mem.alloc(chunkSize, "firmware pages")
		if err != nil {
			return nil, err
		}
		for o := 0; o < chunkSize; o += 4096 {
			p.free = append(p.free, buf.iova+uint64(o))
		}
		p.total += chunkSize / 4096
	}
	out := append([]uint64(nil), p.free[len(p.free)-k:]...)
	p.free = p.free[:len(p.free)-k]
	return out, nil
}

// reclaimPages asks firmware for n pages back (MANAGE_PAGES take) and returns how many it
// gave; a page firmware names that the channel never gave is an error.
func (c *Channel) reclaimPages(n int) error {
	const batch = 512
	for n > 0 {
		k := min(n, batch)
		in := prm.NewCmdIn(prm.CmdOpManagePages, prm.ManagePagesTake, 16)
		prm.ManagePagesIn.InputNumEntries.Set(in, uint64(k))
		out := make([]byte, prm.ManagePagesOut.PAS.ByteOff()+8*k)
		if err := c.run(in, out); err != nil {
			return fmt.Errorf("reclaim %d pages: %w", k, err)
		}
		got := int(prm.ManagePagesOut.OutputNumEntries.Get(out))
		if got > k {
			return fmt.Errorf("reclaim %d pages: firmware returned %d", k, got)
		}
		c.pages.mu.Lock()
		for i := range got {
			pa := prm.ManagePagesOut.PAS.At(uint32(i) * 64).Get(out)
			if !c.pages.given[pa] {
				c.pages.mu.Unlock()
				return fmt.Errorf("reclaim: firmware returned page %#x, which it was never given", pa)
			}
			delete(c.pages.given, pa)
			c.pages.free = append(c.pages.free, pa)
		}
		c.pages.mu.Unlock()
		c.stats.add(func(s *Stats) { s.PagesReclaimed += got })
		if got == 0 {
			return nil // firmware holds no more
		}
		n -= got
	}
	return nil
}

// GivenPages is how many pages firmware holds now.
func (c *Channel) GivenPages() int {
	c.pages.mu.Lock()
	defer c.pages.mu.Unlock()
	return len(c.pages.given)
}

// healthDue reports that a health check is due: the event loop then reads the EQ too.
func (c *Channel) healthDue() bool {
	c.healthMu.Lock()
	defer c.healthMu.Unlock()
	return c.healthPolls == 0 || c.sinceHealth() >= c.opts.HealthInterval
}

// checkHealth reads the health sensors every health interval (mlx5_vfio.c poll_health and
// mlx5_health_check_fatal_sensors): the health buffer's firmware version all ones (the PCI
// function no longer answers), the NIC interface disabled or in software reset, a fatal
// syndrome (rfr with synd, or the init segment's health syndrome), and a health counter that
// did not move in maxMisses polls (firmware stalled).
func (c *Channel) checkHealth() {
	if c.Health() != nil || c.tearingDown.Load() {
		return
	}
	c.healthMu.Lock()
	defer c.healthMu.Unlock()
	if c.healthPolls > 0 && c.sinceHealth() < c.opts.HealthInterval {
		return
	}
	c.healthPolls++
	c.lastHealth = c.now()
	if raw := c.bar.Read32(regHealthFWVer); raw == 0xffffffff {
		c.fail(fmt.Errorf("%w: BAR0 reads all ones (health buffer fw_version): the function was removed or stopped answering", ErrDeviceFailed))
		return
	}
	switch st := c.rd(regCmdqAddrLSz) >> nicIfcShift & 7; st {
	case nicIfcDisabled:
		c.fail(fmt.Errorf("%w: NIC interface disabled (cmdq_addr_l_sz nic_interface %d)", ErrDeviceFailed, st))
		return
	case nicIfcSWReset:
		c.fail(fmt.Errorf("%w: NIC interface in software reset (cmdq_addr_l_sz nic_interface %d)", ErrDeviceFailed, st))
		return
	}
	synd := c.rd(regHealthSynd) >> 16 & 0xff // health buffer synd, byte 0x23d
	count := c.rd(regHealthCount)
	if isynd := count >> 24; synd != 0 || isynd != 0 {
		c.fail(fmt.Errorf("%w: fatal health syndrome %#x (health buffer synd %#x, rfr %d)", ErrDeviceFailed, max(synd, isynd), synd, c.rd(regHealthRFR)>>31))
		return
	}
	count &= 0xffffff
	if c.healthPolls > 1 && count == c.lastCount {
		c.misses++
	} else {
		c.misses = 0
	}
	c.lastCount = count
	if c.misses >= maxMisses {
		c.fail(fmt.Errorf("%w: health counter stalled at %d for %d polls %v apart (firmware not running)", ErrDeviceFailed, count, c.misses, c.opts.HealthInterval))
	}
}

// maxMisses is how many unchanged health counter reads mean dead firmware (mlx5_vfio.h
// MAX_MISSES).
const maxMisses = 3
