// Package vfioch is the VFIO transport of package channel: a ConnectX function bound to
// vfio-pci, driven from user space through its command queue, with no kernel mlx5 driver.
// The sequence follows rdma-core's mlx5 VFIO provider (providers/mlx5/mlx5_vfio.c) and the
// kernel's mlx5_core (cmd.c, eq.c, pagealloc.c, health.c); each step names its source.
//
// # The command queue (cmdq.go)
//
// Open checks the command interface revision in the init segment (5), reads the queue's
// geometry, maps one 2 MiB chunk for the queue page, the async EQ's ring and 1 KiB-aligned
// mailbox blocks at an IOVA taken from the container's reported usable ranges, writes the
// queue address and turns on memory decoding and bus mastering. A command fills an entry
// (16 bytes of input and output inline, the rest in mailbox chains with block numbers and
// the entry's token), hands ownership to the device and rings the doorbell. Until the async
// EQ exists the driver polls the ownership bit; after, it waits for the command-completion
// event and falls back to reading the bit when no event came within Options.PollInterval
// (an interrupt that never arrives; the event loop then polls the EQ too, said once in the
// log). A command not handed back within Options.CommandTimeout fails with
// ErrCommandTimeout naming it, and its slot is retired (the device may still write it). A
// delivery failure is ErrDelivery; a bad status is a *channel.CommandError with the
// command's name, status and syndrome.
//
// # Bring-up, events, pages, health, teardown (channel.go, eq.go)
//
// Wait for the initializing bit to clear, ENABLE_HCA, QUERY_ISSI/SET_ISSI(1), boot pages
// (QUERY_PAGES + MANAGE_PAGES from DMA-mapped 2 MiB hugepage chunks; 4 KiB host pages when
// the hugepage pool is empty, said in the log), ACCESS_REG host endianness, QUERY_HCA_CAP
// (maximum and current) and SET_HCA_CAP, init pages, INIT_HCA, QUERY_NIC_VPORT_CONTEXT,
// then the async EQ on MSI-X vector 0 (command completions and page requests) and an EQ for
// completion queues (EQN). An event loop waits on the vector's eventfd, drains and re-arms
// the EQ, wakes command waiters and passes page requests to a worker that gives pages
// (MANAGE_PAGES give; "cannot give" when over Options.MaxPages) or takes them back. The same
// loop checks health every Options.HealthInterval (mlx5_vfio.c poll_health): the health
// buffer's firmware version all ones (the function is gone: a surprise removal), the NIC
// interface disabled or in software reset, a fatal syndrome, and a health counter unchanged
// for three polls. A failure is recorded once: Failed is closed, Options.OnFailure is
// called, and every waiting and later command returns an error wrapping ErrDeviceFailed.
// Close destroys what is still live (newest first), the EQs, then tears the function down
// (TEARDOWN_HCA prepare-fast with the NIC interface set to disabled when the device offers
// fast teardown, graceful otherwise or when fast fails), takes every page back, disables the
// function and clears the queue address, so that the next driver finds it as after reset;
// on a failed device it sends nothing and releases only host memory.
//
// Objects follow package channel: Create remembers the destroy command built from the create
// (devx.c pairs them the same way); RegisterMemory maps the memory at I/O address = its
// virtual address (checked against the usable ranges: the engine's keys and PAS lists name
// memory by address) and registers it with CREATE_UMEM; AllocUAR is ALLOC_UAR and the page in
// the BAR0 mapping; AttachRoot is SET_FLOW_TABLE_ROOT.
//
// # What ran on what
//
// The transport talks to a Function: BAR0 as a Region, the container as DMA, MSI-X as
// Interrupts. The mlx5 engine opens it for an interface address vfio+model:N (the model
// behind the VFIO-shaped function, cabled and run like model:N). OpenPCI gives the real one (package vfio's PCI, MMIO, Container and IRQ); the
// ConnectX model gives the other (package mlx5/model/vfiomodel, with fault injection). No
// ConnectX was available: every ConnectX-specific path here ran only against the model
// (bring-up, objects, teardown, reuse, the conformance suite, and the faults: command
// timeout, bad status and syndrome, a failed bring-up undone, page-request storms with
// reclaim, the page limit, lost interrupts, each health sensor mid-traffic, surprise removal,
// a non-ConnectX, IOVA range exhaustion). The real Function (OpenPCI, CheckBound, BAR0,
// IOMMU ranges, bus mastering, the MSI-X refusal, a clean release after Open refuses the
// device) ran in the VM of integration/vm on qemu's edu device, which package vfio itself is
// verified on. Where hardware may differ from the model, package model's documentation
// says so.
//
// # Where a ConnectX may behave otherwise (untested choices)
//
//   - After a successful fast teardown the channel still takes the pages back and sends
//     DISABLE_HCA, which the model answers; mlx5_vfio.c instead frees the pages without
//     asking (firmware no longer touches them with the NIC interface disabled). On hardware
//     those commands may fail or time out; Close returns what failed, each bounded by
//     Options.CommandTimeout.
//   - A ConnectX's MSI-X table lies in BAR0. vfio.Device.MapRegion refuses a BAR that
//     vfio-pci maps only in parts, so OpenPCI needs a kernel and IOMMU with interrupt
//     remapping, under which vfio-pci maps the whole BAR.
//   - The model completes a command inside the doorbell store, so commands overlapping in
//     the device and completions arriving late relative to Options.PollInterval are not
//     exercised; page requests are summed before they are served.
package vfioch
