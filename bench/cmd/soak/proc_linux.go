package main

import "syscall"

// childAttr makes the kernel SIGKILL the server when the soak dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
