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

// MODIFY_RQ modify_bitmask bits (mlx5_ifc.h).
const (
	ModifyRQBitmaskVSD          = 1 << 1 // C: MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_VSD
	ModifyRQBitmaskScatterFCS   = 1 << 2 // C: MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_SCATTER_FCS
	ModifyRQBitmaskCounterSetID = 1 << 3 // C: MLX5_MODIFY_RQ_IN_MODIFY_BITMASK_RQ_COUNTER_SET_ID
)

// ModifySQBitmaskRateLimitIndex is MODIFY_SQ's modify_bitmask bit for
// packet_pacing_rate_limit_index (bit 0: DPDK mlx5_prm.h
// MLX5_MODIFY_SQ_IN_MODIFY_BITMASK_PACKET_PACING_RATE_LIMIT_INDEX and the kernel's en_main.c
// use it so; not in the installed headers, so not probed).
const ModifySQBitmaskRateLimitIndex = 1 << 0

// MODIFY_CQ field_select bits (cq.h, read from its text by TestLayout).
const (
	CQModifyPeriod = 1 << 0 // C: MLX5_CQ_MODIFY_PERIOD
	CQModifyCount  = 1 << 1 // C: MLX5_CQ_MODIFY_COUNT
)

// SET_FLOW_TABLE_ENTRY modify_enable_mask bit numbers (op_mod 1 modifies an existing entry).
const (
	SetFTEModifyAction   = 0x0 // C: MLX5_SET_FTE_MODIFY_ENABLE_MASK_ACTION
	SetFTEModifyFlowTag  = 0x1 // C: MLX5_SET_FTE_MODIFY_ENABLE_MASK_FLOW_TAG
	SetFTEModifyDestList = 0x2 // C: MLX5_SET_FTE_MODIFY_ENABLE_MASK_DESTINATION_LIST
	SetFTEModifyCounters = 0x3 // C: MLX5_SET_FTE_MODIFY_ENABLE_MASK_FLOW_COUNTERS
)

// ModifyFlowTableMissTableID is MODIFY_FLOW_TABLE's modify_field_select bit for the miss
// action and table (mlx5_ifc.h).
const ModifyFlowTableMissTableID = 1 << 0 // C: MLX5_MODIFY_FLOW_TABLE_MISS_TABLE_ID

// QUERY_VPORT_STATE state values (mlx5_ifc.h).
const (
	VportStateDown = 0x0 // C: MLX5_QUERY_VPORT_STATE_OUT_STATE_DOWN
	VportStateUp   = 0x1 // C: MLX5_QUERY_VPORT_STATE_OUT_STATE_UP
)

// SharedResourceUID is the uid of objects every uid may use: the kernel creates its
// completion EQs with it when the device has user contexts (eq.c create_map_eq), so that
// DevX CQs can attach to them (mlx5_ifc.h).
const SharedResourceUID = 0xffff // C: MLX5_SHARED_RESOURCE_UID
