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

// column is a declared column with its type parsed.
type column struct {
	Column
	columnType
}

// compileColumn parses c's type (TableSpec.Validate has checked it).
func compileColumn(c Column) column {
	ct, _ := c.Type.parse()
	return column{Column: c, columnType: ct}
}

// rowCodec converts the rows of one table: its declared columns, and the order their fields
// are written in.
type rowCodec struct {
	cols []column
	// order lists indexes of cols by field name, one per field: the last column of a field that
	// several columns share, as in a map.
	order []int
}

// newRowCodec compiles cols.
func newRowCodec(cols []Column) rowCodec {
	rc := rowCodec{cols: make([]column, len(cols))}
	for i, c := range cols {
		rc.cols[i] = compileColumn(c)
	}
	all := make([]int, len(cols))
	for i := range all {
		all[i] = i
	}
	slices.SortStableFunc(all, func(a, b int) int { return strings.Compare(cols[a].field(), cols[b].field()) })
	for i, c := range all {
		if i+1 < len(all) && cols[all[i+1]].field() == cols[c].field() {
			continue // a later column of the same field wins
		}
		rc.order = append(rc.order, c)
	}
	return rc
}

// valueForm is how one change writes its values: its Encoding, the index's Debezium settings
// and, for EncodingDebeziumSchema, the columns its schema typed bytes (Change.DecodedBytes).
type valueForm struct {
	enc      Encoding
	debezium *DebeziumSettings
	decoded  []string
}

// conditionForm is the form of a query's conditions: a native event's (a bytes column's
// condition is its standard base64, as the row holds it).
var conditionForm = valueForm{enc: EncodingNative}

// schemaless returns the Debezium settings when the values are those of a Debezium event
// without a schema (numbers then read by them), else nil.
func (f *valueForm) schemaless() *DebeziumSettings {
	if f.enc == EncodingDebezium {
		return f.debezium
	}
	return nil
}

// convert converts every declared column of row (a missing one is NULL), in declaration order,
// its values written as f says.
func (rc rowCodec) convert(row map[string]*string, f *valueForm) ([]any, error) {
	vals := make([]any, len(rc.cols))
	for i := range rc.cols {
		v, err := convert(&rc.cols[i], row[rc.cols[i].Name], f)
		if err != nil {
			return nil, err
		}
		vals[i] = v
	}
	return vals, nil
}

// convert turns a column's text value into its JSON value by the column's type, as the seed's
// setFieldFromString does. A NULL of a nullable type, or of string/decimal/datetime/date/time/bytes,
// is JSON null (MySQL's zero date is a NULL); a NULL of a non-nullable primitive is its zero value (the seed leaves the Java
// field at its default). f says how the value is written (see Encoding). Errors: EINVALID
// naming the column and the value.
func convert(c *column, v *string, f *valueForm) (any, error) {
	if v != nil && (c.base == TypeDateTime || c.base == TypeDate) && zeroDate(*v) {
		v = nil // MySQL's zero date, as Canal writes it: no date (Debezium writes it as NULL too)
	}
	if v == nil {
		if c.nullable {
			return nil, nil
		}
		switch c.base {
		case TypeByte, TypeShort, TypeInt, TypeLong:
			return int64(0), nil
		case TypeFloat:
			return float32(0), nil
		case TypeDouble:
			return float64(0), nil
		case TypeBool:
			return false, nil
		}
		return nil, nil
	}
	s := *v
	switch c.base {
	case TypeString:
		if !utf8.ValidString(s) {
			return nil, c.bad(s, "is not UTF-8: declare a binary column bytes")
		}
		return s, nil
	case TypeChar:
		r, _ := utf8.DecodeRuneInString(s)
		if s == "" || r == utf8.RuneError {
			return nil, c.bad(s, "has no first character")
		}
		return string(r), nil
	case TypeByte:
		return c.integer(s, 8)
	case TypeShort:
		return c.integer(s, 16)
	case TypeInt:
		return c.integer(s, 32)
	case TypeLong:
		return c.integer(s, 64)
	case TypeFloat, TypeDouble:
		bits := 64
		if c.base == TypeFloat {
			bits = 32
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(s), bits)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, c.bad(s, "is not a finite number")
		}
		if c.base == TypeFloat {
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
		return nil, c.bad(s, "is not a boolean")
	case TypeDecimal:
		return c.decimal(strings.TrimSpace(s), f.schemaless())
	case TypeDateTime:
		return c.dateTime(strings.TrimSpace(s), f.schemaless())
	case TypeDate:
		return c.date(strings.TrimSpace(s), f.schemaless())
	case TypeTime:
		return c.timeOfDay(strings.TrimSpace(s), f.schemaless())
	case TypeBytes:
		return c.bytesValue(s, f)
	}
	return nil, c.bad(s, "has an unsupported type")
}

