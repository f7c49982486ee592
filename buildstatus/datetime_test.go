package buildstatus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// sampleJSON is the sample build document (storetest.SampleJSON, which this internal test
// package cannot import).
const sampleJSON = `{
  "buildId": "550e8400-e29b-41d4-a716-446655440000",
  "projectId": "test-project-001",
  "platforms": ["android", "ios"],
  "status": "IN_PROGRESS",
  "platformResults": {
    "android": {"platform": "android", "status": "SUCCESS", "progress": 100, "logUrl": null,
      "downloadUrl": "550e8400.../android/app.apk", "errorMessage": null,
      "startedAt": "2025-11-09T10:30:00", "completedAt": "2025-11-09T10:35:00"},
    "ios": {"platform": "ios", "status": "IN_PROGRESS", "progress": 50, "logUrl": null,
      "downloadUrl": null, "errorMessage": null, "startedAt": "2025-11-09T10:30:00", "completedAt": null}
  },
  "estimatedTime": 15,
  "createdAt": "2025-11-09T10:30:00",
  "updatedAt": "2025-11-09T10:33:00"
}`

func sampleDoc(t testing.TB) *PublishResponse {
	t.Helper()
	var doc PublishResponse
	if err := json.Unmarshal([]byte(sampleJSON), &doc); err != nil {
		t.Fatal(err)
	}
	return &doc
}

// The DateTime code before the fast paths: the oracles of the tests below.

func oldParseDateTime(s string) (DateTime, error) {
	if t, err := time.Parse(localLayout, s); err == nil {
		return DateTime{Time: t}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return DateTime{Time: t, Zoned: true}, nil
	}
	return DateTime{}, fmt.Errorf("%q is not an ISO-8601 date-time (want e.g. 2025-11-09T10:30:00)", s)
}

func oldMarshalJSON(d DateTime) ([]byte, error) { return json.Marshal(d.String()) }

func oldUnmarshalJSON(b []byte) (DateTime, error) {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		return DateTime{}, fmt.Errorf("date-times must be ISO-8601 strings, not arrays (got %s)", b)
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return DateTime{}, fmt.Errorf("date-time must be a string: %w", err)
	}
	return oldParseDateTime(s)
}

// sameDateTime fails unless the results are identical: value, form, offset and error text.
func sameDateTime(t *rapid.T, what string, got DateTime, gotErr error, want DateTime, wantErr error) {
	t.Helper()
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%s: error %v, want %v", what, gotErr, wantErr)
	}
	gn, go_ := got.Time.Zone()
	wn, wo := want.Time.Zone()
	if !got.Time.Equal(want.Time) || got.Zoned != want.Zoned || gn != wn || go_ != wo || got.String() != want.String() {
		t.Fatalf("%s: got %#v (%s), want %#v (%s)", what, got, got, want, want)
	}
}

// dateTextGen draws valid date-time texts: zone-less or zoned ("Z" or an offset), with 0-9
// fractional digits. canonical texts are those MarshalJSON writes back byte for byte (no
// trailing fractional zeros, no "+00:00").
func dateTextGen(canonical bool) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		year := rapid.OneOf(rapid.IntRange(0, 9999), rapid.SampledFrom([]int{1900, 2000, 2024, 2025})).Draw(t, "year")
		s := fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d",
			year, rapid.IntRange(1, 12).Draw(t, "month"),
			rapid.IntRange(1, 28).Draw(t, "day"), rapid.IntRange(0, 23).Draw(t, "hour"),
			rapid.IntRange(0, 59).Draw(t, "min"), rapid.IntRange(0, 59).Draw(t, "sec"))
		if !canonical && rapid.Bool().Draw(t, "edgeFields") {
			// month ends, leap days and out-of-range fields
			s = fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d",
				year, rapid.IntRange(0, 13).Draw(t, "month"),
				rapid.IntRange(0, 32).Draw(t, "day"), rapid.IntRange(0, 24).Draw(t, "hour"),
				rapid.IntRange(0, 60).Draw(t, "min"), rapid.IntRange(0, 60).Draw(t, "sec"))
		}
		maxDigits := 9
		if !canonical {
			maxDigits = 12 // time.Parse takes any number of digits, truncating past 9
		}
		if n := rapid.IntRange(0, maxDigits).Draw(t, "fracDigits"); n > 0 {
			frac := rapid.StringOfN(rapid.RuneFrom([]rune("0123456789")), n, n, -1).Draw(t, "frac")
			if canonical && strings.HasSuffix(frac, "0") {
				frac = frac[:n-1] + rapid.SampledFrom([]string{"1", "5", "9"}).Draw(t, "last")
			}
			sep := "."
			if !canonical && rapid.IntRange(0, 3).Draw(t, "comma") == 0 {
				sep = "," // time.Parse accepts a comma as the decimal separator too
			}
			s += sep + frac
		}
		switch rapid.IntRange(0, 2).Draw(t, "zone") {
		case 1:
			s += "Z"
		case 2:
			h, m := rapid.IntRange(0, 23).Draw(t, "offH"), rapid.IntRange(0, 59).Draw(t, "offM")
			if canonical && h == 0 && m == 0 {
				return s + "Z"
			}
			s += fmt.Sprintf("%s%02d:%02d", rapid.SampledFrom([]string{"+", "-"}).Draw(t, "sign"), h, m)
		}
		return s
	})
}

