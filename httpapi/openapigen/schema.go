package main

// obj is a JSON object of the document.
type obj = map[string]any

// ref is a reference to the component schema name.
func ref(name string) obj { return obj{"$ref": "#/components/schemas/" + name} }

// str, integer, number and boolean are the scalar schemas; desc adds a description.
func str(desc string) obj     { return described(obj{"type": "string"}, desc) }
func integer(desc string) obj { return described(obj{"type": "integer", "format": "int64"}, desc) }
func number(desc string) obj  { return described(obj{"type": "number"}, desc) }
func boolean(desc string) obj { return described(obj{"type": "boolean"}, desc) }

// dateTime is an RFC 3339 date-time string (Go's time.Time encoding).
func dateTime(desc string) obj {
	return described(obj{"type": "string", "format": "date-time"}, desc)
}

// nullable lets a scalar schema (one with a single "type") also be null.
func nullable(s obj) obj {
	out := obj{}
	for k, v := range s {
		out[k] = v
	}
	out["type"] = []any{s["type"], "null"}
	return out
}

// enum restricts a string schema to values.
func enum(s obj, values ...string) obj {
	s["enum"] = values
	return s
}

// array is an array of items.
func array(items obj, desc string) obj {
	return described(obj{"type": "array", "items": items}, desc)
}

// nullableArray is an array that Go encodes as null when it is nil.
func nullableArray(items obj, desc string) obj {
	return described(obj{"type": []any{"array", "null"}, "items": items}, desc)
}

// mapOf is an object whose members all have schema values.
func mapOf(values obj, desc string) obj {
	return described(obj{"type": "object", "additionalProperties": values}, desc)
}

// anyJSON is any JSON value.
func anyJSON(desc string) obj { return described(obj{}, desc) }

// described sets s's description when desc is not empty.
func described(s obj, desc string) obj {
	if desc != "" {
		s["description"] = desc
	}
	return s
}

// field is one member of an object schema.
type field struct {
	name     string
	schema   obj
	optional bool // Go's omitempty: the member may be absent
}

// object is a closed object schema (no members besides fields): the API's request decoder
// refuses unknown members and its responses are encoded from fixed Go types.
func object(desc string, fields ...field) obj {
	props := obj{}
	var required []string
	for _, f := range fields {
		props[f.name] = f.schema
		if !f.optional {
			required = append(required, f.name)
		}
	}
	s := obj{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return described(s, desc)
}

// openObject is object for a document whose producers may add members of their own, kept as
// they are (a queue message written by a legacy producer).
func openObject(desc string, fields ...field) obj {
	s := object(desc, fields...)
	s["additionalProperties"] = true
	return s
}

// req is a required member, opt an optional one.
func req(name string, s obj) field { return field{name: name, schema: s} }
func opt(name string, s obj) field { return field{name: name, schema: s, optional: true} }
