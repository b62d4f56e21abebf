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
package prm
