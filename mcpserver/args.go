package mcpserver

import (
	"bytes"
	"encoding"
	"encoding/json"
	"math"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// An argPlan is what a tool's input schema requires, in the few shapes the tools' inputs
// use, checked on the raw arguments without decoding them: the object's keys, each
// value's JSON type, the range of the integers (the Go field's), the required keys.
// decodeArguments asks it first: when it accepts, the arguments go straight into the
// input struct (one decoding, no map, no schema walk); anything it does not accept takes
// the schema's path, which gives the error. So it never makes the validation more
// lenient, as long as accepts only accepts arguments the schema accepts and the struct
// decodes (TestArgPlanAgreesWithSchema, FuzzArgPlan); it need not accept them all.
type argPlan struct {
	fields []argField
}

type argKind uint8

const (
	argString     argKind = iota // "type": "string"
	argBool                      // "type": "boolean"
	argInt                       // "type": "integer", a signed Go integer
	argStringList                // "type": "array", "items": {"type": "string"}
	argStringMap                 // "type": "object", "additionalProperties": {"type": "string"}
)

type argField struct {
	name     string
	kind     argKind
	min, max int64 // argInt: the Go type's range
	required bool
}

// maxPlanFields bounds the properties a plan checks (one bit each for duplicates).
const maxPlanFields = 64

// newArgPlan returns the plan of schema s, the input schema derived from t (a struct),
// or nil when s or t has anything the plan does not check: then every call of the tool
// takes the schema's path.
func newArgPlan(s *jsonschema.Schema, t reflect.Type) *argPlan {
	if s == nil || t.Kind() != reflect.Struct || s.Type != "object" || !isFalseSchema(s.AdditionalProperties) ||
		len(s.Properties) > maxPlanFields {
		return nil
	}
	rest := *s
	rest.Type, rest.Description, rest.Properties, rest.Required, rest.AdditionalProperties = "", "", nil, nil, nil
	rest.PropertyOrder = nil // the order of the properties when the schema is written
	if !reflect.ValueOf(rest).IsZero() {
		return nil
	}
	p := &argPlan{}
	for _, f := range reflect.VisibleFields(t) { // in the struct's order
		if f.Anonymous || !f.IsExported() {
			return nil
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || name == "" || strings.Contains(opts, "string") || p.index([]byte(name)) >= 0 {
			return nil
		}
		af, ok := planField(name, s.Properties[name], f.Type)
		if !ok {
			return nil
		}
		p.fields = append(p.fields, af)
	}
	if len(p.fields) != len(s.Properties) {
		return nil
	}
	for _, r := range s.Required {
		i := p.index([]byte(r))
		if i < 0 {
			return nil
		}
		p.fields[i].required = true
	}
	return p
}

// planField returns the check of one property of schema s decoding into a field of
// type t.
func planField(name string, s *jsonschema.Schema, t reflect.Type) (argField, bool) {
	if s == nil || decodesItself(t) {
		return argField{}, false
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
		if decodesItself(t) {
			return argField{}, false
		}
	}
	rest := *s
	rest.Type, rest.Description, rest.Items, rest.AdditionalProperties = "", "", nil, nil
	if !reflect.ValueOf(rest).IsZero() {
		return argField{}, false
	}
	f := argField{name: name}
	switch {
	case s.Type == "string" && s.Items == nil && s.AdditionalProperties == nil && t.Kind() == reflect.String:
		f.kind = argString
	case s.Type == "boolean" && s.Items == nil && s.AdditionalProperties == nil && t.Kind() == reflect.Bool:
		f.kind = argBool
	case s.Type == "integer" && s.Items == nil && s.AdditionalProperties == nil && t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		f.kind = argInt
		bits := t.Bits()
		f.min, f.max = math.MinInt64>>(64-bits), math.MaxInt64>>(64-bits)
	case s.Type == "array" && s.AdditionalProperties == nil && stringSchema(s.Items) &&
		t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.String && !decodesItself(t.Elem()):
		f.kind = argStringList
	case s.Type == "object" && s.Items == nil && stringSchema(s.AdditionalProperties) &&
		t.Kind() == reflect.Map && t.Key().Kind() == reflect.String && t.Elem().Kind() == reflect.String &&
		!decodesItself(t.Key()) && !decodesItself(t.Elem()):
		f.kind = argStringMap
	default:
		return argField{}, false
	}
	return f, true
}

// stringSchema reports whether s is {"type": "string"} (with a description at most).
func stringSchema(s *jsonschema.Schema) bool {
	if s == nil || s.Type != "string" {
		return false
	}
	rest := *s
	rest.Type, rest.Description = "", ""
	return reflect.ValueOf(rest).IsZero()
}

// isFalseSchema reports whether s is the schema that accepts nothing ({"not": {}}).
func isFalseSchema(s *jsonschema.Schema) bool {
	if s == nil || s.Not == nil || !reflect.ValueOf(*s.Not).IsZero() {
		return false
	}
	rest := *s
	rest.Not = nil
	return reflect.ValueOf(rest).IsZero()
}

// decodesItself reports whether encoding/json decodes a t by a method of its own.
func decodesItself(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	return t.Implements(reflect.TypeFor[json.Unmarshaler]()) || pt.Implements(reflect.TypeFor[json.Unmarshaler]()) ||
		t.Implements(reflect.TypeFor[encoding.TextUnmarshaler]()) || pt.Implements(reflect.TypeFor[encoding.TextUnmarshaler]())
}

func (p *argPlan) index(key []byte) int {
	for i := range p.fields {
		if p.fields[i].name == string(key) {
			return i
		}
	}
	return -1
}

// accepts reports whether the schema accepts the arguments raw and encoding/json decodes
// them into the tool's input: an object whose keys are the properties, each once and
// written without escapes, every value of its property's type (no null), every integer
// written as one (no fraction or exponent) within the range of its field, every required
// property present. False says nothing: the schema's path decides.
func (p *argPlan) accepts(raw []byte) bool {
	if p == nil {
		return false
	}
	var seen uint64
	ok := members(raw, func(key, v []byte) bool {
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		i := p.index(key)
		if i < 0 || seen&(1<<i) != 0 {
			return false
		}
		seen |= 1 << i
		f := &p.fields[i]
		switch f.kind {
		case argString:
			return len(v) > 0 && v[0] == '"'
		case argBool:
			return string(v) == "true" || string(v) == "false"
		case argInt:
			n, ok := parseInt(v)
			return ok && n >= f.min && n <= f.max
		case argStringList:
			return elements(v, func(e []byte) bool { return len(e) > 0 && e[0] == '"' })
		case argStringMap:
			return members(v, func(_, e []byte) bool { return len(e) > 0 && e[0] == '"' })
		}
		return false
	})
	if !ok {
		return false
	}
	for i := range p.fields {
		if p.fields[i].required && seen&(1<<i) == 0 {
			return false
		}
	}
	return true
}

// parseInt parses a JSON number written as an integer (digits, an optional minus; no
// fraction or exponent) that fits an int64.
func parseInt(v []byte) (int64, bool) {
	neg := len(v) > 0 && v[0] == '-'
	if neg {
		v = v[1:]
	}
	if len(v) == 0 || len(v) > 19 {
		return 0, false
	}
	var n uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0') // 19 digits fit a uint64
	}
	switch {
	case neg && n <= 1<<63:
		return int64(-n), true
	case !neg && n <= math.MaxInt64:
		return int64(n), true
	}
	return 0, false
}
