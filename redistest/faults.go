package redistest

import (
	"fmt"
	"syscall"
	"testing"
)

// Pause stops the server process with SIGSTOP: it keeps its sockets open but answers nothing,
// like a node behind a partition or in a long GC-style stall. Clients time out; Sentinel and
// Cluster see it as down after their timeouts. Resume continues it. Pausing a server that is
// not running fails the test.
func (s *Server) Pause(t testing.TB) {
	t.Helper()
	if err := s.sendRunning(syscall.SIGSTOP); err != nil {
		t.Fatalf("redistest: pause %s: %v", s.Addr, err)
	}
}

// Resume continues a server stopped by Pause with SIGCONT. Resuming a running server is a
// no-op.
func (s *Server) Resume(t testing.TB) {
	t.Helper()
	if err := s.sendRunning(syscall.SIGCONT); err != nil {
		t.Fatalf("redistest: resume %s: %v", s.Addr, err)
	}
}

// Crash kills the server with SIGKILL (kill -9), whether it runs or is paused, and waits for
// it to exit. It is Kill under the name the fault harnesses use.
func (s *Server) Crash(t testing.TB) { s.Kill(t) }

// sendRunning sends sig to the server's process (not its group) without waiting for an exit.
func (s *Server) sendRunning(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil || s.proc.exited() {
		return fmt.Errorf("not running")
	}
	return s.proc.cmd.Process.Signal(sig)
}
