package prm

// InitSeg is the initialization segment as the kernel's device.h lays it out in bytes (struct
// mlx5_init_seg): the registers mlx5_core and rdma-core's mlx5_vfio.c read and write with
// 32-bit big-endian MMIO. The bit-level view of the same page is InitialSeg (mlx5_ifc.h);
// this one adds what that layout leaves reserved: the command timeouts, the free-running
// internal timer and the real-time clock. Byte offsets as gcc lays out device.h; TestLayout
// checks them.
var InitSeg = struct {
	FWRev          Field
	CmdifRevFWSub  Field
	CmdqAddrH      Field
	CmdqAddrLSz    Field
	CmdDbell       Field
	Initializing   Field
	Health         Field
	CmdExecTo      Field
	CmdQInitTo     Field
	InternalTimerH Field
	InternalTimerL Field
	HealthCounter  Field
	RealTimeH      Field
	RealTimeL      Field
}{
	FWRev:          dvField("linux:mlx5_init_seg", "fw_rev", 0x0, 4),
	CmdifRevFWSub:  dvField("linux:mlx5_init_seg", "cmdif_rev_fw_sub", 0x4, 4),
	CmdqAddrH:      dvField("linux:mlx5_init_seg", "cmdq_addr_h", 0x10, 4),
	CmdqAddrLSz:    dvField("linux:mlx5_init_seg", "cmdq_addr_l_sz", 0x14, 4),
	CmdDbell:       dvField("linux:mlx5_init_seg", "cmd_dbell", 0x18, 4),
	Initializing:   dvField("linux:mlx5_init_seg", "initializing", 0x1fc, 4),
	Health:         dvField("linux:mlx5_init_seg", "health", 0x200, 64),
	CmdExecTo:      dvField("linux:mlx5_init_seg", "cmd_exec_to", 0xff8, 4),
	CmdQInitTo:     dvField("linux:mlx5_init_seg", "cmd_q_init_to", 0xffc, 4),
	InternalTimerH: dvField("linux:mlx5_init_seg", "internal_timer_h", 0x1000, 4),
	InternalTimerL: dvField("linux:mlx5_init_seg", "internal_timer_l", 0x1004, 4),
	HealthCounter:  dvField("linux:mlx5_init_seg", "health_counter", 0x1010, 4),
	RealTimeH:      dvField("linux:mlx5_init_seg", "real_time_h", 0x1040, 4),
	RealTimeL:      dvField("linux:mlx5_init_seg", "real_time_l", 0x1044, 4),
}

// EQEPageReq is the event data of a page-request EQE (device.h struct mlx5_eqe_page_req,
// at EQE byte 0x20): the function and the number of pages firmware wants (negative: pages it
// gives back).
var EQEPageReq = struct {
	ECFunction Field
	FuncID     Field
	NumPages   Field
}{
	ECFunction: dvField("linux:mlx5_eqe_page_req", "ec_function", 0, 2),
	FuncID:     dvField("linux:mlx5_eqe_page_req", "func_id", 2, 2),
	NumPages:   dvField("linux:mlx5_eqe_page_req", "num_pages", 4, 4),
}

// CmdIfRev is the command interface revision the kernel's cmd.c (CMD_IF_REV) and rdma-core's
// mlx5_vfio.c accept in the init segment's cmdif_rev_fw_sub; not in a header.
const CmdIfRev = 5

// QueryPagesRegular is QUERY_PAGES op_mod 3, the pages needed after INIT_HCA (kernel
// pagealloc.c MLX5_POST_INIT_PAGES... as mlx5_core and mlx5_vfio.c pass it; not in a header).
const QueryPagesRegular = 3

// EQEPortState is the data of a PORT_CHANGE EQE (device.h struct mlx5_eqe_port_state): the
// port number in the upper nibble of byte 8 (events.c and mlx5e read port >> 4).
var EQEPortState = struct{ Port Field }{
	Port: dvField("linux:mlx5_eqe_port_state", "port", 8, 1),
}

// PORT_CHANGE sub-types (device.h): the two mlx5e acts on (en_main.c async_event).
const (
	PortChangeDown   = 1 // C: MLX5_PORT_CHANGE_SUBTYPE_DOWN
	PortChangeActive = 4 // C: MLX5_PORT_CHANGE_SUBTYPE_ACTIVE
)
