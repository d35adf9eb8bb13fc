package interop

import "syscall"

// childAttr makes the server process die with the test binary, so that an
// interrupted run leaves no server behind.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
