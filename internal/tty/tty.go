// Package tty writes the tools' live progress: one line rewritten in place (\r) on a
// terminal, and one line per update otherwise, so that a log file gets readable lines
// instead of one endless line of carriage returns.
package tty

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// Progress is a live status line on w.
type Progress struct {
	w       io.Writer
	term    bool
	written bool
}

// NewProgress returns a progress line for w.
func NewProgress(w io.Writer) *Progress { return &Progress{w: w, term: IsTerminal(w)} }

// Update shows line: in place on a terminal, as a new line otherwise.
func (p *Progress) Update(line string) {
	p.written = true
	if p.term {
		fmt.Fprint(p.w, "\r"+line+"   ")
		return
	}
	fmt.Fprintln(p.w, line)
}

// Done ends the live line (a terminal's cursor moves past it).
func (p *Progress) Done() {
	if p.term && p.written {
		fmt.Fprintln(p.w)
	}
}
