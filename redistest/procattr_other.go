//go:build !linux

package redistest

import (
	"os"
	"os/exec"
)

// setProcAttr is a no-op outside Linux: there is no parent-death signal, so a
// killed test binary may leave redis-server processes behind.
func setProcAttr(cmd *exec.Cmd) {}

// killGroup kills the process pid.
func killGroup(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}