// mutatedDateTextGen draws valid texts with a few characters replaced, inserted or deleted.
func mutatedDateTextGen() *rapid.Generator[string] {
	const alphabet = "0123456789-T:.,Zz+ t"
	return rapid.Custom(func(t *rapid.T) string {
		b := []byte(dateTextGen(false).Draw(t, "text"))
		for n := rapid.IntRange(0, 3).Draw(t, "mutations"); n > 0 && len(b) > 0; n-- {
			i := rapid.IntRange(0, len(b)-1).Draw(t, "at")
			c := alphabet[rapid.IntRange(0, len(alphabet)-1).Draw(t, "c")]
			switch rapid.IntRange(0, 2).Draw(t, "op") {
			case 0:
				b[i] = c
			case 1:
				b = append(b[:i], append([]byte{c}, b[i:]...)...)
			case 2:
				b = append(b[:i], b[i+1:]...)
			}
		}
		return string(b)
	})
}

func TestDateTime_RoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := dateTextGen(true).Draw(t, "text")
		quoted := []byte(`"` + text + `"`)
		var d DateTime
		if err := d.UnmarshalJSON(quoted); err != nil {
			t.Fatalf("UnmarshalJSON(%s): %v", quoted, err)
		}
		if zoned := strings.ContainsAny(text[19:], "Z+-"); d.Zoned != zoned {
			t.Fatalf("%s: Zoned = %v", text, d.Zoned)
		}
		out, err := json.Marshal(d)
		if err != nil || !bytes.Equal(out, quoted) {
			t.Fatalf("MarshalJSON of %s = %s, %v", quoted, out, err)
		}
	})
}

func TestDateTime_MarshalJSONMatchesOld(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tm := time.Unix(0, rapid.Int64().Draw(t, "ns"))
		if rapid.Bool().Draw(t, "farYear") {
			tm = tm.AddDate(rapid.IntRange(-12000, 12000).Draw(t, "years"), 0, 0)
		}
		if rapid.Bool().Draw(t, "whole") {
			tm = tm.Truncate(time.Second)
		}
		tm = tm.In(time.FixedZone(rapid.SampledFrom([]string{"", "CET", "<&>\""}).Draw(t, "zoneName"),
			rapid.IntRange(-14*3600, 14*3600).Draw(t, "offset")))
		d := DateTime{Time: tm, Zoned: rapid.Bool().Draw(t, "zoned")}
		got, gotErr := json.Marshal(d)
		want, wantErr := oldMarshalJSON(d)
		if !bytes.Equal(got, want) || (gotErr == nil) != (wantErr == nil) {
			t.Fatalf("MarshalJSON(%#v) = %s, %v; before: %s, %v", d, got, gotErr, want, wantErr)
		}
	})
}

