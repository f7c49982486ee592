//go:build linux

package redistest

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// pendingInputs counts the server-side TCP connections of 127.0.0.1:port that hold input the
// server has not read: rx_queue > 0 in /proc/net/tcp. A connection its client closed still
// counts while its input waits. Connections are counted by address pair: the file is read in
// chunks while the table changes, so one may be listed twice.
func pendingInputs(port int) int {
	seen := map[string]bool{}
	local := fmt.Sprintf("0100007F:%04X", port)
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue …
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 || fields[1] != local {
			continue
		}
		_, rx, _ := strings.Cut(fields[4], ":")
		if q, err := strconv.ParseUint(rx, 16, 64); err == nil && q > 0 {
			seen[fields[1]+" "+fields[2]] = true
		}
	}
	return len(seen)
}

// waitStopped waits until process pid is stopped ("T" in /proc/<pid>/stat), so that a SIGSTOP
// has taken effect before a command is sent, or fails after readyTimeout.
func waitStopped(pid int) error {
	deadline := time.Now().Add(readyTimeout)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return err
		}
		// pid (comm) state …: comm may hold spaces, so read after the last ')'.
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i >= 0 && strings.HasPrefix(s[i+1:], " T") {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d not stopped after %s", pid, readyTimeout)
		}
		time.Sleep(time.Millisecond)
	}
}
