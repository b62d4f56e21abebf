// Package prm is the vocabulary of NVIDIA's ConnectX Programmer's Reference Manual (PRM): the
// bit-addressed, big-endian layouts of commands, contexts, capabilities and datapath
// structures, and the opcodes, statuses and constants that go in them. It does no I/O.
//
// Layouts in the PRM (and in the kernel's include/linux/mlx5/mlx5_ifc.h, which publishes them
// as structs of one u8 per bit) are big-endian bit arrays: a field is named by its bit offset
// from the start of the layout and its width in bits, and it lives in the big-endian 32-bit
// word that holds it, most significant bit first. Field.Get and Field.Set implement
// MLX5_GET/MLX5_SET semantics on those terms (include/linux/mlx5/device.h), for fields of any
// width up to 64 bits, aligned or not, including 64-bit fields split over two words.
//
// Every Field and every checked constant in this package is written as a literal call of
// ifcField/dvField (or a constant with a `// C: NAME` comment) so that the layout test can find
// them in the source and compare each one with what gcc makes of the installed headers
// (linux-headers for mlx5_ifc.h, libibverbs-dev for mlx5dv.h). A number that appears in no
// header says so in its comment and names its source.
//
// The layout test (TestLayout) parses the package's non-test files and fails when a Field is
// made any other way (a Field literal, a changed Off or Width, a constructor with a
// non-literal argument, or a prm.Field literal elsewhere under mlx5/), so every field the
// code uses is one the headers confirm. It writes two C probes, because mlx5dv.h and the
// kernel's device.h define some of the same names: the kernel probe includes device.h (and
// with it mlx5_ifc.h) with the few definitions the kernel build would give, and checks every
// ifcField (bit offset by offsetof, width by sizeof on struct mlx5_ifc_<layout>_bits) and
// every dvField whose layout is written "linux:<struct>"; the user probe includes mlx5dv.h
// and the rdma/ UAPI headers and checks the other dvFields (byte offset and size). A `// C:
// NAME` constant is looked up in the user-space headers first, then in mlx5_ifc.h and
// device.h (`// C: linux:NAME` forces the kernel's), and last, for headers that only compile
// inside the kernel (driver.h, cq.h), read from the enumerator's text. Offsets, widths and
// values must all match; the test also moves each one by one and checks that the comparison
// sees it. Without gcc or the headers it skips with what is missing, and under CI=true it
// fails instead (.ci/apt.d/mlx5.txt installs linux-headers-amd64, libibverbs-dev,
// linux-libc-dev and gcc).
//
// Fields newer than the installed kernel header are written with newerIfcField and cite the
// newer NVIDIA header they come from (DPDK's drivers/common/mlx5/mlx5_prm.h, rdma-core's
// providers/mlx5/mlx5_ifc.h). Where the installed mlx5_ifc.h names the member, the test checks
// it exactly like an ifcField; where it does not, the test reads the layout's top-level
// members from the header text, has gcc place each one, and requires the field to lie wholly
// inside one reserved_at_* member, overlapping no named member (and checks that moving it
// across that member's end is seen). Against Linux 6.1 these are the UMEM placements that
// DevX queues and keys need: cqc.dbr_umem_id, create_cq_in.cq_umem_offset and cq_umem_id,
// wq.dbr_umem_id, wq_umem_id and wq_umem_offset, and create_mkey_in.mkey_umem_id and
// mkey_umem_offset; the test log lists them ("newer than the installed header").
package prm