func TestDateTime_UnmarshalJSONMatchesOld(t *testing.T) {
	escape := func(t *rapid.T, s string) []byte {
		// JSON-quote s, writing some characters as \u escapes and adding some surrounding space.
		var b strings.Builder
		b.WriteString(rapid.SampledFrom([]string{"", " ", "\n\t"}).Draw(t, "pre"))
		b.WriteByte('"')
		for _, r := range s {
			if rapid.IntRange(0, 4).Draw(t, "esc") == 0 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
		b.WriteByte('"')
		b.WriteString(rapid.SampledFrom([]string{"", " "}).Draw(t, "post"))
		return []byte(b.String())
	}
	inputs := rapid.Custom(func(t *rapid.T) []byte {
		switch rapid.IntRange(0, 7).Draw(t, "kind") {
		case 0:
			return []byte(`"` + dateTextGen(false).Draw(t, "text") + `"`)
		case 1:
			return []byte(`"` + mutatedDateTextGen().Draw(t, "text") + `"`)
		case 2:
			return escape(t, dateTextGen(false).Draw(t, "text"))
		case 3:
			b, _ := json.Marshal(rapid.String().Draw(t, "any"))
			return b
		case 4:
			return []byte(rapid.SampledFrom([]string{`null`, `[2025,11,9,10,30]`, ` [2025]`, `[]`, `12`, `true`, `{}`,
				`"`, `""`, `"2025-11-09T10:30:00`, `"2025-11-09T10:30:00"x`, `"\"`, `"\u00"`}).Draw(t, "fixed"))
		case 5:
			// a date-time with bytes at the edges of the fast path's range spliced in
			edge := rapid.SampledFrom([]byte{0x00, 0x1f, 0x20, 0x7e, 0x7f, 0x80, 0xc3, 0xff, '"', '\\'})
			text := []byte(dateTextGen(false).Draw(t, "text"))
			i := rapid.IntRange(0, len(text)).Draw(t, "at")
			text = append(text[:i], append([]byte{edge.Draw(t, "edge")}, text[i:]...)...)
			return append(append([]byte{'"'}, text...), '"')
		case 6:
			return []byte(`"` + string(rapid.SliceOfN(rapid.Byte(), 0, 30).Draw(t, "raw")) + `"`)
		default:
			return rapid.SliceOfN(rapid.Byte(), 0, 30).Draw(t, "raw")
		}
	})
	rapid.Check(t, func(t *rapid.T) {
		b := inputs.Draw(t, "json")
		var got DateTime
		gotErr := got.UnmarshalJSON(b)
		want, wantErr := oldUnmarshalJSON(b)
		if wantErr != nil {
			want = DateTime{}
		}
		sameDateTime(t, fmt.Sprintf("UnmarshalJSON(%q)", b), got, gotErr, want, wantErr)
	})
}

func TestParseDateTime_MatchesOld(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(dateTextGen(false), mutatedDateTextGen(), rapid.StringN(0, 40, -1)).Draw(t, "s")
		got, gotErr := ParseDateTime(s)
		want, wantErr := oldParseDateTime(s)
		sameDateTime(t, fmt.Sprintf("ParseDateTime(%q)", s), got, gotErr, want, wantErr)
		if !mayBeLocal(s) {
			if _, err := time.Parse(localLayout, s); err == nil {
				t.Fatalf("mayBeLocal(%q) = false, but it parses as %s", s, localLayout)
			}
		}
	})
}

