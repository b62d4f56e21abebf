package gpudma

import "golang.org/x/sys/unix"

// fstat is the part of a file's status Describe reads.
type fstat struct{ size int64 }

func (s *fstat) of(fd int) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	s.size = st.Size
	return nil
}
