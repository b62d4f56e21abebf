package prm

// Constants of the command interface that are not in the user-space-compilable headers.
// Those defined in include/linux/mlx5/driver.h carry a "C:" comment too: driver.h needs the
// whole kernel tree to compile, so TestLayout reads their enumerator values from its text.

// Command-queue entry ownership (the entry's ownership bit; driver.h).
const (
	CmdOwnerSW = 0x0 // C: CMD_OWNER_SW
	CmdOwnerHW = 0x1 // C: CMD_OWNER_HW
)

// RegHostEndianness is the ACCESS_REG register id of the host endianness register that
// mlx5_core and rdma-core's mlx5_vfio.c write during bring-up (driver.h).
const RegHostEndianness = 0x7004 // C: MLX5_REG_HOST_ENDIANNESS

// ManagePages op_mod values. The kernel defines them in drivers/net/ethernet/mellanox/mlx5/core/
// pagealloc.c (MLX5_PAGES_CANT_GIVE, MLX5_PAGES_GIVE, MLX5_PAGES_TAKE), not in a header, and
// rdma-core's providers/mlx5/mlx5_vfio.c uses the same three values; so they are not probed.
const (
	ManagePagesCantGive = 0
	ManagePagesGive     = 1
	ManagePagesTake     = 2
)

// DeliveryStatus is the status the device writes in bits 7:1 of a command-queue entry's last
// byte: whether the command could be delivered at all (signature, token, mailbox chain, lengths).
// The values are those of the kernel's drivers/net/ethernet/mellanox/mlx5/core/cmd.c
// (MLX5_CMD_DELIVERY_STAT_*) and rdma-core's mlx5_vfio.c (MLX5_CMD_STAT_*_ERR ladder); no
// installed header has them, so they are not probed.
type DeliveryStatus uint8

// DeliveryStatus values.
const (
	DeliveryOK              DeliveryStatus = 0x0
	DeliverySignatureErr    DeliveryStatus = 0x1
	DeliveryTokenErr        DeliveryStatus = 0x2
	DeliveryBadBlockNumErr  DeliveryStatus = 0x3
	DeliveryOutPtrAlignErr  DeliveryStatus = 0x4
	DeliveryInPtrAlignErr   DeliveryStatus = 0x5
	DeliveryFWErr           DeliveryStatus = 0x6
	DeliveryInLengthErr     DeliveryStatus = 0x7
	DeliveryOutLengthErr    DeliveryStatus = 0x8
	DeliveryResFldNotClrErr DeliveryStatus = 0x9
	DeliveryCmdDescrErr     DeliveryStatus = 0x10
)
