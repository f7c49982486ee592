//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package resilientstore

// lockFile is a no-op where flock is not available: do not point two processes at one journal.
func lockFile(string) (unlock func() error, err error) { return func() error { return nil }, nil }
