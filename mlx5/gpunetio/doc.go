// Package gpunetio opens mlx5 queues that a CUDA kernel drives by itself: DOCA GPUNetIO's
// model, without DOCA. The CPU creates the queues and steering once (through any
// channel.Channel: DevX, VFIO or the device model); afterwards a kernel polls the receive
// CQ, takes the packets, re-posts the striding RQ's WQEs, builds send WQEs and rings the
// doorbell, and hands batches to the CPU through a semaphore ring. The device functions are
// in kernels/daqiri_gpunetio.cuh, the two ready kernels (a persistent receiver and a
// transmitter) in kernels/gpunetio.cu, compiled to the committed kernels/gpunetio.ptx.
//
// # Placement
//
// Config.MemType places the CQs, the RQ and SQ rings, their doorbell records and the queue
// descriptor (the struct the kernels take, Descriptor*) in one of DOCA GPUNetIO's memory
// types (doca_gpu_mem_type): GPU (device memory, DOCA_GPU_MEM_TYPE_GPU), CPU_GPU (host
// memory pinned and mapped into the GPU, DOCA_GPU_MEM_TYPE_CPU_GPU) or GPU_CPU (device
// memory the CPU also maps, DOCA_GPU_MEM_TYPE_GPU_CPU, which needs GDRCopy's gdrdrv or a
// coherent platform and is refused here, naming that). Config.BufMemType places the packet
// buffers the same way. The control block (stop flag, heartbeat, error report) and the
// semaphore ring are always CPU_GPU: both sides poll them.
//
// # Doorbells
//
// A ConnectX learns of new send WQEs from a store to its UAR page, a BAR page: NVSHMEM's
// IBGDA makes it reachable from the GPU with cuMemHostRegister(CU_MEMHOSTREGISTER_IOMEMORY)
// over the mmap'd UAR and a store-release of the doorbell record followed by the 8-byte
// BlueFlame store (the peer mapping needs the nvidia-peermem or dma-buf path and, for the
// ConnectX, a UAR mapped non-cached). This project's runs have no ConnectX: the device model
// has no BAR the GPU can reach, so the kernel's 8-byte doorbell goes to a shadow UAR word in
// the control block, and a relay goroutine (the queue's doorbell watcher) forwards each new
// value to the model's UAR, the store a GPU with a peer-mapped UAR makes itself. Receive
// needs no register: the RQ's doorbell record is memory the device reads.
//
// # What the device model reaches
//
// The model reads rings with the CPU, so with the model the rings must be CPU_GPU; rings in
// device memory are registered (DMA-BUF) and then refused by the model's CREATE_CQ, an error
// naming the memory it cannot reach — on a ConnectX the same registration works over PCIe
// peer to peer. Packet buffers may be device memory: the model writes and reads them through
// the GPU's copy engine (mlx5/model/gpudma). No NIC wrote GPU memory in this project's runs.
package gpunetio
