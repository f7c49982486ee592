package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// seedIndexYAML declares the seed's example table.
const seedIndexYAML = `
index:
  key-prefix: las_im_data_sync
  tables:
    - db: db1
      table: table1
      key: id
      delete-column: yn
      columns:
        - {name: id, type: long}
        - {name: lastAddrId, type: int}
        - {name: categoryId, type: int}
        - {name: brandId, type: "int?"}
        - {name: price, type: decimal}
      dimensions:
        - [{code: las, column: lastAddrId}, {code: cat, column: categoryId}, {code: bra, column: brandId}]
        - [{code: las, column: lastAddrId}, {code: cat, column: categoryId}]
`

func TestIndex_SeedTableLoads(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte(seedIndexYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tb := cfg.Index.Tables[0]
	if tb.DeleteColumn != "yn" || len(tb.Columns) != 5 || tb.Columns[3].Type != "int?" || len(tb.Dimensions) != 2 || tb.Dimensions[0][2].Code != "bra" {
		t.Fatalf("table = %+v", tb)
	}
}

func TestIndex_BadTableIsAConfigError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.yaml")
	bad := strings.Replace(seedIndexYAML, "type: decimal", "type: money", 1)
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), `index.tables[0]`) || !strings.Contains(err.Error(), `unsupported type "money"`) {
		t.Fatalf("Validate = %v", err)
	}
}
