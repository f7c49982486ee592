package index

import (
	"slices"
	"testing"

	"github.com/redstate/redstate"
)

// TestRowValue_PartsComeBackWhateverTheKeysHold: a version key's value gives back its version,
// change time and relation for index keys holding every kind of segment (escaped values with
// '%', NULL's '~', the empty value, '-' and ':' inside values), for a tombstone, and tells a
// layout-1 value from a layout-2 one.
func TestRowValue_PartsComeBackWhateverTheKeysHold(t *testing.T) {
	k := NewKeys(redstate.Prefix("nsq-", "p"), "db", "t", true)
	parts := []Part{{Code: "las", Column: "a"}, {Code: "cat", Column: "b"}}
	keys := []string{k.Index(parts, []*string{Str("a:b|c"), nil}), k.Index(parts[:1], []*string{Str("")}), k.Index(parts[1:], []*string{Str("x-y.z~")})}
	rel := EncodeRelation(k.TablePrefix(), keys)
	v, stamp, got, layout2 := ParseRowValue(RowValue("m00ff", "2025-11-09T10:30:00.5Z", rel))
	if v != "m00ff" || stamp != "2025-11-09T10:30:00.5Z" || !layout2 || !slices.Equal(DecodeRelation(k.TablePrefix(), got), keys) {
		t.Fatalf("parsed %q %q %q %v from relation %q of %v", v, stamp, got, layout2, rel, keys)
	}
	if v, _, got, layout2 := ParseRowValue(RowValue("m01", "2025-11-09T10:30:00Z", "")); v != "m01" || got != "" || !layout2 || DecodeRelation(k.TablePrefix(), got) != nil {
		t.Errorf("tombstone parsed %q %q %v", v, got, layout2)
	}
	if v, stamp, _, layout2 := ParseRowValue(VersionValue("m02", "2025-11-09T10:30:00Z")); v != "m02" || stamp != "2025-11-09T10:30:00Z" || layout2 {
		t.Errorf("layout-1 value parsed %q %q %v", v, stamp, layout2)
	}
	if !Newer("m03", RowValue("m02", "x", rel)) || Newer("m01", RowValue("m02", "x", rel)) || !Newer("0", RowValue("", "x", rel)) {
		t.Error("versions of layout-2 values do not compare by their version")
	}
}

// TestWrite_RefusesAVersionWithTheSeparator: a change whose version holds a '|' (which would
// make its version key's value ambiguous) fails with EINVALID.
func TestWrite_RefusesAVersionWithTheSeparator(t *testing.T) {
	spec := TableSpec{DB: "db", Table: "t", Key: "id", Columns: []Column{{Name: "id", Type: TypeLong}},
		Dimensions: [][]Part{{{Code: "id", Column: "id"}}}}
	ix, err := New(nil, []TableSpec{spec}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ix.write(ix.tables["db.t"], Change{DB: "db", Table: "t", Op: OpUpsert, Version: "m01|x", Row: map[string]*string{"id": Str("1")}})
	if !redstate.IsCode(err, redstate.EINVALID) {
		t.Fatalf("write = %v, want EINVALID", err)
	}
}
