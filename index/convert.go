package index

import (
	"encoding/json"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/redstate/redstate"
)

// convert turns a column's text value into its JSON value by the column's type, as the seed's
// setFieldFromString does. A NULL of a nullable type, or of string/decimal/datetime, is JSON
// null; a NULL of a non-nullable primitive is its zero value (the seed leaves the Java field at
// its default). Errors: EINVALID naming the column and the value.
func convert(c Column, v *string) (any, error) {
	base, nullable := c.Type.Base()
	if v == nil {
		if nullable {
			return nil, nil
		}
		switch base {
		case TypeByte, TypeShort, TypeInt, TypeLong, TypeFloat, TypeDouble:
			return 0, nil
		case TypeBool:
			return false, nil
		}
		return nil, nil
	}
	s := *v
	bad := func(why string) error {
		shown := s
		if len(shown) > 64 {
			shown = shown[:64] + "…"
		}
		return redstate.Errorf(redstate.EINVALID, "column %s (%s): %q %s", c.Name, c.Type, shown, why)
	}
	integer := func(bits int) (any, error) {
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
		if err != nil {
			return nil, bad("is not a " + strconv.Itoa(bits) + "-bit integer")
		}
		return n, nil
	}
	switch base {
	case TypeString:
		if !utf8.ValidString(s) {
			return nil, bad("is not UTF-8")
		}
		return s, nil
	case TypeChar:
		r, _ := utf8.DecodeRuneInString(s)
		if s == "" || r == utf8.RuneError {
			return nil, bad("has no first character")
		}
		return string(r), nil
	case TypeByte:
		return integer(8)
	case TypeShort:
		return integer(16)
	case TypeInt:
		return integer(32)
	case TypeLong:
		return integer(64)
	case TypeFloat, TypeDouble:
		bits := 64
		if base == TypeFloat {
			bits = 32
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), bits)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, bad("is not a finite number")
		}
		if base == TypeFloat {
			// A float32 written with the fewest digits that read back to it: MySQL's FLOAT 0.1
			// stays 0.1, not the double 0.10000000149011612 that the same bits are.
			return float32(f), nil
		}
		return f, nil
	case TypeBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "1", "t", "true", "y", "yes":
			return true, nil
		case "0", "f", "false", "n", "no":
			return false, nil
		}
		return nil, bad("is not a boolean")
	case TypeDecimal:
		if _, ok := new(big.Rat).SetString(strings.TrimSpace(s)); !ok {
			return nil, bad("is not a decimal number")
		}
		return strings.TrimSpace(s), nil
	case TypeDateTime:
		return parseDateTime(s, bad)
	}
	return nil, bad("has an unsupported type")
}

// dateTimeLayouts are the forms databases and CDC tools write date-times in; zoned ones first.
var dateTimeLayouts = []struct {
	layout string
	zoned  bool
}{
	{time.RFC3339Nano, true},
	{"2006-01-02 15:04:05.999999999Z07:00", true},
	{"2006-01-02 15:04:05.999999999Z07", true},
	{"2006-01-02T15:04:05.999999999", false},
	{"2006-01-02 15:04:05.999999999", false},
	{"2006-01-02", false},
}

// parseDateTime normalises a date-time to ISO-8601: zoned values in UTC with "Z", values
// without a zone as local ISO text without one (the database's own time, kept as is).
func parseDateTime(s string, bad func(string) error) (any, error) {
	t := strings.TrimSpace(s)
	for _, l := range dateTimeLayouts {
		if v, err := time.Parse(l.layout, t); err == nil {
			if l.zoned {
				return v.UTC().Format(time.RFC3339Nano), nil
			}
			return v.Format("2006-01-02T15:04:05.999999999"), nil
		}
	}
	if ms, err := strconv.ParseInt(t, 10, 64); err == nil { // epoch milliseconds (Debezium)
		return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano), nil
	}
	return nil, bad("is not a date-time (ISO-8601, \"2006-01-02 15:04:05\" or epoch ms)")
}

// rowJSON builds the stored row: every declared column by its type. A column missing from the
// change is NULL. The bytes are json.Marshal's of the map field → value (fields sorted, the
// last of a repeated field kept, HTML characters escaped), written without reflection for the
// common values.
func rowJSON(cols []Column, row map[string]*string) ([]byte, error) {
	type field struct {
		name string
		v    any
	}
	fields := make([]field, 0, len(cols))
	for _, c := range cols {
		v, err := convert(c, row[c.Name])
		if err != nil {
			return nil, err
		}
		fields = append(fields, field{c.field(), v})
	}
	slices.SortStableFunc(fields, func(a, b field) int { return strings.Compare(a.name, b.name) })
	out := make([]byte, 0, 64+16*len(fields))
	out = append(out, '{')
	for i, f := range fields {
		if i+1 < len(fields) && fields[i+1].name == f.name {
			continue // a later column of the same field wins, as in a map
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendJSONString(out, f.name)
		out = append(out, ':')
		switch v := f.v.(type) {
		case nil:
			out = append(out, "null"...)
		case string:
			out = appendJSONString(out, v)
		case int64:
			out = strconv.AppendInt(out, v, 10)
		case int:
			out = strconv.AppendInt(out, int64(v), 10)
		case bool:
			out = strconv.AppendBool(out, v)
		case float32:
			out = appendJSONFloat(out, float64(v), 32)
		case float64:
			out = appendJSONFloat(out, v, 64)
		default:
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		}
	}
	return append(out, '}'), nil
}

// appendJSONString appends s as json.Marshal writes it: as is between quotes when every byte
// is printable ASCII that needs no escape (the common case), else by json.Marshal.
func appendJSONString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return append(out, b...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

// appendJSONFloat appends the finite f as json.Marshal writes a float of bits (32 or 64): the
// shortest decimal that reads back to it, in exponent form below 1e-6 and from 1e21.
func appendJSONFloat(out []byte, f float64, bits int) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
		bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	out = strconv.AppendFloat(out, f, format, -1, bits)
	if n := len(out); format == 'e' && n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
		out[n-2] = out[n-1] // e-07 → e-7, as json.Marshal
		out = out[:n-1]
	}
	return out
}
