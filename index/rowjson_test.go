package index

import (
	"encoding/json"
	"strconv"
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
			col := compileColumn(c)
			v, err := convert(&col, row[c.Name], &valueForm{})
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

// TestRowJSON_FloatsAsJSONMarshal: float and double columns are written as json.Marshal writes
// a float32 and a float64 (shortest decimal, exponent below 1e-6 and from 1e21), and a FLOAT
// keeps its own digits: "0.1" is 0.1, not the double 0.10000000149011612.
func TestRowJSON_FloatsAsJSONMarshal(t *testing.T) {
	cols := []Column{{Name: "f", Type: TypeFloat}, {Name: "d", Type: TypeDouble}}
	for _, s := range []string{"0.1", "5.17", "-0", "0", "1e-7", "1.5e-6", "1e21", "123456789", "3.4028235e38", "-2.5e-45", "1.0", "0.000001"} {
		got, err := rowJSON(cols, map[string]*string{"f": Str(s), "d": Str(s)})
		if err != nil {
			t.Fatal(err)
		}
		f32, _ := strconv.ParseFloat(s, 32)
		f64, _ := strconv.ParseFloat(s, 64)
		want, _ := json.Marshal(map[string]any{"f": float32(f32), "d": f64})
		if string(got) != string(want) {
			t.Errorf("%s: got %s, want %s", s, got, want)
		}
	}
	if got, _ := rowJSON(cols[:1], map[string]*string{"f": Str("0.1")}); string(got) != `{"f":0.1}` {
		t.Errorf("FLOAT 0.1 stored as %s", got)
	}
}

// rowJSON is the stored row of row in a table of cols (text values).
func rowJSON(cols []Column, row map[string]*string) ([]byte, error) {
	rc := newRowCodec(cols)
	vals, err := rc.convert(row, &valueForm{})
	if err != nil {
		return nil, err
	}
	return rc.json(vals)
}
