// Package datapath is the ConnectX model's data plane: completion queues, receive and send
// queues, RSS (RQT/TIR), TIS, steering (flow tables, groups, entries), packet reformat,
// pacing, counters, UAR doorbell decoding and the wire. It is given decoded, validated
// parameters by the model's command handlers (package model), and reaches host memory only
// through dma.Space, queue Memory and the control side's Translator (MKEYs), as the device's
// DMA engine reaches it through the IOMMU.
//
// Sources of behaviour are cited where each is implemented: rdma-core providers/mlx5
// (mlx5dv.h, cq.c, qp.c), the kernel's include/linux/mlx5 (device.h, cq.h, qp.h,
// mlx5_ifc.h) and DPDK drivers/net/mlx5 (mlx5_rx.c, mlx5_rxtx.h, mlx5_tx.h) and
// drivers/common/mlx5/mlx5_prm.h.
package datapath
