//go:build linux

package redistest

import (
	"os/exec"
	"syscall"
)

// setProcAttr makes the child its own process group leader (so a Ctrl-C to
// the test's group does not race our own shutdown) and asks the kernel to
// SIGKILL it when the thread that started it dies. Processes are started from
// a dedicated goroutine locked to its OS thread (see internal/spawn), so that thread
// lives as long as the test binary.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup sends SIGKILL to the whole process group of pid, which also
// removes any fork (BGSAVE, AOF rewrite) the server may have running.
func killGroup(pid int) error {
	return syscall.Kill(-pid, syscall.SIGKILL)
}
