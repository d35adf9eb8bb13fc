//go:build unix

package proccpu

import (
	"syscall"
	"time"
)

// Used returns the CPU time (user and system) this process has used, and
// whether it could be read.
func Used() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
