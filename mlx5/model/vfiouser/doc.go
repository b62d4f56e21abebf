// Package vfiouser is a vfio-user server: it serves a PCI device (a Device) to a client
// such as QEMU's vfio-user-pci (QEMU ≥ 10.1, `-device vfio-user-pci,socket=PATH`) over a
// unix stream socket, so that a guest sees the device on its PCI bus. The protocol is
// QEMU's docs/interop/vfio-user.rst; where the spec leaves room, the behaviour follows what
// QEMU's client (hw/vfio-user/*.c) sends and expects, and the linux/vfio.h structures the
// protocol reuses.
//
// # What is implemented
//
//   - VERSION: version 0.0 with the JSON capabilities max_msg_fds (16, QEMU's ceiling),
//     max_data_xfer_size (Options.MaxDataXfer), pgsizes (4 KiB), max_dma_maps (65535) and
//     write_multiple; "migration" and "twin_socket" are not offered.
//   - DEVICE_GET_INFO (PCI, reset supported, 9 regions, 5 interrupt indexes),
//     DEVICE_GET_REGION_INFO (size and read/write flags; no capabilities, no mmap),
//     DEVICE_GET_IRQ_INFO, REGION_READ, REGION_WRITE (also posted, with No_reply) and
//     REGION_WRITE_MULTI, DEVICE_RESET.
//   - DMA_MAP with a file descriptor (QEMU passes guest RAM's memfd when the machine's
//     memory backend is shared): the file is mapped once and the window handed to the
//     device as a []byte slice of it (Contiguous and Join let a device treat adjacent
//     windows as one buffer); DMA_MAP without one is recorded but the device cannot reach it.
//     DMA_UNMAP of whole windows, and of everything (VFIO_DMA_UNMAP_FLAG_ALL).
//   - DEVICE_SET_IRQS: eventfds for the trigger action (assign, de-assign, disable an
//     index), client-raised triggers, mask and unmask with pending bits; the device raises
//     a vector with IRQs.Trigger.
//
// Not implemented, answered with an error: DEVICE_GET_REGION_IO_FDS, DEVICE_FEATURE and the
// migration and dirty-page commands; the server never sends DMA_READ/DMA_WRITE (QEMU
// serves them from its main loop, which waits for the reply to the very region write that
// would make the device read memory).
//
// # Strictness
//
// Every message is checked before it reaches the device: header size and flags, payload
// size per command, argsz, the number of file descriptors, ranges against region sizes
// and max_data_xfer_size, overlapping DMA windows. A refused command gets an error reply
// carrying an errno (vfio-user's Error flag) and a log line saying what was wrong; a
// message that cannot be framed (a short header, the peer gone mid-message) ends the
// session. Descriptors that come with a refused message are closed. At the end of a
// session the device is detached, eventfds are closed and client memory is unmapped.
package vfiouser
