package index

import (
	"encoding/json"
	"testing"
)

// TestRowJSON_BytesOfJSONMarshal: the stored row has exactly the bytes json.Marshal gives the
// map field → value, for every column type, NULLs, strings needing escapes (quotes, control
// characters, HTML characters, U+2028, DEL) and a field two columns share.
func TestRowJSON_BytesOfJSONMarshal(t *testing.T) {
	cols := []Column{{Name: "id", Type: TypeLong}, {Name: "n", Type: TypeInt}, {Name: "f", Type: TypeDouble},
		{Name: "b", Type: TypeBool}, {Name: "d", Type: TypeDecimal}, {Name: "t", Type: TypeDateTime}, {Name: "s", Type: TypeString},
		{Name: "c", Type: TypeChar}, {Name: "zn", Type: TypeInt}, {Name: "zs", Type: TypeString},
		{Name: "a1", Field: "same", Type: TypeString}, {Name: "a2", Field: "same", Type: TypeString}, {Name: "Z", Type: TypeString}}
	for _, s := range []string{"plain", "", `q"uote\\`, "tab\tnl\n", "<a href=x>&", "é中", "\u2028", "\x7f"} {
		row := map[string]*string{"id": Str("42"), "n": Str("-7"), "f": Str("1e21"), "b": Str("yes"), "d": Str("12.50"),
			"t": Str("2024-01-02 03:04:05"), "s": Str(s), "c": Str("xy"), "zs": nil, "a1": Str("first"), "a2": Str(s), "Z": Str(s)}
		got, err := rowJSON(cols, row)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		for _, c := range cols {
			v, err := convert(c, row[c.Name])
			if err != nil {
				t.Fatal(err)
			}
			m[c.field()] = v
		}
		want, _ := json.Marshal(m)
		if string(got) != string(want) {
			t.Errorf("%q:\n got %s\nwant %s", s, got, want)
		}
	}
}
