package testutil

// sysBPF is bpf()'s number (Linux include/uapi/asm-generic/unistd.h, __NR_bpf).
const sysBPF = 280
