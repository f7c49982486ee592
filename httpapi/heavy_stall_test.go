//go:build unix

package httpapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHeavyReads_StalledReadersHoldOneChunkAndAreDropped: clients that send a 1,000-build
// listing request and never read. Before the fix each handler held its whole 9 MB page (about
// 370 MB for 40 readers) for as long as the client stalled, with no deadline at all under
// httptest. Now each holds at most one chunk and is disconnected once a chunk's write
// deadline passes.
func TestHeavyReads_StalledReadersHoldOneChunkAndAreDropped(t *testing.T) {
	const readers = 12
	a := newRedisAPI(t, func(c *Config) { c.MaxHeavyReads = readers; c.ChunkWriteTimeout = 2 * time.Second })
	a.seedLarge(1000, 8000, "stall")
	addr := strings.TrimPrefix(a.srv.URL, "http://")

	baseline := liveHeap()
	conns := make([]net.Conn, readers)
	for i := range conns {
		c, err := (&net.Dialer{Control: smallReceiveBuffer}).Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if _, err := fmt.Fprintf(c, "GET /v1/builds?limit=1000 HTTP/1.1\r\nHost: %s\r\n\r\n", addr); err != nil {
			t.Fatal(err)
		}
		conns[i] = c
	}
	// Sample the heap while the handlers are stalled in Write, until they give up.
	var peak uint64
	deadline := time.Now().Add(30 * time.Second)
	for sawAll := false; time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		n := a.inFlight.Load()
		if h := liveHeap(); h > peak {
			peak = h
		}
		if n == readers {
			sawAll = true
		}
		if sawAll && n == 0 {
			break
		}
	}
	growth := int64(peak) - int64(baseline)
	t.Logf("%d stalled readers: heap %d MB before, peak %d MB (growth %d MB)", readers, baseline>>20, peak>>20, growth>>20)
	// A 1,000-build page is 8.4 MB (before the fix each stalled handler held about 22 MB: the
	// page, its Redis reply and its encoding); one chunk is at most 100 builds (0.84 MB). Allow
	// 5 MB per reader, below one page: the peak includes chunks in flight from Redis (reply and
	// copy) while the readers are still being filled, buffers, and the race detector's overhead.
	if limit := int64(readers * 5 << 20); growth > limit {
		t.Errorf("heap grew by %d MB with %d stalled readers; want at most %d MB", growth>>20, readers, limit>>20)
	}
	// Every stalled connection was closed by the server: reading it now ends (EOF or reset)
	// with a truncated page, instead of waiting forever.
	readDeadline := time.Now().Add(10 * time.Second)
	for i, c := range conns {
		_ = c.SetReadDeadline(readDeadline)
		n, err := io.Copy(io.Discard, bufio.NewReader(c))
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Errorf("reader %d: the server kept the connection open (%d bytes read)", i, n)
		}
	}
	if st := a.store.BreakerState(); st != "closed" {
		t.Errorf("breaker %s after the stalled readers", st)
	}
}

// smallReceiveBuffer shrinks a client socket's receive buffer before it connects, so that a
// client that does not read stops the server's writes after a few KB of kernel buffering.
func smallReceiveBuffer(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096)
	}); err != nil {
		return err
	}
	return serr
}

// liveHeap returns the bytes of live heap objects after a collection.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