func TestDateTime_Examples(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{`"2025-11-09T10:30:00"`, `"2025-11-09T10:30:00"`},
		{`"\u0032025-11-09T10:30:00"`, `"2025-11-09T10:30:00"`},
		{` "2025-11-09T10:30:00" `, `"2025-11-09T10:30:00"`},
		{`"2025-11-09T10:30:00.123456789"`, `"2025-11-09T10:30:00.123456789"`},
		{`"2025-11-09T10:30:00.5"`, `"2025-11-09T10:30:00.5"`},
		{`"2025-11-09T10:30:00,5"`, `"2025-11-09T10:30:00.5"`},
		{`"2025-11-09T10:30:00.500"`, `"2025-11-09T10:30:00.5"`},
		{`"2025-11-09T10:30:00Z"`, `"2025-11-09T10:30:00Z"`},
		{`"2025-11-09T10:30:00.25+08:00"`, `"2025-11-09T10:30:00.25+08:00"`},
		{`"2025-11-09T10:30:00-05:30"`, `"2025-11-09T10:30:00-05:30"`},
		{`"2025-11-09T10:30:00\u002B08:00"`, `"2025-11-09T10:30:00+08:00"`},
	} {
		var d DateTime
		if err := d.UnmarshalJSON([]byte(c.in)); err != nil {
			t.Errorf("UnmarshalJSON(%s): %v", c.in, err)
			continue
		}
		if out, _ := json.Marshal(d); string(out) != c.out {
			t.Errorf("%s: round trip gives %s, want %s", c.in, out, c.out)
		}
	}
	var d DateTime
	err := d.UnmarshalJSON([]byte(` [2025,11,9,10,30]`))
	if want := "date-times must be ISO-8601 strings, not arrays (got  [2025,11,9,10,30])"; err == nil || err.Error() != want {
		t.Errorf("array: %v, want %q", err, want)
	}
	var doc PublishResponse
	err = json.Unmarshal([]byte(`{"createdAt":[2025,11,9,10,30]}`), &doc)
	if err == nil || !strings.Contains(err.Error(), "date-times must be ISO-8601 strings, not arrays (got [2025,11,9,10,30])") {
		t.Errorf("array in a document: %v", err)
	}
	for _, bad := range []string{`"2025-11-09 10:30:00"`, `"2025-13-09T10:30:00"`, `"2025-11-09T10:30:00Zx"`, `""`} {
		if err := d.UnmarshalJSON([]byte(bad)); err == nil || !strings.Contains(err.Error(), "is not an ISO-8601 date-time") {
			t.Errorf("UnmarshalJSON(%s) = %v, want a format error", bad, err)
		}
	}
}

// TestEncode_SampleRoundTrip checks the seed sample survives decode and encode byte for byte.
func TestEncode_SampleRoundTrip(t *testing.T) {
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(sampleJSON)); err != nil {
		t.Fatal(err)
	}
	b, err := Decode(want.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	got, err := Encode(b.MustDoc())
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("Encode(Decode(sample)) = %s, %v\nwant %s", got, err, want.Bytes())
	}
}

// BenchmarkDateTimeJSON compares the fast paths with the code they replaced (old), per value.
func BenchmarkDateTimeJSON(b *testing.B) {
	local := []byte(`"2025-11-09T10:30:00"`)
	zoned := []byte(`"2025-11-09T10:30:00.25+08:00"`)
	for _, in := range []struct {
		name string
		json []byte
	}{{"local", local}, {"zoned", zoned}} {
		var d DateTime
		if err := d.UnmarshalJSON(in.json); err != nil {
			b.Fatal(err)
		}
		b.Run("Marshal/"+in.name+"/new", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = json.Marshal(d)
			}
		})
		b.Run("Marshal/"+in.name+"/old", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = oldMarshalJSON(d)
			}
		})
		b.Run("Unmarshal/"+in.name+"/new", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var d DateTime
				_ = d.UnmarshalJSON(in.json)
			}
		})
		b.Run("Unmarshal/"+in.name+"/old", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = oldUnmarshalJSON(in.json)
			}
		})
	}
}

// TestParseDateTime_CalendarEdges compares every month end, leap day and out-of-range field
// with the old parser.
func TestParseDateTime_CalendarEdges(t *testing.T) {
	check := func(s string) {
		got, gotErr := ParseDateTime(s)
		want, wantErr := oldParseDateTime(s)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() ||
			!got.Time.Equal(want.Time) || got.Zoned != want.Zoned || got.String() != want.String() {
			t.Errorf("ParseDateTime(%q) = %v, %v; before: %v, %v", s, got, gotErr, want, wantErr)
		}
	}
	for _, year := range []int{0, 4, 100, 400, 1900, 2000, 2023, 2024, 2100, 9999} {
		for month := 0; month <= 13; month++ {
			for day := 0; day <= 32; day++ {
				check(fmt.Sprintf("%04d-%02d-%02dT10:30:00", year, month, day))
			}
		}
	}
	for hour := 0; hour <= 25; hour++ {
		for _, ms := range []int{0, 59, 60, 99} {
			check(fmt.Sprintf("2025-11-09T%02d:%02d:30", hour, ms))
			check(fmt.Sprintf("2025-11-09T%02d:30:%02d", hour, ms))
		}
	}
	for _, frac := range []string{".", ",", ".0", ".5", ",5", ".123456789", ".1234567890", ".x", "..5", ".5Z", " "} {
		check("2025-11-09T10:30:00" + frac)
	}
}
