// mlx5probe: drives a ConnectX device bound to vfio-pci through rdma-core's user-space mlx5
// VFIO provider (libmlx5, Debian's ibverbs-providers) and prints one line per step:
//
//	STEP ok <name> [detail]      the step worked
//	STEP fail <name>: <why>      it did not; the steps that need it print "STEP skip"
//	STEP skip <name>
//
// and "DONE" at the end. The conformance test (integration/mlx5conf) compiles it on the host
// with gcc against libibverbs-dev and runs it in the VM guest against the device model served
// over vfio-user. The provider itself prints the commands the device failed on stderr
// ("mlx5_vfio_op_code(0x..), op_mod(0x..) failed, status ..."; rdma-core
// providers/mlx5/mlx5_vfio.c, mlx5_vfio_cmd_check).
//
// Usage: mlx5probe <PCI address, e.g. 0000:00:04.0>
//
// Command layouts: the PRM as NVIDIA's headers spell it (include/linux/mlx5/mlx5_ifc.h and
// rdma-core providers/mlx5/mlx5_ifc.h; field offsets in bits from the start of the structure,
// big-endian dwords).
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

enum {
	OP_QUERY_HCA_CAP = 0x100,
	OP_CREATE_CQ = 0x400,
	OP_ALLOC_TRANSPORT_DOMAIN = 0x816,
	OP_QUERY_NIC_VPORT_CONTEXT = 0x754,
};

// set writes val into the field of width bits at bit offset off (the mlx5_ifc convention:
// bit 0 is the most significant bit of the first big-endian dword).
static void set(void *buf, unsigned off, unsigned width, uint32_t val)
{
	uint32_t *dw = (uint32_t *)buf + off / 32;
	unsigned shift = 32 - (off % 32) - width;
	uint32_t mask = (width == 32 ? 0xffffffffu : ((1u << width) - 1)) << shift;
	uint32_t v = ntohl(*dw);
	v = (v & ~mask) | ((val << shift) & mask);
	*dw = htonl(v);
}

static uint32_t get(const void *buf, unsigned off, unsigned width)
{
	uint32_t v = ntohl(((const uint32_t *)buf)[off / 32]);
	unsigned shift = 32 - (off % 32) - width;
	return width == 32 ? v : (v >> shift) & ((1u << width) - 1);
}

static int failed;

