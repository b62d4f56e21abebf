package testutil

// sysBPF is bpf()'s number (Linux arch/x86/entry/syscalls/syscall_64.tbl); the standard
// library's syscall package predates it.
const sysBPF = 321
