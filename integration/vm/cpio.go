package vm

import (
	"bufio"
	"fmt"
	"io"
	"path"
	"strings"
)

// cpioWriter writes the "newc" cpio format that the kernel unpacks as an
// initramfs. Format: linux Documentation/driver-api/early-userspace/
// buffer-format.rst — a 110-byte ASCII header ("070701" and 13 eight-digit
// hex fields), the NUL-terminated name padded to 4 bytes, the data padded to
// 4 bytes, and a final entry named "TRAILER!!!".
type cpioWriter struct {
	w   *bufio.Writer
	ino uint32
	off int64
	err error
	// dirs remembers the directories written so far, so that Dir and the
	// implicit parents of files are each written once.
	dirs map[string]bool
}

// File-type bits of the header's mode field (the st_mode values of
// linux include/uapi/linux/stat.h).
const (
	modeDir     = 0o040000
	modeRegular = 0o100000
	modeSymlink = 0o120000
	modeCharDev = 0o020000
)

func newCPIO(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriterSize(w, 1<<16), dirs: map[string]bool{"": true, ".": true, "/": true}}
}

// clean turns an archive path into the relative form the kernel expects.
func cpioClean(name string) (string, error) {
	c := strings.TrimPrefix(path.Clean("/"+name), "/")
	if c == "" || strings.ContainsRune(c, 0) {
		return "", fmt.Errorf("cpio: bad entry name %q", name)
	}
	return c, nil
}

func (c *cpioWriter) header(name string, mode uint32, size int) {
	c.headerDev(name, mode, size, 0, 0)
}

func (c *cpioWriter) headerDev(name string, mode uint32, size int, rmajor, rminor uint32) {
	if c.err != nil {
		return
	}
	c.ino++
	nlink := 1
	if mode&0o170000 == modeDir {
		nlink = 2
	}
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		c.ino, mode, 0, 0, nlink, 0, size, 0, 0, rmajor, rminor, len(name)+1, 0)
	c.write([]byte(hdr))
	c.write([]byte(name))
	c.write([]byte{0})
	c.pad()
}

func (c *cpioWriter) write(b []byte) {
	if c.err != nil {
		return
	}
	n, err := c.w.Write(b)
	c.off += int64(n)
	c.err = err
}

// pad aligns the stream to 4 bytes, as both names and data must be.
func (c *cpioWriter) pad() {
	if r := c.off % 4; r != 0 {
		c.write(make([]byte, 4-r))
	}
}

// Dir writes a directory entry (and its missing parents).
func (c *cpioWriter) Dir(name string, perm uint32) error {
	if c.dirs[name] {
		return c.err // the root, or written before
	}
	n, err := cpioClean(name)
	if err != nil {
		return err
	}
	if c.dirs[n] {
		return c.err
	}
	if err := c.Dir(path.Dir(n), 0o755); err != nil {
		return err
	}
	c.dirs[n] = true
	c.header(n, modeDir|perm&0o7777, 0)
	return c.err
}

// File writes a regular file with the given contents.
func (c *cpioWriter) File(name string, perm uint32, data []byte) error {
	n, err := cpioClean(name)
	if err != nil {
		return err
	}
	if err := c.Dir(path.Dir(n), 0o755); err != nil {
		return err
	}
	c.header(n, modeRegular|perm&0o7777, len(data))
	c.write(data)
	c.pad()
	return c.err
}

// Symlink writes a symbolic link name → target.
func (c *cpioWriter) Symlink(name, target string) error {
	n, err := cpioClean(name)
	if err != nil {
		return err
	}
	if target == "" || strings.ContainsRune(target, 0) {
		return fmt.Errorf("cpio: bad symlink target %q for %s", target, name)
	}
	if err := c.Dir(path.Dir(n), 0o755); err != nil {
		return err
	}
	c.header(n, modeSymlink|0o777, len(target))
	c.write([]byte(target))
	c.pad()
	return c.err
}

// CharDev writes a character device node (the kernel needs /dev/console to
// give init its standard streams).
func (c *cpioWriter) CharDev(name string, perm, major, minor uint32) error {
	n, err := cpioClean(name)
	if err != nil {
		return err
	}
	if err := c.Dir(path.Dir(n), 0o755); err != nil {
		return err
	}
	c.headerDev(n, modeCharDev|perm&0o7777, 0, major, minor)
	return c.err
}

// Close writes the trailer and flushes.
func (c *cpioWriter) Close() error {
	c.header("TRAILER!!!", 0, 0)
	if c.err != nil {
		return c.err
	}
	return c.w.Flush()
}
