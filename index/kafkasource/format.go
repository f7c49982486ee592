package kafkasource

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/redstate/redstate"
	"github.com/redstate/redstate/index"
)

// Top-level fields that tell the two formats apart, as bits of topFields' result.
const (
	// Debezium: the JSON converter's wrapper, or the bare envelope.
	fieldPayload = 1 << iota
	fieldOp
	fieldSource
	// Canal flat message.
	fieldData
	fieldType
	fieldIsDdl
)

// fieldNames are the names of the field bits, in bit order.
var fieldNames = [][]byte{[]byte("payload"), []byte("op"), []byte("source"), []byte("data"), []byte("type"), []byte("isDdl")}

// detectFormat says which format an event is in (index.FormatAuto): Debezium when it has
// payload, op or source; Canal when it has type with data or isDdl. It reads only the
// top-level field names (the parse that follows checks the whole event). Errors: EINVALID
// (neither, or not a JSON object).
func detectFormat(raw []byte) (string, error) {
	f, ok := topFields(raw)
	if !ok {
		return "", redstate.Errorf(redstate.EINVALID, "not a JSON object")
	}
	switch {
	case f&(fieldPayload|fieldOp|fieldSource) != 0:
		return index.FormatDebezium, nil
	case f&fieldType != 0 && f&(fieldData|fieldIsDdl) != 0:
		return index.FormatCanal, nil
	}
	return "", redstate.Errorf(redstate.EINVALID, "neither a Canal flat message (type, data) nor a Debezium event (payload, op, source)")
}

// topFields returns the field bits of raw's top-level names (matched without regard to case,
// as encoding/json matches them), skipping every value without decoding it; ok is false when
// raw is not a JSON object.
func topFields(raw []byte) (fields int, ok bool) {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return 0, false
	}
	i = skipSpace(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		return 0, skipSpace(raw, i+1) == len(raw)
	}
	for {
		end := skipString(raw, i)
		if end < 0 {
			return 0, false
		}
		name := raw[i+1 : end-1]
		if bytes.IndexByte(name, '\\') >= 0 {
			var s string
			if json.Unmarshal(raw[i:end], &s) != nil {
				return 0, false
			}
			name = []byte(s)
		}
		for b, n := range fieldNames {
			if bytes.EqualFold(name, n) {
				fields |= 1 << b
			}
		}
		i = skipSpace(raw, end)
		if i >= len(raw) || raw[i] != ':' {
			return 0, false
		}
		if i = skipValue(raw, skipSpace(raw, i+1)); i < 0 {
			return 0, false
		}
		i = skipSpace(raw, i)
		switch {
		case i < len(raw) && raw[i] == ',':
			i = skipSpace(raw, i+1)
		case i < len(raw) && raw[i] == '}':
			return fields, skipSpace(raw, i+1) == len(raw)
		default:
			return 0, false
		}
	}
}

// skipSpace returns the index of the first non-space byte of raw from i.
func skipSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the JSON string starting at i, or -1.
func skipString(raw []byte, i int) int {
	if i >= len(raw) || raw[i] != '"' {
		return -1
	}
	for i++; i < len(raw); i++ {
		switch raw[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return -1
}

// skipValue returns the index after the JSON value starting at i (strings, objects and arrays
// matched, scalars up to the next delimiter), or -1.
func skipValue(raw []byte, i int) int {
	if i >= len(raw) {
		return -1
	}
	switch raw[i] {
	case '"':
		return skipString(raw, i)
	case '{', '[':
		depth := 0
		for i < len(raw) {
			switch raw[i] {
			case '"':
				if i = skipString(raw, i); i < 0 {
					return -1
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return -1
	case ',', '}', ']', ':':
		return -1
	}
	for i < len(raw) && strings.IndexByte(",}] \t\n\r", raw[i]) < 0 {
		i++
	}
	return i
}
