package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// appendMessageJSON appends m as a JSON object for kura's --json outputs. It follows the
// proto3 JSON mapping with proto field names (snake_case, units last), in field order,
// but it prints 64-bit integers as numbers, where protojson prints them as strings (for
// JavaScript, whose numbers hold 53 bits; only tokens are that large, and JSON itself
// bounds no number), and it prints every field, a zero as zero and an unset message as
// null, where protojson leaves out the defaults, so that a script reads "alive": false
// for a down node rather than no "alive" at all.
func appendMessageJSON(b []byte, m protoreflect.Message) ([]byte, error) {
	b = append(b, '{')
	fields := m.Descriptor().Fields()
	first := true
	for i := range fields.Len() {
		fd := fields.Get(i)
		if fd.ContainingOneof() != nil && !m.Has(fd) {
			continue // one member of a oneof is set, and only it is printed
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = strconv.AppendQuote(b, string(fd.Name()))
		b = append(b, ':')
		var err error
		switch {
		case fd.IsMap():
			return nil, fmt.Errorf("JSON output of map field %s is not supported", fd.FullName())
		case fd.IsList():
			list := m.Get(fd).List()
			b = append(b, '[')
			for j := range list.Len() {
				if j > 0 {
					b = append(b, ',')
				}
				if b, err = appendValueJSON(b, fd, list.Get(j)); err != nil {
					return nil, err
				}
			}
			b = append(b, ']')
		case fd.Message() != nil && !m.Has(fd):
			b = append(b, "null"...)
		default:
			if b, err = appendValueJSON(b, fd, m.Get(fd)); err != nil {
				return nil, err
			}
		}
	}
	return append(b, '}'), nil
}

// appendValueJSON appends one value of field fd (one element, for a list).
func appendValueJSON(b []byte, fd protoreflect.FieldDescriptor, v protoreflect.Value) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.MessageKind, protoreflect.GroupKind:
		return appendMessageJSON(b, v.Message())
	case protoreflect.BoolKind:
		return strconv.AppendBool(b, v.Bool()), nil
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind,
		protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.AppendInt(b, v.Int(), 10), nil
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind, protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.AppendUint(b, v.Uint(), 10), nil
	case protoreflect.FloatKind, protoreflect.DoubleKind:
		// JSON has no NaN or infinities: the proto3 mapping's strings stand for them.
		switch f := v.Float(); {
		case math.IsNaN(f):
			return append(b, `"NaN"`...), nil
		case math.IsInf(f, 1):
			return append(b, `"Infinity"`...), nil
		case math.IsInf(f, -1):
			return append(b, `"-Infinity"`...), nil
		}
	case protoreflect.BytesKind:
		// base64, as the proto3 mapping has it, "" for none (encoding/json's null).
		return strconv.AppendQuote(b, base64.StdEncoding.EncodeToString(v.Bytes())), nil
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			return strconv.AppendQuote(b, string(ev.Name())), nil
		}
		return strconv.AppendInt(b, int64(v.Enum()), 10), nil
	}
	// Floats and strings as encoding/json writes them.
	out, err := json.Marshal(v.Interface())
	return append(b, out...), err
}
