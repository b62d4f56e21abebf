//go:build !amd64 && !arm64

package testutil

// sysBPF: not probed on other architectures (0 means no probe).
const sysBPF = 0
