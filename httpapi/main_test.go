package httpapi

import (
	"testing"

	"github.com/redstate/redstate/redistest"
)

// TestMain stops the shared Redis servers of the job route tests at exit.
func TestMain(m *testing.M) { redistest.Main(m) }
