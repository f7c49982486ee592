package index

import (
	"encoding/base64"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// bytesValue reads a bytes column's value s, written as f says, into the form the index keeps
// binary values in: standard base64 (RFC 4648 section 4, padded), the form Kafka Connect's JSON
// converter writes bytes in and that every base64 decoder reads. The row holds that text and the
// key segment escapes it like any other (keyspace.EscapeSegment: '+', '/' and '=' are
// percent-encoded). A column declared bytes(n) is a BINARY(n): a shorter value gets back the
// trailing zero bytes the binary log drops, a longer one is refused. Errors: EINVALID naming the
// column and the form expected.
func (c *column) bytesValue(s string, f *valueForm) (string, error) {
	var b []byte
	var err error
	switch f.enc {
	case EncodingNative:
		b, err = c.fromBase64(s, base64.StdEncoding, base64.RawStdEncoding, "standard base64 (RFC 4648)")
	case EncodingCanal:
		b, err = c.fromLatin1(s)
	case EncodingPostgres:
		b, err = c.fromBytea(s)
	case EncodingWal2JSON:
		if b, err = hex.DecodeString(s); err != nil {
			err = c.bad(s, "is not hex digits (wal2json's bytea)")
		}
	case EncodingDebezium:
		b, err = c.fromDebezium(s, f.debezium.BinaryHandlingMode, false)
	case EncodingDebeziumSchema:
		if slices.Contains(f.decoded, c.Name) {
			b = []byte(s)
		} else {
			b, err = c.fromDebezium(s, f.debezium.BinaryHandlingMode, true)
		}
	default:
		b = []byte(s)
	}
	if err != nil {
		return "", err
	}
	if c.precision > 0 && len(b) != c.precision {
		if len(b) > c.precision {
			return "", c.bad(s, "has "+strconv.Itoa(len(b))+" bytes, more than the column's "+strconv.Itoa(c.precision))
		}
		b = append(b, make([]byte, c.precision-len(b))...)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// fromBase64 reads s in padded (or, without any '=', in raw: unpadded; line breaks are ignored).
func (c *column) fromBase64(s string, padded, raw *base64.Encoding, name string) ([]byte, error) {
	b, err := padded.DecodeString(s)
	if err != nil && !strings.Contains(s, "=") {
		b, err = raw.DecodeString(s)
	}
	if err != nil {
		why := "is not " + name
		if strings.Contains(s, " ") {
			why += ": a '+' in a URL query is read as a space; write it %2B"
		}
		return nil, c.bad(s, why)
	}
	return b, nil
}

// fromLatin1 reads Canal's text of a binary value: each byte decoded as ISO-8859-1, one
// character U+0000..U+00FF.
func (c *column) fromLatin1(s string) ([]byte, error) {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r > 0xFF || r == utf8.RuneError && n == 1 {
			return nil, c.bad(s, "is not Canal's text of a binary value (one character U+0000..U+00FF per byte, ISO-8859-1)")
		}
		b = append(b, byte(r))
		i += n
	}
	return b, nil
}

// fromBytea reads PostgreSQL's text output of a bytea: "\x" and hex digits (bytea_output hex,
// the default), else the escape format (bytes 0x20..0x7E but '\' as themselves, '\\' for '\',
// "\ooo" in octal for the others), which never starts with "\x".
func (c *column) fromBytea(s string) ([]byte, error) {
	if digits, ok := strings.CutPrefix(s, `\x`); ok {
		b, err := hex.DecodeString(digits)
		if err != nil {
			return nil, c.bad(s, `is not PostgreSQL's bytea text ("\x" and pairs of hex digits)`)
		}
		return b, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] != '\\':
			b = append(b, s[i])
		case i+1 < len(s) && s[i+1] == '\\':
			b = append(b, '\\')
			i++
		case i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) && s[i+1] <= '3':
			b = append(b, (s[i+1]-'0')<<6|(s[i+2]-'0')<<3|(s[i+3]-'0'))
			i += 3
		default:
			return nil, c.bad(s, `is not PostgreSQL's bytea text ("\x" and hex digits, or the escape format)`)
		}
	}
	return b, nil
}

func isOctal(b byte) bool { return b >= '0' && b <= '7' }

// fromDebezium reads a binary value a Debezium connector wrote as a string in
// binary.handling.mode mode: base64 (bytes without a schema, base64), URL-safe base64
// (base64-url-safe) or hex. typedString says the event's schema typed the value string, which
// the connector does only in the string modes: under bytes it is refused.
func (c *column) fromDebezium(s, mode string, typedString bool) ([]byte, error) {
	switch mode {
	case BinaryBase64URLSafe:
		return c.fromBase64(s, base64.URLEncoding, base64.RawURLEncoding, "URL-safe base64 (Debezium binary.handling.mode base64-url-safe)")
	case BinaryHex:
		b, err := hex.DecodeString(s)
		if err != nil {
			return nil, c.bad(s, "is not hex (Debezium binary.handling.mode hex)")
		}
		return b, nil
	case BinaryBytes:
		if typedString {
			return nil, c.bad(s, "is typed string by the event's schema: with binary.handling.mode bytes Debezium types binary columns bytes; "+
				"set index.debezium.binary-handling-mode to the connector's mode (base64, base64-url-safe or hex), or declare the column string")
		}
	}
	return c.fromBase64(s, base64.StdEncoding, base64.RawStdEncoding, "standard base64 (Debezium binary.handling.mode "+mode+")")
}
