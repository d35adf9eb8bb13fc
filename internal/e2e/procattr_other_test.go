//go:build !linux

package e2e

import "syscall"

func childAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
