//go:build !unix

package proccpu

import "time"

// Used reports that this platform's process CPU time is not read.
func Used() (time.Duration, bool) { return 0, false }
