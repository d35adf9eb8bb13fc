package e2e

import "syscall"

// childAttr makes the kernel SIGKILL a child when the test binary dies, so
// that a test killed by -timeout leaves no node behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
