package buildstatus

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestEncode_SameBytesAsEncodingJSON: Encode writes exactly what encoding/json's Marshal writes
// for any document (stored values and their ETags do not change with the encoder), including
// strings with quotes, control bytes, HTML characters, U+2028/U+2029 and invalid UTF-8, nil and
// empty slices and maps, nil results and every optional field absent or present.
func TestEncode_SameBytesAsEncodingJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		doc := documentGen().Draw(t, "doc")
		got, err := Encode(doc)
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Encode:\n%s\nencoding/json:\n%s", got, want)
		}
	})
}

// TestEncode_SampleDocument: the seed's sample encodes as encoding/json encodes it.
func TestEncode_SampleDocument(t *testing.T) {
	var doc PublishResponse
	if err := json.Unmarshal([]byte(sampleJSON), &doc); err != nil {
		t.Fatal(err)
	}
	got, err := Encode(&doc)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(&doc)
	if !bytes.Equal(got, want) {
		t.Fatalf("Encode:\n%s\nencoding/json:\n%s", got, want)
	}
}

// jsonTextGen draws strings that exercise every escaping rule.
func jsonTextGen() *rapid.Generator[string] {
	tricky := rapid.SampledFrom([]rune{'<', '>', '&', '"', '\\', '\b', '\f', '\n', '\r', '\t', 0, 0x1f, 0x7f,
		'\u2028', '\u2029', 'é', '€', '😀', '\ufffd', 'a', '/', ' '})
	return rapid.OneOf(
		rapid.String(),
		rapid.StringOf(tricky),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
	)
}

func optional[T any](g *rapid.Generator[T]) *rapid.Generator[*T] {
	return rapid.Custom(func(t *rapid.T) *T {
		if !rapid.Bool().Draw(t, "present") {
			return nil
		}
		v := g.Draw(t, "value")
		return &v
	})
}

func dateTimeGen() *rapid.Generator[DateTime] {
	return rapid.Custom(func(t *rapid.T) DateTime {
		sec := rapid.Int64Range(-62135596800, 253402300799).Draw(t, "sec") // years 1..9999
		nsec := rapid.SampledFrom([]int64{0, 0, 500_000_000, 123_456_789, 1}).Draw(t, "nsec")
		if !rapid.Bool().Draw(t, "zoned") {
			return DateTime{Time: time.Unix(sec, nsec).UTC()}
		}
		offset := rapid.IntRange(-14*60, 14*60).Draw(t, "offsetMinutes") * 60
		zone := time.UTC
		if offset != 0 {
			zone = time.FixedZone("", offset)
		}
		return DateTime{Time: time.Unix(sec, nsec).In(zone), Zoned: true}
	})
}

func platformResultGen() *rapid.Generator[*PlatformResult] {
	return rapid.Custom(func(t *rapid.T) *PlatformResult {
		if rapid.IntRange(0, 9).Draw(t, "nil") == 0 {
			return nil
		}
		return &PlatformResult{
			Platform:     jsonTextGen().Draw(t, "platform"),
			Status:       jsonTextGen().Draw(t, "status"),
			Progress:     optional(rapid.Int()).Draw(t, "progress"),
			LogURL:       optional(jsonTextGen()).Draw(t, "logUrl"),
			DownloadURL:  optional(jsonTextGen()).Draw(t, "downloadUrl"),
			ErrorMessage: optional(jsonTextGen()).Draw(t, "errorMessage"),
			StartedAt:    optional(dateTimeGen()).Draw(t, "startedAt"),
			CompletedAt:  optional(dateTimeGen()).Draw(t, "completedAt"),
		}
	})
}

func documentGen() *rapid.Generator[*PublishResponse] {
	return rapid.Custom(func(t *rapid.T) *PublishResponse {
		doc := &PublishResponse{
			BuildID:       jsonTextGen().Draw(t, "buildId"),
			ProjectID:     jsonTextGen().Draw(t, "projectId"),
			Status:        jsonTextGen().Draw(t, "status"),
			EstimatedTime: optional(rapid.Int64()).Draw(t, "estimatedTime"),
			CreatedAt:     optional(dateTimeGen()).Draw(t, "createdAt"),
			UpdatedAt:     optional(dateTimeGen()).Draw(t, "updatedAt"),
		}
		if rapid.Bool().Draw(t, "platforms") {
			doc.Platforms = rapid.SliceOfN(jsonTextGen(), 0, 5).Draw(t, "platformList")
		}
		if rapid.Bool().Draw(t, "results") {
			doc.PlatformResults = rapid.MapOfN(jsonTextGen(), platformResultGen(), 0, 5).Draw(t, "resultMap")
		}
		return doc
	})
}
