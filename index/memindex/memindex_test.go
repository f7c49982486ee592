package memindex_test

import (
	"testing"

	"github.com/redstate/redstate/index"
	"github.com/redstate/redstate/index/indextest"
	"github.com/redstate/redstate/index/memindex"
)

func TestStoreSuite(t *testing.T) {
	indextest.RunStoreSuite(t, func(*testing.T) index.Store { return memindex.New() }, indextest.Features{})
}

func TestProperty_ShuffledDuplicatedDeliveryConverges(t *testing.T) {
	indextest.RunPropertySuite(t, func(*testing.T) index.Store { return memindex.New() }, indextest.Features{})
}
