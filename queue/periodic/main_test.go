package periodic_test

import (
	"testing"

	"github.com/redstate/redstate/redistest"
)

func TestMain(m *testing.M) { redistest.Main(m) }
