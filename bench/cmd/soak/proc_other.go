//go:build !linux

package main

import "syscall"

// childAttr sets nothing where there is no parent-death signal.
func childAttr() *syscall.SysProcAttr { return nil }
