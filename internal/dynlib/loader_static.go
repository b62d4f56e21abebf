//go:build nocuda

package dynlib

import "errors"

// Available reports whether this build can load shared libraries: not with the nocuda tag,
// which keeps purego out so that binaries are fully static.
const Available = false

var errStatic = errors.New("built with the nocuda tag: no shared libraries (CUDA, cuFile) can be loaded")

func dlopen(string) (uintptr, error)         { return 0, errStatic }
func dlsym(uintptr, string) (uintptr, error) { return 0, errStatic }
func callC(uintptr, ...uintptr) uintptr      { panic("dynlib: " + errStatic.Error()) }