// bad is the error of a value s of c that the column cannot read, why saying what is wrong.
func (c *column) bad(s, why string) error {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return redstate.Errorf(redstate.EINVALID, "column %s (%s): %q %s", c.Name, c.Type, s, why)
}

// integer reads a signed integer of bits.
func (c *column) integer(s string, bits int) (any, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
	if err != nil {
		return nil, c.bad(s, "is not a "+strconv.Itoa(bits)+"-bit integer")
	}
	return n, nil
}

// decimal reads a decimal column's value, kept as its exact text. From a Debezium event
// without a schema it may be a variable-scale decimal object, or (decimal.handling.mode
// precise, a declared scale) the base64 of its unscaled integer.
func (c *column) decimal(s string, dbz *DebeziumSettings) (any, error) {
	if dbz != nil {
		if d, ok := variableScaleDecimal(s); ok {
			return d, nil
		}
		if dbz.DecimalHandlingMode == DecimalPrecise && c.scale >= 0 {
			d, ok := decodeDecimal(s, c.scale)
			if !ok {
				return nil, c.bad(s, "is not the base64 of a decimal (Debezium decimal.handling.mode precise)")
			}
			return d, nil
		}
	}
	if !plainDecimal(s) && !isRat(s) {
		if dbz != nil && dbz.DecimalHandlingMode == DecimalPrecise {
			return nil, c.bad(s, "is not a decimal number: with Debezium's decimal.handling.mode precise and no schema, declare the column's scale, decimal(p,s)")
		}
		return nil, c.bad(s, "is not a decimal number")
	}
	return s, nil
}

// plainDecimal reports whether s is [-]digits[.digits], the form databases write decimals in.
func plainDecimal(s string) bool {
	whole, frac, dot := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	return allDigits(whole) && (!dot || allDigits(frac))
}

// isRat reports whether big.Rat reads s (exponents, fractions, a leading +).
func isRat(s string) bool {
	_, ok := new(big.Rat).SetString(s)
	return ok
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

// dateTime normalises a date-time to ISO-8601: zoned values in UTC with "Z", values without a
// zone as local ISO text without one (the database's own time, kept as is). A number is epoch
// milliseconds in UTC; from a Debezium event without a schema it is the connector's local
// date-time in the unit its time.precision.mode and the column's precision give.
func (c *column) dateTime(s string, dbz *DebeziumSettings) (any, error) {
	if t, ok := parseDateTime(s); ok {
		return t, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil, c.bad(s, "is not a date-time (ISO-8601, \"2006-01-02 15:04:05\" or epoch ms)")
	}
	if dbz == nil {
		return time.UnixMilli(n).UTC().Format(time.RFC3339Nano), nil
	}
	unit, name := c.epochUnit(dbz)
	t, ok := epochLocal(n, unit)
	if !ok {
		return nil, c.bad(s, "is out of the years 1..9999 as epoch "+name+" (Debezium time.precision.mode "+dbz.TimePrecisionMode+
			"): declare the column's precision, datetime(6) for microseconds, datetime(9) for nanoseconds")
	}
	return t, nil
}

// parseDateTime is dateTime's reading of text.
func parseDateTime(s string) (string, bool) {
	zoned := hasZone(s)
	for _, l := range dateTimeLayouts {
		if l.zoned != zoned {
			continue // a layout that cannot match: skip its parse error
		}
		if v, err := time.Parse(l.layout, s); err == nil {
			if l.zoned {
				return v.UTC().Format(time.RFC3339Nano), true
			}
			return v.Format(localLayout), true
		}
	}
	return "", false
}

// zeroDate reports whether s is MySQL's zero date or date-time (0000-00-00, 0000-00-00
// 00:00:00[.000000]), which names no day.
func zeroDate(s string) bool {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "0000-00-00")
	return ok && strings.Trim(rest, " :.0T") == ""
}