static void ok(const char *step, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void ok(const char *step, const char *fmt, ...)
{
	va_list ap;
	printf("STEP ok %s", step);
	if (fmt && *fmt) {
		putchar(' ');
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
	}
	putchar('\n');
	fflush(stdout);
}

static void fail(const char *step, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(const char *step, const char *fmt, ...)
{
	va_list ap;
	printf("STEP fail %s: ", step);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	failed = 1;
}

static void skip(const char *step)
{
	printf("STEP skip %s\n", step);
	fflush(stdout);
}

// cmd_status reports the PRM status and syndrome of a command output (mbox_out: status at
// bit 0 width 8, syndrome at bit 0x20).
static void cmd_status(const void *out, char *buf, size_t n)
{
	snprintf(buf, n, "status 0x%x syndrome 0x%x", get(out, 0, 8), get(out, 0x20, 32));
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s <PCI address>\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	char why[128];

	struct mlx5dv_vfio_context_attr attr = { .pci_name = argv[1] };
	struct ibv_device **list = mlx5dv_get_vfio_device_list(&attr);
	if (!list || !list[0]) {
		fail("device listed", "mlx5dv_get_vfio_device_list(%s): %s", argv[1], strerror(errno));
		printf("DONE\n");
		return 1;
	}
	ok("device listed", "%s", ibv_get_device_name(list[0]));

	// The provider brings the function up here: ENABLE_HCA, ISSI, pages, SET_HCA_CAP,
	// INIT_HCA (mlx5_vfio_setup_function).
	struct ibv_context *ctx = ibv_open_device(list[0]);
	if (!ctx) {
		fail("context opened", "ibv_open_device: %s", strerror(errno));
		printf("DONE\n");
		return 1;
	}
	ok("context opened", "");

	int efd = mlx5dv_vfio_get_events_fd(ctx);
	if (efd < 0)
		fail("events fd", "mlx5dv_vfio_get_events_fd: %s", strerror(errno));
	else
		ok("events fd", "%d", efd);

	// QUERY_HCA_CAP, general device capabilities, current values: op_mod = type 0 << 1 | 1.
	{
		uint32_t in[4] = { 0 };
		static uint32_t out[(0x10 + 0x1000) / 4];
		set(in, 0, 16, OP_QUERY_HCA_CAP);
		set(in, 0x30, 16, 0x1);
		int err = mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out));
		cmd_status(out, why, sizeof(why));
		if (err)
			fail("QUERY_HCA_CAP", "mlx5dv_devx_general_cmd: %s (%s)", strerror(err > 0 ? err : errno), why);
		else
			ok("QUERY_HCA_CAP", "%s", why);
	}

	// QUERY_NIC_VPORT_CONTEXT of the own vport: a second general command.
	{
		uint32_t in[4] = { 0 };
		static uint32_t out[(0x10 + 0x100) / 4];
		set(in, 0, 16, OP_QUERY_NIC_VPORT_CONTEXT);
		int err = mlx5dv_devx_general_cmd(ctx, in, sizeof(in), out, sizeof(out));
		cmd_status(out, why, sizeof(why));
		if (err)
			fail("QUERY_NIC_VPORT_CONTEXT", "%s (%s)", strerror(err > 0 ? err : errno), why);
		else
			ok("QUERY_NIC_VPORT_CONTEXT", "%s", why);
	}

	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	if (!pd)
		fail("PD allocated", "ibv_alloc_pd: %s", strerror(errno));
	else
		ok("PD allocated", "");

	static char mrbuf[1 << 16] __attribute__((aligned(4096)));
	struct ibv_mr *mr = NULL;
	if (pd) {
		mr = ibv_reg_mr(pd, mrbuf, sizeof(mrbuf), IBV_ACCESS_LOCAL_WRITE);
		if (!mr)
			fail("MR registered", "ibv_reg_mr: %s", strerror(errno));
		else
			ok("MR registered", "lkey 0x%x", mr->lkey);
	} else
		skip("MR registered");

	struct mlx5dv_devx_uar *uar = mlx5dv_devx_alloc_uar(ctx, MLX5DV_UAR_ALLOC_TYPE_NC);
	if (!uar)
		fail("UAR allocated", "mlx5dv_devx_alloc_uar: %s", strerror(errno));
	else
		ok("UAR allocated", "page %u", uar->page_id);

	// One umem: a 64-entry CQ of 64-byte CQEs (4 KiB) and its doorbell record after it.
	static uint8_t cqmem[8192] __attribute__((aligned(4096)));
	for (int i = 0; i < 64; i++)
		cqmem[i * 64 + 63] = 0xf1; // op_own: invalid opcode, owner 1 (not yet written)
	struct mlx5dv_devx_umem *umem = mlx5dv_devx_umem_reg(ctx, cqmem, sizeof(cqmem), IBV_ACCESS_LOCAL_WRITE);
	if (!umem)
		fail("UMEM registered", "mlx5dv_devx_umem_reg: %s", strerror(errno));
	else
		ok("UMEM registered", "id %u", umem->umem_id);

	uint32_t eqn = 0;
	int have_eqn = 0;
	{
		int err = mlx5dv_devx_query_eqn(ctx, 0, &eqn);
		if (err)
			fail("EQN queried", "mlx5dv_devx_query_eqn: %s", strerror(err > 0 ? err : errno));
		else {
			have_eqn = 1;
			ok("EQN queried", "%u", eqn);
		}
	}

	// CREATE_CQ through DevX: create_cq_in has the cqc at bit 0x80; cq_umem_offset at 0x280,
	// cq_umem_id at 0x2c0, cq_umem_valid at 0x2e0; in the cqc: dbr_umem_valid at bit 6,
	// dbr_umem_id at 0x20, log_cq_size at 0x63, uar_page at 0x68, c_eqn at 0xa0,
	// log_page_size at 0xc3, dbr_addr at 0x1c0 (an offset into the doorbell umem).
	struct mlx5dv_devx_obj *cq = NULL;
	if (umem && uar && have_eqn) {
		static uint32_t in[0x110 / 4], out[4];
		const unsigned cqc = 0x80;
		set(in, 0, 16, OP_CREATE_CQ);
		set(in, cqc + 6, 1, 1);
		set(in, cqc + 0x20, 32, umem->umem_id);
		set(in, cqc + 0x63, 5, 6);
		set(in, cqc + 0x68, 24, uar->page_id);
		set(in, cqc + 0xa0, 32, eqn);
		set(in, cqc + 0xc3, 5, 0);
		set(in, cqc + 0x1c0, 32, 0);
		set(in, cqc + 0x1e0, 32, 4096);
		set(in, 0x2c0, 32, umem->umem_id);
		set(in, 0x2e0, 1, 1);
		cq = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
		cmd_status(out, why, sizeof(why));
		if (!cq)
			fail("CQ created", "mlx5dv_devx_obj_create CREATE_CQ: %s (%s)", strerror(errno), why);
		else
			ok("CQ created", "cqn 0x%x", get(out, 0x48, 24));
	} else
		skip("CQ created");

	// ALLOC_TRANSPORT_DOMAIN: the first object of an Ethernet queue set.
	struct mlx5dv_devx_obj *td = NULL;
	{
		uint32_t in[4] = { 0 }, out[4] = { 0 };
		set(in, 0, 16, OP_ALLOC_TRANSPORT_DOMAIN);
		td = mlx5dv_devx_obj_create(ctx, in, sizeof(in), out, sizeof(out));
		cmd_status(out, why, sizeof(why));
		if (!td)
			fail("transport domain allocated", "%s (%s)", strerror(errno), why);
		else
			ok("transport domain allocated", "0x%x", get(out, 0x48, 24));
	}

	// Teardown, newest first; each destroy is a command of its own.
	if (td) {
		if (mlx5dv_devx_obj_destroy(td))
			fail("transport domain freed", "%s", strerror(errno));
		else
			ok("transport domain freed", "");
	}
	if (cq) {
		if (mlx5dv_devx_obj_destroy(cq))
			fail("CQ destroyed", "%s", strerror(errno));
		else
			ok("CQ destroyed", "");
	}
	if (umem && mlx5dv_devx_umem_dereg(umem))
		fail("UMEM deregistered", "%s", strerror(errno));
	if (uar)
		mlx5dv_devx_free_uar(uar);
	if (mr && ibv_dereg_mr(mr))
		fail("MR deregistered", "%s", strerror(errno));
	if (pd && ibv_dealloc_pd(pd))
		fail("PD freed", "%s", strerror(errno));
	// Closing tears the function down (TEARDOWN_HCA, pages back, DISABLE_HCA).
	if (ibv_close_device(ctx))
		fail("context closed", "%s", strerror(errno));
	else
		ok("context closed", "");
	ibv_free_device_list(list);
	printf("DONE\n");
	return failed;
}
