//go:build !nocuda

package dynlib

import "github.com/ebitengine/purego"

// Available reports whether this build can load shared libraries. Builds with the nocuda tag
// cannot: they leave purego (and with it the dynamic loader) out, so binaries are fully static.
const Available = true

// RTLD_NOW: resolve everything at load time so a broken install fails here, with the
// loader's message, rather than in the middle of a call. RTLD_LOCAL keeps the library's
// symbols out of the global namespace.
func dlopen(name string) (uintptr, error) {
	return purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_LOCAL)
}

func dlsym(h uintptr, name string) (uintptr, error) { return purego.Dlsym(h, name) }

//go:uintptrescapes
func callC(fn uintptr, args ...uintptr) uintptr {
	r, _, _ := purego.SyscallN(fn, args...)
	return r
}
