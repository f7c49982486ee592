package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
)

// The API's JSON is stricter than encoding/json's defaults, which accept an object that names
// the same member twice (the last one wins) and match member names to struct fields without
// regard to case. Both hide client bugs and let two parsers of one document disagree, so
// decodeBody runs these checks before decoding. It also bounds the nesting depth before any
// parser recurses into the document.

// DefaultMaxJSONDepth bounds the nesting of a request body when Config.MaxJSONDepth is 0.
const DefaultMaxJSONDepth = 64

// jsonFrame is one open object or array while checkJSONShape walks a document. It keeps only
// its own member name or element index: the JSON path of a problem is built from the stack
// when one is reported, so a deep document costs memory linear in its depth.
type jsonFrame struct {
	object    bool
	expectKey bool
	keys      map[string]struct{} // member names seen so far (objects; nil until the first)
	key       string              // the member being read (objects)
	index     int                 // the element being read (arrays)
}

// valueDone records that the container received one complete value.
func (f *jsonFrame) valueDone() {
	if f.object {
		f.expectKey = true
	} else {
		f.index++
	}
}

// jsonPath renders the path of the value the innermost of stack is reading ("$" when empty).
func jsonPath(stack []jsonFrame) string {
	var b strings.Builder
	b.WriteString("$")
	for _, f := range stack {
		if b.Len() > 200 {
			b.WriteString("...")
			break
		}
		if f.object {
			b.WriteString("." + f.key)
		} else {
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
		}
	}
	return b.String()
}

// checkJSONShape reports the first object member name that occurs twice in one object, with
// the JSON path of that object, and a document nested deeper than maxDepth objects and arrays.
// Time and memory are linear in the size of raw. A syntax error ends the check without an
// error: the decoder that runs next reports it precisely.
func checkJSONShape(raw []byte, maxDepth int) error {
	return checkJSONShapeExcept(raw, maxDepth, "")
}

// checkJSONShapeExcept is checkJSONShape leaving duplicate members inside the elements of the
// top-level array member items ("events") to the caller, which checks each element on its own
// so that one bad element fails alone. The depth bound holds everywhere.
func checkJSONShapeExcept(raw []byte, maxDepth int, items string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []jsonFrame
	done := func() {
		if len(stack) > 0 {
			stack[len(stack)-1].valueDone()
		}
	}
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or a syntax error left to the decoder
		}
		var top *jsonFrame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		if top != nil && top.object && top.expectKey {
			if tok == json.Delim('}') {
				stack = stack[:len(stack)-1]
				done()
				continue
			}
			key, _ := tok.(string)
			if _, dup := top.keys[key]; dup && !inItem(stack, items) {
				return fmt.Errorf("duplicate member %q in the object at %s; each name may occur only once",
					truncate(key), jsonPath(stack[:len(stack)-1]))
			}
			if top.keys == nil {
				top.keys = make(map[string]struct{})
			}
			top.keys[key] = struct{}{}
			top.expectKey = false
			top.key = key
			continue
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			if len(stack) >= maxDepth {
				return fmt.Errorf("JSON nesting deeper than %d levels at %s (byte %d); flatten the document",
					maxDepth, jsonPath(stack), dec.InputOffset())
			}
			object := tok == json.Delim('{')
			stack = append(stack, jsonFrame{object: object, expectKey: object})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
			done()
		default:
			done()
		}
	}
}

// jsonPathAt returns the JSON path of the value of raw that ends at or after byte offset (the
// offset encoding/json gives a value of the wrong type), "$" for the document itself.
func jsonPathAt(raw []byte, offset int64) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var stack []jsonFrame
	for {
		tok, err := dec.Token()
		if err != nil {
			return jsonPath(stack)
		}
		top := len(stack) - 1
		if top >= 0 && stack[top].object && stack[top].expectKey {
			if tok == json.Delim('}') {
				stack = stack[:top]
				if len(stack) > 0 {
					stack[len(stack)-1].valueDone()
				}
				continue
			}
			stack[top].key, _ = tok.(string)
			stack[top].expectKey = false
			continue
		}
		if dec.InputOffset() >= offset {
			return jsonPath(stack)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			stack = append(stack, jsonFrame{object: tok == json.Delim('{'), expectKey: tok == json.Delim('{')})
		case json.Delim(']'):
			stack = stack[:top]
			fallthrough
		default:
			if len(stack) > 0 {
				stack[len(stack)-1].valueDone()
			}
		}
	}
}

// inItem reports whether the innermost object of stack lies inside an element of the top-level
// array member items (never when items is empty).
func inItem(stack []jsonFrame, items string) bool {
	return items != "" && len(stack) >= 3 && stack[0].object && stack[0].key == items && !stack[1].object
}

var jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// checkMemberCase reports an object member whose name matches a field of t only when case is
// ignored (encoding/json would accept "ProjectId" for "projectId"). It follows t into nested
// structs, slices, arrays and maps; types with their own UnmarshalJSON are left to it. Members
// that match no field at all are left to DisallowUnknownFields, and malformed input to the
// decoder.
func checkMemberCase(raw []byte, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshalerType) || t.Implements(jsonUnmarshalerType) {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) != nil {
			return nil
		}
		fields := jsonFieldTypes(t)
		for name, value := range members {
			if ft, ok := fields[name]; ok {
				if err := checkMemberCase(value, ft, path+"."+name); err != nil {
					return err
				}
				continue
			}
			for field := range fields {
				if strings.EqualFold(field, name) {
					return fmt.Errorf("unknown field %q at %s: field names are case-sensitive (did you mean %q?)",
						truncate(name), path, field)
				}
			}
		}
	case reflect.Map:
		var members map[string]json.RawMessage
		if json.Unmarshal(raw, &members) != nil {
			return nil
		}
		for name, value := range members {
			if err := checkMemberCase(value, t.Elem(), path+"."+name); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return nil
		}
		for i, item := range items {
			if err := checkMemberCase(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// jsonFieldTypes maps the JSON member names of struct t (as encoding/json names them, embedded
// structs flattened) to their field types.
func jsonFieldTypes(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type)
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, typ := range jsonFieldTypes(ft) {
					if _, taken := fields[n]; !taken {
						fields[n] = typ
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}
