package buildstatus

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/google/uuid"
	"pgregory.net/rapid"

	"github.com/redstate/redstate"
)

// The regular expressions the hand-written validators replaced: the oracles of the tests below.
var (
	oldPlatformPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	oldStatusPattern   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
)

// oldNormalizeBuildID is NormalizeBuildID before the IsCanonicalBuildID fast path.
func oldNormalizeBuildID(id string) (string, error) {
	if len(id) != 36 {
		return "", redstate.Errorf(redstate.EINVALID, "buildId must be a UUID like 550e8400-e29b-41d4-a716-446655440000, got %q", truncate(id))
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return "", redstate.Errorf(redstate.EINVALID, "buildId must be a UUID like 550e8400-e29b-41d4-a716-446655440000, got %q", truncate(id))
	}
	return u.String(), nil
}

// fataler is what the checks need of *testing.T and *rapid.T.
type fataler interface {
	Fatalf(format string, args ...any)
}

// nameAlphabet is what names are drawn from: every accepted byte, near misses of the ranges,
// other ASCII punctuation, control bytes, multi-byte UTF-8 and invalid UTF-8.
var nameAlphabet = []string{
	"a", "z", "A", "Z", "0", "9", "m", "Q", "5", ".", "_", "-",
	"@", "[", "`", "{", "/", ":", " ", "+", "*", "$", "^", "\n", "\r", "\t", "\x00", "\x7f",
	"é", "Ａ", "٣", "\xff", "\xc3",
}

// nameGen draws strings around the 64-character limit, mostly of accepted characters.
func nameGen() *rapid.Generator[string] {
	accepted := rapid.SampledFrom(nameAlphabet[:12])
	any := rapid.SampledFrom(nameAlphabet)
	char := rapid.OneOf(accepted, accepted, accepted, any)
	return rapid.Custom(func(t *rapid.T) string {
		n := rapid.OneOf(rapid.IntRange(0, 3), rapid.IntRange(0, 70), rapid.IntRange(62, 66)).Draw(t, "len")
		var b strings.Builder
		for i := 0; i < n; i++ {
			b.WriteString(char.Draw(t, "c"))
		}
		return b.String()
	})
}

func checkPlatform(t fataler, s string) {
	err := ValidatePlatform(s)
	if want := oldPlatformPattern.MatchString(s); (err == nil) != want || validPlatform(s) != want {
		t.Fatalf("ValidatePlatform(%q) = %v, regexp match = %v", s, err, want)
	}
	if err != nil {
		want := redstate.Errorf(redstate.EINVALID, "platform must be 1-64 characters of A-Z a-z 0-9 . _ - (got %q)", truncate(s))
		if err.Error() != want.Error() || redstate.ErrorCode(err) != redstate.EINVALID {
			t.Fatalf("ValidatePlatform(%q) = %v, want %v", s, err, want)
		}
	}
}

func checkStatus(t fataler, s string) {
	err := validateStatus("status", s)
	if want := oldStatusPattern.MatchString(s); (err == nil) != want || validStatus(s) != want {
		t.Fatalf("validateStatus(%q) = %v, regexp match = %v", s, err, want)
	}
	if err != nil {
		want := redstate.Errorf(redstate.EINVALID, "status must be 1-64 characters of A-Z a-z 0-9 _ - such as IN_PROGRESS (got %q)", truncate(s))
		if err.Error() != want.Error() || redstate.ErrorCode(err) != redstate.EINVALID {
			t.Fatalf("validateStatus(%q) = %v, want %v", s, err, want)
		}
	}
}

func TestValidatePlatform_MatchesRegexp(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkPlatform(t, nameGen().Draw(t, "platform")) })
	rapid.Check(t, func(t *rapid.T) { checkPlatform(t, rapid.String().Draw(t, "platform")) })
}

func TestValidateStatus_MatchesRegexp(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkStatus(t, nameGen().Draw(t, "status")) })
	rapid.Check(t, func(t *rapid.T) { checkStatus(t, rapid.String().Draw(t, "status")) })
}

