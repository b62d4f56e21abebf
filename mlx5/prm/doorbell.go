package prm

// Doorbell records (in host memory, read by the device) and doorbell registers (in a UAR
// page of BAR0, written by the driver).

// Doorbell record words of a work queue: an RQ's receive counter is word 0, an SQ's send
// counter word 1, each a big-endian 32-bit value (16 bits used).
const (
	RcvDBR = 0 // C: MLX5_RCV_DBR
	SndDBR = 1 // C: MLX5_SND_DBR
)

// Doorbell record words of a CQ: the consumer counter (24 bits) the driver has polled up to,
// and the arm word (sequence in bits 29:28, command bit 24, counter in 23:0) — rdma-core
// mlx5.h MLX5_CQ_SET_CI 0 / MLX5_CQ_ARM_DB 1; kernel cq.h mlx5_cq_set_ci / mlx5_cq_arm.
const (
	CQDBRSetCI = 0
	CQDBRArm   = 1
)

// UARPageSize is the size of one UAR page of BAR0 (4 KiB, the adapter page).
const UARPageSize = 4096

// UAR register offsets.
const (
	// UARCQDoorbell is the 64-bit CQ arm doorbell: high word sn<<28 | cmd | ci, low word
	// the CQ number (kernel cq.h mlx5_cq_arm).
	UARCQDoorbell = 0x20 // C: MLX5_CQ_DOORBELL
	// UAREQDoorbellArm and UAREQDoorbellUpdate take a 32-bit eqn<<24 | ci: the first arms
	// the EQ, the second only moves its consumer index (kernel eq.c eq_update_ci:
	// MLX5_EQ_DOORBEL_OFFSET 0x40, plus two words when not arming). Not in a header.
	UAREQDoorbellArm    = 0x40
	UAREQDoorbellUpdate = 0x48
	// UARBlueFlame is the first BlueFlame register: an SQ doorbell is the first 8 bytes of
	// the WQE's control segment written here (or the whole WQE, BlueFlame), alternating
	// with the second buffer at UARBlueFlame+UARBlueFlameSize (kernel doorbell.h
	// MLX5_BF_OFFSET; rdma-core qp.c flips bf->offset after each post). doorbell.h is not
	// compilable in user space, so the value is not probed.
	UARBlueFlame     = 0x800
	UARBlueFlameSize = 0x100
)

// CQ arm commands (UARCQDoorbell high word and CQDBRArm bit 24).
const (
	CQDBReqNotSol = 1 << 24 // C: MLX5_CQ_DB_REQ_NOT_SOL
	CQDBReqNot    = 0 << 24 // C: MLX5_CQ_DB_REQ_NOT
)
