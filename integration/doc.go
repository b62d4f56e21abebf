// Package integration holds tests that need root, network namespaces, veth pairs, a VM
// kernel or a GPU. Each test skips with a message naming what is missing.
package integration