// TestValidateNames_ExhaustiveShort compares every string of up to two bytes and the length
// limits exactly.
func TestValidateNames_ExhaustiveShort(t *testing.T) {
	checkPlatform(t, "")
	checkStatus(t, "")
	for a := 0; a < 256; a++ {
		checkPlatform(t, string([]byte{byte(a)}))
		checkStatus(t, string([]byte{byte(a)}))
		for b := 0; b < 256; b++ {
			checkPlatform(t, string([]byte{byte(a), byte(b)}))
			checkStatus(t, string([]byte{byte(a), byte(b)}))
		}
	}
	for _, n := range []int{63, 64, 65, 100} {
		for _, s := range []string{strings.Repeat("a", n), "a" + strings.Repeat(".", n-1), strings.Repeat("_", n)} {
			checkPlatform(t, s)
			checkStatus(t, s)
		}
	}
}

// uuidLikeGen draws canonical UUIDs and mutations of them: case changes, replaced, inserted and
// deleted characters, and the other forms uuid.Parse knows (braces, urn:uuid:, no hyphens).
func uuidLikeGen() *rapid.Generator[string] {
	const mutants = "0123456789abcdefABCDEFgGzZ-{}: \x00\xff"
	return rapid.Custom(func(t *rapid.T) string {
		var u uuid.UUID
		copy(u[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "bytes"))
		b := []byte(u.String())
		switch rapid.IntRange(0, 5).Draw(t, "form") {
		case 0: // canonical
		case 1: // random case
			for i := range b {
				if rapid.Bool().Draw(t, "upper") {
					b[i] = byte(strings.ToUpper(string(b[i]))[0])
				}
			}
		case 2: // replacements
			for n := rapid.IntRange(1, 3).Draw(t, "n"); n > 0; n-- {
				b[rapid.IntRange(0, len(b)-1).Draw(t, "at")] = mutants[rapid.IntRange(0, len(mutants)-1).Draw(t, "c")]
			}
		case 3: // insertion or deletion
			i := rapid.IntRange(0, len(b)-1).Draw(t, "at")
			if rapid.Bool().Draw(t, "insert") {
				b = append(b[:i], append([]byte{mutants[rapid.IntRange(0, len(mutants)-1).Draw(t, "c")]}, b[i:]...)...)
			} else {
				b = append(b[:i], b[i+1:]...)
			}
		case 4: // other forms uuid.Parse accepts
			s := string(b)
			return rapid.SampledFrom([]string{"{" + s + "}", "urn:uuid:" + s, strings.ReplaceAll(s, "-", "")}).Draw(t, "other")
		case 5: // swap a hyphen with its neighbour
			for _, i := range []int{8, 13, 18, 23} {
				if rapid.Bool().Draw(t, "swap") {
					b[i], b[i+1] = b[i+1], b[i]
				}
			}
		}
		return string(b)
	})
}

func TestIsCanonicalBuildID_MatchesNormalize(t *testing.T) {
	check := func(t *rapid.T, s string) {
		norm, err := NormalizeBuildID(s)
		if got, want := IsCanonicalBuildID(s), err == nil && norm == s; got != want {
			t.Fatalf("IsCanonicalBuildID(%q) = %v; NormalizeBuildID = %q, %v", s, got, norm, err)
		}
		oldNorm, oldErr := oldNormalizeBuildID(s)
		if norm != oldNorm || (err == nil) != (oldErr == nil) || err != nil && err.Error() != oldErr.Error() {
			t.Fatalf("NormalizeBuildID(%q) = %q, %v; before: %q, %v", s, norm, err, oldNorm, oldErr)
		}
	}
	rapid.Check(t, func(t *rapid.T) { check(t, uuidLikeGen().Draw(t, "id")) })
	rapid.Check(t, func(t *rapid.T) { check(t, rapid.StringN(34, 38, -1).Draw(t, "id")) })
}

func TestIsCanonicalBuildID_Examples(t *testing.T) {
	for id, want := range map[string]bool{
		"550e8400-e29b-41d4-a716-446655440000":   true,
		"00000000-0000-0000-0000-000000000000":   true,
		"ffffffff-ffff-ffff-ffff-ffffffffffff":   true,
		"550E8400-e29b-41d4-a716-446655440000":   false,
		"550e8400e29b41d4a716446655440000":       false,
		"{550e8400-e29b-41d4-a716-446655440000}": false,
		"550e8400-e29b-41d4-a716-44665544000g":   false,
		"550e8400-e29b-41d4-a716_446655440000":   false,
		"":                                       false,
	} {
		if got := IsCanonicalBuildID(id); got != want {
			t.Errorf("IsCanonicalBuildID(%q) = %v, want %v", id, got, want)
		}
	}
}

