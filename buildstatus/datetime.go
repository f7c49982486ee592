package buildstatus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// localLayout is Java's LocalDateTime ISO-8601 form, the seed's date-time format
// ("2025-11-09T10:30:00"), with optional fractional seconds.
const localLayout = "2006-01-02T15:04:05.999999999"

// DateTime is an ISO-8601 date-time as the seed stores it (section 6.1): a JSON string, never
// an array. It accepts both the zone-less LocalDateTime form ("2025-11-09T10:30:00") and RFC 3339
// with an offset, and writes a value back in the form it was read in, so a document survives a
// round trip byte for byte.
type DateTime struct {
	// Time is the instant; for a zone-less value its location is UTC.
	Time time.Time
	// Zoned reports whether the value carried an offset ("Z" or "+08:00").
	Zoned bool
}

// NewLocalDateTime returns t as a zone-less DateTime in UTC, truncated to whole seconds,
// the form the seed uses for createdAt/updatedAt.
func NewLocalDateTime(t time.Time) *DateTime {
	return &DateTime{Time: t.UTC().Truncate(time.Second)}
}

// ParseDateTime parses an ISO-8601 date-time in LocalDateTime or RFC 3339 form.
func ParseDateTime(s string) (DateTime, error) {
	if t, ok := parseLocalFast(s); ok {
		return DateTime{Time: t}, nil
	}
	if mayBeLocal(s) {
		if t, err := time.Parse(localLayout, s); err == nil {
			return DateTime{Time: t}, nil
		}
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return DateTime{Time: t, Zoned: true}, nil
	}
	return DateTime{}, fmt.Errorf("%q is not an ISO-8601 date-time (want e.g. 2025-11-09T10:30:00)", s)
}

// parseLocalFast parses the common zone-less form "2025-11-09T10:30:00", optionally with '.'
// and 1-9 fractional digits, giving exactly what time.Parse(localLayout, s) gives. ok is false
// for any other text (including out-of-range fields), which the caller hands to time.Parse.
func parseLocalFast(s string) (t time.Time, ok bool) {
	if len(s) < 19 || len(s) == 20 || len(s) > 29 ||
		s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	year, month, day := digits(s[0:4]), digits(s[5:7]), digits(s[8:10])
	hour, minute, sec := digits(s[11:13]), digits(s[14:16]), digits(s[17:19])
	if year < 0 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		hour < 0 || hour > 23 || minute < 0 || minute > 59 || sec < 0 || sec > 59 {
		return time.Time{}, false
	}
	nsec := 0
	if len(s) > 19 {
		if s[19] != '.' {
			return time.Time{}, false
		}
		if nsec = digits(s[20:]); nsec < 0 {
			return time.Time{}, false
		}
		for n := len(s) - 20; n < 9; n++ {
			nsec *= 10
		}
	}
	return time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC), true
}

// digits returns the value of s, at most 9 decimal digits, or -1 if s holds anything else.
func digits(s string) int {
	v := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return -1
		}
		v = v*10 + int(c-'0')
	}
	return v
}

// daysIn returns the number of days of month in year (proleptic Gregorian, as package time).
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// mayBeLocal reports false when s certainly does not parse as localLayout, so that a zoned
// value skips the failing (and allocating) local attempt. Text localLayout accepts is made only
// of digits and the literals "-", "T", ":", "." or ",", with exactly two '-' (the year is
// four unsigned digits): a 'Z', 'z' or '+', or a third '-' (an offset), rules it out.
func mayBeLocal(s string) bool {
	dashes := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case 'Z', 'z', '+':
			return false
		case '-':
			dashes++
			if dashes > 2 {
				return false
			}
		}
	}
	return true
}

// String formats d in the form it was parsed in.
func (d DateTime) String() string {
	if d.Zoned {
		return d.Time.Format(time.RFC3339Nano)
	}
	return d.Time.Format(localLayout)
}

// MarshalText implements encoding.TextMarshaler, which encoding/json uses to write a DateTime
// as a JSON string. The text never needs JSON escaping (it is made of digits, "-", "T", ":",
// ".", "+" and "Z"). A TextMarshaler rather than a json.Marshaler: encoding/json re-scans
// (compacts) every json.Marshaler's output, which cost half of Encode's time.
func (d DateTime) MarshalText() ([]byte, error) {
	b := make([]byte, 0, len(time.RFC3339Nano)+6)
	if d.Zoned {
		return d.Time.AppendFormat(b, time.RFC3339Nano), nil
	}
	return appendLocal(b, d.Time), nil
}

// appendLocal appends t.Format(localLayout): the wall clock of t in its location, formatted
// through package time's fast RFC 3339 path (in UTC, so it ends in "Z", which is dropped). The
// RFC 3339 layout is localLayout followed by the zone, so the rest is the same text.
func appendLocal(b []byte, t time.Time) []byte {
	_, offset := t.Zone()
	wall := t.UTC().Add(time.Duration(offset) * time.Second)
	b = wall.AppendFormat(b, time.RFC3339Nano)
	return b[:len(b)-1]
}

// UnmarshalJSON implements json.Unmarshaler. It rejects Jackson's array form explicitly.
func (d *DateTime) UnmarshalJSON(b []byte) error {
	if s, ok := plainJSONString(b); ok {
		parsed, err := ParseDateTime(s)
		if err != nil {
			return err
		}
		*d = parsed
		return nil
	}
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		return fmt.Errorf("date-times must be ISO-8601 strings, not arrays (got %s)", b)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("date-time must be a string: %w", err)
	}
	parsed, err := ParseDateTime(s)
	if err != nil {
		return err
	}
	*d = parsed
	return nil
}

// plainJSONString returns the content of b when b is exactly a JSON string of printable ASCII
// without escapes, which json.Unmarshal would decode to those same bytes. For anything else
// (escapes, control or non-ASCII bytes, surrounding space, non-strings) ok is false and the
// caller takes the general path.
func plainJSONString(b []byte) (s string, ok bool) {
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return "", false
	}
	body := b[1 : len(b)-1]
	for _, c := range body {
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return "", false
		}
	}
	return string(body), true
}