// hasZone reports whether the date-time text s ends in a zone: Z, or an offset after the time.
func hasZone(s string) bool {
	if strings.HasSuffix(s, "Z") {
		return true
	}
	if len(s) <= len("2006-01-02T15") {
		return false
	}
	return strings.ContainsAny(s[len("2006-01-02T15"):], "+-")
}

// epochUnit is the unit of a Debezium number in a datetime column, and its name.
func (c *column) epochUnit(dbz *DebeziumSettings) (int64, string) {
	switch dbz.TimePrecisionMode {
	case TimeMicroseconds:
		return unitMicro, "microseconds"
	case TimeNanoseconds:
		return unitNano, "nanoseconds"
	case TimeAdaptive, TimeAdaptiveMicroseconds:
		switch {
		case c.precision > 6:
			return unitNano, "nanoseconds"
		case c.precision > 3:
			return unitMicro, "microseconds"
		}
	}
	return unitMilli, "milliseconds"
}

// date normalises a date to 2006-01-02. A date-time at midnight is its date, and a trailing Z
// (Debezium's isostring) is dropped; from a Debezium event without a schema a number is days
// since the epoch.
func (c *column) date(s string, dbz *DebeziumSettings) (any, error) {
	if d, err := time.Parse("2006-01-02", strings.TrimSuffix(s, "Z")); err == nil {
		return d.Format("2006-01-02"), nil
	}
	if t, ok := parseDateTime(s); ok {
		day, clock, _ := strings.Cut(t, "T")
		if strings.TrimSuffix(clock, "Z") == "00:00:00" {
			return day, nil
		}
		return nil, c.bad(s, "has a time of day: declare the column datetime")
	}
	if dbz != nil {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			if d, ok := epochDate(n); ok {
				return d, nil
			}
			return nil, c.bad(s, "is out of the years 1..9999 as days since the epoch")
		}
	}
	return nil, c.bad(s, "is not a date (2006-01-02)")
}

// maxTimeHours bounds a time column's hours: MySQL's TIME reaches 838:59:59.
const maxTimeHours = 838

// timeOfDay normalises a time to [-]HH:MM:SS[.fraction] (trailing zeros of the fraction
// dropped), keeping a zone suffix (Z, +hh:mm); from a Debezium event without a schema a number
// is a count of the unit its time.precision.mode and the column's precision give.
func (c *column) timeOfDay(s string, dbz *DebeziumSettings) (any, error) {
	if t, ok := parseTimeOfDay(s); ok {
		return t, nil
	}
	if dbz != nil {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			unit, name := c.timeUnit(dbz)
			if h := n / (int64(time.Hour) / unit); h > maxTimeHours || h < -maxTimeHours {
				return nil, c.bad(s, "is out of range as "+name+" of the day (Debezium time.precision.mode "+dbz.TimePrecisionMode+
					"): declare the column's precision, time(3) for milliseconds, time(6) for microseconds")
			}
			return timeOfDay(n, unit), nil
		}
	}
	return nil, c.bad(s, "is not a time of day (15:04:05)")
}

