//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package sqlite

import (
	"os"

	"github.com/taskwire/taskwire/backend"
)

// flockSupported reports whether tryLock can lock files here.
const flockSupported = false

func tryLock(*os.File) (bool, error) { return false, backend.ErrLivenessUnsupported }
