package index

import (
	"encoding/json"
	"reflect"
)

// textRows are the rows of a Canal flat message whose values are all JSON strings or null,
// as Canal writes them. Its UnmarshalJSON reads them without reflection and refuses (with a
// *json.UnmarshalTypeError) anything else, for the caller to read the message value by value.
type textRows []map[string]*string

// errNotText is the refusal of textRows.UnmarshalJSON.
var errNotText = &json.UnmarshalTypeError{Value: "non-string value", Type: reflect.TypeFor[textRows]()}

// UnmarshalJSON implements json.Unmarshaler. b is valid JSON (encoding/json checked it).
func (r *textRows) UnmarshalJSON(b []byte) error {
	i := skipJSONSpace(b, 0)
	if i < len(b) && b[i] == 'n' {
		*r = nil
		return nil
	}
	if i >= len(b) || b[i] != '[' {
		return errNotText
	}
	rows := textRows{}
	for i = skipJSONSpace(b, i+1); i < len(b) && b[i] != ']'; {
		if b[i] != '{' {
			return errNotText
		}
		row := map[string]*string{}
		for i = skipJSONSpace(b, i+1); i < len(b) && b[i] != '}'; {
			end := jsonStringEnd(b, i)
			name, ok := jsonText(b[i:end])
			if !ok {
				return errNotText
			}
			i = skipJSONSpace(b, skipJSONSpace(b, end)+1) // past ':'
			switch {
			case i < len(b) && b[i] == '"':
				end = jsonStringEnd(b, i)
				v, ok := jsonText(b[i:end])
				if !ok {
					return errNotText
				}
				row[name] = &v
				i = end
			case i < len(b) && b[i] == 'n':
				row[name] = nil
				i += len("null")
			default:
				return errNotText
			}
			if i = skipJSONSpace(b, i); i < len(b) && b[i] == ',' {
				i = skipJSONSpace(b, i+1)
			}
		}
		rows = append(rows, row)
		if i = skipJSONSpace(b, i+1); i < len(b) && b[i] == ',' {
			i = skipJSONSpace(b, i+1)
		}
	}
	*r = rows
	return nil
}

// jsonText is the text of the JSON string q (quotes included): plainString's, else
// json.Unmarshal's.
func jsonText(q []byte) (string, bool) {
	if s, ok := plainString(q); ok {
		return s, true
	}
	var s string
	return s, json.Unmarshal(q, &s) == nil
}

// skipJSONSpace returns the index of the first non-space byte of b from i.
func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// jsonStringEnd returns the index after the JSON string starting at i of valid JSON b
// (len(b) when it is not one).
func jsonStringEnd(b []byte, i int) int {
	if i >= len(b) || b[i] != '"' {
		return len(b)
	}
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return len(b)
}
