package mysqlsource

import "testing"

// TestLagBytes: the binary log after the applied position, summed across files.
func TestLagBytes(t *testing.T) {
	var s Source
	if got := s.LagBytes(); got != 0 {
		t.Fatalf("before any listing: %d", got)
	}
	logs := []binlogFile{{number: 3, size: 1000}, {number: 4, size: 500}, {number: 5, size: 300}}
	s.progress.logs.Store(&logs)
	for _, tc := range []struct {
		at   Position
		want int64
	}{
		{Position{}, 0},
		{Position{File: "binlog.000004", Pos: 200}, 300 + 300},
		{Position{File: "binlog.000005", Pos: 300}, 0},
		{Position{File: "binlog.000005", Pos: 400}, 0}, // ahead of the last listing
		{Position{File: "binlog.000002", Pos: 4}, 1800},
	} {
		at := tc.at
		s.position.Store(&at)
		if got := s.LagBytes(); got != tc.want {
			t.Errorf("LagBytes at %v = %d, want %d", tc.at, got, tc.want)
		}
	}
}
