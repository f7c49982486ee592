package cli

import (
	"testing"

	"github.com/redstate/redstate/sqldb/sqltest"
)

// TestMain stops the PostgreSQL server sqltest may have started.
func TestMain(m *testing.M) { sqltest.Main(m) }