func TestValidatePlatformResult_TextLimitsInFieldOrder(t *testing.T) {
	long := strings.Repeat("x", MaxTextBytes+1)
	ok := strings.Repeat("x", MaxTextBytes)
	r := &PlatformResult{Platform: "ios", Status: "SUCCESS", LogURL: &ok, DownloadURL: &ok, ErrorMessage: &ok}
	if err := ValidatePlatformResult(r); err != nil {
		t.Fatalf("texts at the limit: %v", err)
	}
	for _, c := range []struct {
		field string
		set   func(*PlatformResult)
	}{
		{"errorMessage", func(r *PlatformResult) { r.ErrorMessage = &long }},
		{"downloadUrl", func(r *PlatformResult) { r.DownloadURL = &long }},
		{"logUrl", func(r *PlatformResult) { r.LogURL = &long }},
	} {
		c.set(r) // each case adds one more oversized field; the first in field order is reported
		err := ValidatePlatformResult(r)
		want := c.field + " is 8193 bytes, the limit is 8192"
		var rerr *redstate.Error
		if !errors.As(err, &rerr) || rerr.Code != redstate.EINVALID || !strings.Contains(err.Error(), want) {
			t.Errorf("got %v, want EINVALID %q", err, want)
		}
	}
	r = &PlatformResult{Platform: "ios", Status: "bad status"}
	if err := ValidatePlatformResult(r); err == nil || !strings.Contains(err.Error(), "platformResults.ios.status must be 1-64 characters") {
		t.Errorf("bad status: %v", err)
	}
}

func TestValidate_DoesNotAllocate(t *testing.T) {
	doc := sampleDoc(t)
	if err := Validate(doc); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = Validate(doc) }); n != 0 {
		t.Errorf("Validate of a valid document allocates %v times", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = IsCanonicalBuildID(doc.BuildID) }); n != 0 {
		t.Errorf("IsCanonicalBuildID allocates %v times", n)
	}
}

func TestValidatePlatformResult_Links(t *testing.T) {
	for _, ok := range []string{"", "550e8400.../android/app.apk", "/logs/1.txt", "logs/1.txt?x=1#y",
		"https://cdn.example.com/app.apk", "http://10.0.0.1:8080/log"} {
		v := ok
		r := &PlatformResult{Platform: "ios", Status: "SUCCESS", LogURL: &v, DownloadURL: &v}
		if err := ValidatePlatformResult(r); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<b>x</b>",
		"file:///etc/passwd", "//evil.example/x", `\\evil.example\x`, "https:///nohost", " javascript:alert(1)",
		"java\tscript:alert(1)", "vbscript:x", "ftp://example.com/a"} {
		for _, field := range []string{"logUrl", "downloadUrl"} {
			v := bad
			r := &PlatformResult{Platform: "ios", Status: "SUCCESS"}
			if field == "logUrl" {
				r.LogURL = &v
			} else {
				r.DownloadURL = &v
			}
			err := ValidatePlatformResult(r)
			if !redstate.IsCode(err, redstate.EINVALID) || !strings.Contains(err.Error(), field) {
				t.Errorf("%s %q: %v", field, bad, err)
			}
		}
	}
}

// TestHasSpaceOrControl_MatchesTheRuneRule: the ASCII fast path answers as the rule over every
// rune does (space, control characters, DEL, Unicode white space), after non-ASCII text too.
func TestHasSpaceOrControl_MatchesTheRuneRule(t *testing.T) {
	rule := func(s string) bool {
		return strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f || unicode.IsSpace(r) })
	}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(rapid.String(), rapid.StringOf(rapid.SampledFrom([]rune{'a', '/', 'é', '\u00a0', '\u2028', '\u3000',
			0, 0x1f, 0x7f, ' ', '\t', 0x85, 0xfffd}))).Draw(t, "s")
		if got, want := hasSpaceOrControl(s), rule(s); got != want {
			t.Fatalf("hasSpaceOrControl(%q) = %v, want %v", s, got, want)
		}
	})
}
