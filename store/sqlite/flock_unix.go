//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package sqlite

import (
	"errors"
	"os"
	"syscall"
)

// flockSupported reports whether tryLock can lock files here.
const flockSupported = true

// tryLock takes an exclusive flock on f without waiting; it reports false
// when another open file holds one.
func tryLock(f *os.File) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		}
		return false, err
	}
}
