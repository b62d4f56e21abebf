// Package selftest holds the VM harness's own guest tests: they check, inside
// the VM, the environment that integration/vm's doc promises to every guest
// package (devices, modules, writable scratch, host programs).
package selftest
