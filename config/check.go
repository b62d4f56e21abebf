package config

// CheckMemoryRegion checks one memory region by the rules Validate applies to every
// memory_regions[] item (name, kind, affinity, access, num_bufs, buf_size and their product)
// and to all of them together (MaxTotalBufs), with path as the region's key path in errors.
// existing are the regions there are already. Session.AddMemoryRegion uses it, so that a
// region added at run time is held to what Open holds a configured one to. The error is an
// Errors list (nil when none).
func CheckMemoryRegion(path string, mr *MemoryRegion, existing []MemoryRegion) error {
	v := &validator{c: &Config{}, regions: map[string]*MemoryRegion{}, runtime: true}
	for i := range existing {
		v.regions[existing[i].Name] = &existing[i]
	}
	v.region(path, mr)
	if len(v.errs) == 0 {
		v.totalBufs(path, mr.NumBufs)
	}
	return v.result()
}

// CheckQueue checks one queue to be added to interface iface of an open session
// (Session.AddRxQueue, AddTxQueue) by the rules Validate applies to every rx.queues[] and
// tx.queues[] item, with the key path interfaces[iface].rx.queues[index] (or .tx) in
// errors. live are the queues of the same interface and direction in use (their names and
// ids are taken); regions are the session's memory regions by name. Two rules differ from
// Open's, as documented for the run-time calls: cpu_core is optional (the worker need not be
// pinned) and poll_mode direct is refused (direct queues are set up at Open). The error is
// an Errors list (nil when none).
func (c *Config) CheckQueue(iface, index int, isTX bool, q *Queue, live []*Queue, regions map[string]*MemoryRegion) error {
	if c == nil || iface < 0 || iface >= len(c.Interfaces) {
		return Errors{{Path: "interfaces", Msg: "no interface at this index"}}
	}
	base := indexPath("interfaces", iface)
	dir := ".rx.queues"
	if isTX {
		dir = ".tx.queues"
	}
	// Errors here are about the new queue, not the file the session was opened from: no
	// file positions (a code Config has none either).
	v := &validator{c: &Config{}, regions: regions, used: map[string]bool{}, runtime: true}
	if v.regions == nil {
		v.regions = map[string]*MemoryRegion{}
	}
	engine, _ := c.ResolveEngine(iface)
	var proto Protocol
	if s := c.Interfaces[iface].Socket; s != nil {
		// Only the protocol is wanted: the interface was validated when the session opened.
		proto = (&validator{c: c, regions: map[string]*MemoryRegion{}, used: map[string]bool{}}).socket(base+".socket_config", s)
	}
	ids := map[int]bool{}
	names := map[string]bool{}
	for _, l := range live {
		ids[l.ID] = true
		names[l.Name] = true
	}
	v.queue(indexPath(base+dir, index), q, isTX, engine, proto, ids, names)
	return v.result()
}

// result is the validator's errors, sorted, or nil when there are none.
func (v *validator) result() error {
	if len(v.errs) == 0 {
		return nil
	}
	return sortErrors(v.errs)
}
