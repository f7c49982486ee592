//go:build unix

package main

import "syscall"

// processCPU returns the CPU time (user + system, nanoseconds) this process has used so far,
// 0 if the system does not say.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