// timeUnit is the unit of a Debezium number in a time column, and its name.
func (c *column) timeUnit(dbz *DebeziumSettings) (int64, string) {
	switch dbz.TimePrecisionMode {
	case TimeConnect:
		return unitMilli, "milliseconds"
	case TimeNanoseconds:
		return unitNano, "nanoseconds"
	case TimeAdaptive:
		if c.precision >= 0 && c.precision <= 3 {
			return unitMilli, "milliseconds"
		}
		if c.precision > 6 {
			return unitNano, "nanoseconds"
		}
	}
	return unitMicro, "microseconds"
}

// parseTimeOfDay reads [-]H+:MM:SS[.fraction][zone] (zone Z, ±hh:mm or ±hh).
func parseTimeOfDay(s string) (string, bool) {
	body, zone := s, ""
	if i := strings.LastIndexAny(s, "Z+"); i > 0 {
		body, zone = s[:i], s[i:]
	} else if i := strings.LastIndexByte(s, '-'); i > 0 {
		body, zone = s[:i], s[i:]
	}
	sign := ""
	if strings.HasPrefix(body, "-") {
		sign, body = "-", body[1:]
	}
	h, rest, ok1 := strings.Cut(body, ":")
	m, sec, ok2 := strings.Cut(rest, ":")
	whole, frac, _ := strings.Cut(sec, ".")
	if !ok1 || !ok2 || !allDigits(h) || len(m) != 2 || !allDigits(m) || len(whole) != 2 || !allDigits(whole) ||
		(frac != "" && !allDigits(frac)) || m > "59" || whole > "59" {
		return "", false
	}
	switch {
	case zone == "" || zone == "Z" || zone == "+00:00" || zone == "+00":
		if zone != "" {
			zone = "Z"
		}
	case len(zone) == 6 && zone[3] == ':' && allDigits(zone[1:3]) && allDigits(zone[4:]):
	case len(zone) == 3 && allDigits(zone[1:]):
		zone += ":00"
	default:
		return "", false
	}
	h = strings.TrimLeft(h, "0")
	for len(h) < 2 {
		h = "0" + h
	}
	out := sign + h + ":" + m + ":" + whole
	if frac = strings.TrimRight(frac, "0"); frac != "" {
		out += "." + frac
	}
	return out + zone, true
}

// allDigits reports whether s is one or more ASCII digits.
func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// segment is the text of a converted value in an index key: the value as the stored row holds
// it (a number's JSON literal, a boolean's true/false). raw is the value's text before
// conversion, returned as it is when it is already that text.
func segment(v any, raw *string) *string {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if raw != nil && *raw == x {
			return raw
		}
		return Str(x)
	case int64:
		if raw != nil && canonicalInt(*raw) {
			return raw
		}
		return Str(strconv.FormatInt(x, 10))
	case bool:
		return Str(strconv.FormatBool(x))
	case float32:
		return Str(string(appendJSONFloat(nil, float64(x), 32)))
	case float64:
		return Str(string(appendJSONFloat(nil, x, 64)))
	}
	return raw
}

// canonicalInt reports whether s is an integer as strconv.FormatInt writes it.
func canonicalInt(s string) bool {
	d := strings.TrimPrefix(s, "-")
	return allDigits(d) && (d[0] != '0' || s == "0")
}

// json builds the stored row from the converted values (in declaration order): the bytes are
// json.Marshal's of the map field → value (fields sorted, the last of a repeated field kept,
// HTML characters escaped), written without reflection for the common values.
func (rc rowCodec) json(vals []any) ([]byte, error) {
	out := make([]byte, 0, 64+16*len(rc.order))
	out = append(out, '{')
	for _, i := range rc.order {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = appendJSONString(out, rc.cols[i].field())
		out = append(out, ':')
		switch v := vals[i].(type) {
		case nil:
			out = append(out, "null"...)
		case string:
			out = appendJSONString(out, v)
		case int64:
			out = strconv.AppendInt(out, v, 10)
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
