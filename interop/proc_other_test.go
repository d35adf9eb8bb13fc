//go:build !linux

package interop

import "syscall"

// childAttr is the default elsewhere: the test's cleanup stops the server.
func childAttr() *syscall.SysProcAttr { return nil }
