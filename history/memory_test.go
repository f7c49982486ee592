package history_test

import (
	"testing"
	"time"

	"github.com/redstate/redstate/history"
	"github.com/redstate/redstate/history/historytest"
)

func TestMemoryStore_Conformance(t *testing.T) {
	historytest.Run(t, func(t *testing.T, now func() time.Time) func() history.Store {
		s := history.NewMemoryStore(now)
		return func() history.Store { return s }
	})
}
