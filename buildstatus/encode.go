package buildstatus

import (
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendDocument appends doc's JSON to b, byte for byte what encoding/json's Marshal writes for
// it (field order, null for nil pointers, slices and maps, map keys sorted, HTML-safe string
// escaping), without reflection: Encode runs on every save and this is about five times
// faster. TestEncode_SameBytesAsEncodingJSON holds it to encoding/json's output.
func appendDocument(b []byte, doc *PublishResponse) []byte {
	b = append(b, `{"buildId":`...)
	b = appendJSONString(b, doc.BuildID)
	b = append(b, `,"projectId":`...)
	b = appendJSONString(b, doc.ProjectID)
	b = append(b, `,"platforms":`...)
	if doc.Platforms == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, p := range doc.Platforms {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, p)
		}
		b = append(b, ']')
	}
	b = append(b, `,"status":`...)
	b = appendJSONString(b, doc.Status)
	b = append(b, `,"platformResults":`...)
	b = appendPlatformResults(b, doc.PlatformResults)
	b = append(b, `,"estimatedTime":`...)
	if doc.EstimatedTime == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, *doc.EstimatedTime, 10)
	}
	b = append(b, `,"createdAt":`...)
	b = appendDateTime(b, doc.CreatedAt)
	b = append(b, `,"updatedAt":`...)
	b = appendDateTime(b, doc.UpdatedAt)
	return append(b, '}')
}

// appendPlatformResults appends the platform results as a JSON object with sorted keys.
func appendPlatformResults(b []byte, results map[string]*PlatformResult) []byte {
	if results == nil {
		return append(b, "null"...)
	}
	var stack [MaxPlatforms]string
	names := stack[:0]
	for name := range results {
		names = append(names, name)
	}
	slices.Sort(names)
	b = append(b, '{')
	for i, name := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, name)
		b = append(b, ':')
		b = appendPlatformResult(b, results[name])
	}
	return append(b, '}')
}

// appendPlatformResult appends one platform result (null for nil).
func appendPlatformResult(b []byte, r *PlatformResult) []byte {
	if r == nil {
		return append(b, "null"...)
	}
	b = append(b, `{"platform":`...)
	b = appendJSONString(b, r.Platform)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, r.Status)
	b = append(b, `,"progress":`...)
	if r.Progress == nil {
		b = append(b, "null"...)
	} else {
		b = strconv.AppendInt(b, int64(*r.Progress), 10)
	}
	b = append(b, `,"logUrl":`...)
	b = appendOptionalString(b, r.LogURL)
	b = append(b, `,"downloadUrl":`...)
	b = appendOptionalString(b, r.DownloadURL)
	b = append(b, `,"errorMessage":`...)
	b = appendOptionalString(b, r.ErrorMessage)
	b = append(b, `,"startedAt":`...)
	b = appendDateTime(b, r.StartedAt)
	b = append(b, `,"completedAt":`...)
	b = appendDateTime(b, r.CompletedAt)
	return append(b, '}')
}

func appendOptionalString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}

// appendDateTime appends a date-time as the JSON string of its text (MarshalText), null for nil.
func appendDateTime(b []byte, d *DateTime) []byte {
	if d == nil {
		return append(b, "null"...)
	}
	b = append(b, '"')
	if d.Zoned {
		b = d.Time.AppendFormat(b, time.RFC3339Nano)
	} else {
		b = appendLocal(b, d.Time)
	}
	return append(b, '"')
}

// jsonPlain marks the ASCII bytes a JSON string holds as they are: printable, and neither a
// quote, a backslash nor one of the HTML-sensitive '<', '>' and '&' (escaped as \u003c, like
// encoding/json does, so a stored document is safe to embed in HTML).
var jsonPlain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = true
	}
	for _, c := range `"\<>&` {
		t[c] = false
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way encoding/json escapes it: '"' and '\'
// with a backslash, \b \f \n \r \t by name, other control bytes and '<' '>' '&' as \u00XX,
// U+2028 and U+2029 as \u2028 and \u2029, and each byte of invalid UTF-8 as \ufffd.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonPlain[c] {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
