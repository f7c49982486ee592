//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package resilientstore

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on path (created if missing), so two processes
// never append to one journal. The kernel releases it when the process dies, however it dies.
func lockFile(path string) (unlock func() error, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is locked by another process; each redstate process needs its own journal", path)
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() error {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return errors.Join(err, f.Close())
	}, nil
}
