//go:build unix

package buildstatusbench

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) this process has used so far, 0 if the
// system does not say.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
