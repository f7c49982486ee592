package indexbench

import (
	"testing"

	"github.com/redstate/redstate/index/mysqlsource"
)

func TestReached_ComparesFileThenPosition(t *testing.T) {
	end := mysqlsource.Position{File: "binlog.000002", Pos: 500}
	for _, c := range []struct {
		p    mysqlsource.Position
		want bool
	}{
		{mysqlsource.Position{}, false},
		{mysqlsource.Position{File: "binlog.000002", Pos: 499}, false},
		{mysqlsource.Position{File: "binlog.000002", Pos: 500}, true},
		{mysqlsource.Position{File: "binlog.000001", Pos: 900}, false},
		{mysqlsource.Position{File: "binlog.000003", Pos: 4}, true},
	} {
		if got := reached(c.p, end); got != c.want {
			t.Errorf("reached(%s, %s) = %v", c.p, end, got)
		}
	}
}

func TestNameSeq_ReadsTheLagRowsSequence(t *testing.T) {
	for row, want := range map[string]int64{
		`{"id":1,"name":"s42","yn":1}`: 42,
		`{"id":1,"name":"item-3"}`:     -1,
		``:                             -1,
		`not json`:                     -1,
	} {
		if got := nameSeq(row); got != want {
			t.Errorf("nameSeq(%q) = %d, want %d", row, got, want)
		}
	}
}
