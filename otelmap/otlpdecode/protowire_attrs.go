package otlpdecode

import (
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// This file: SpansFromProto's attributes, each KeyValue decoded into an
// attribute.KeyValue, or for the receiver's road packed as the trace store
// keeps it (DecodePacked).

// attr decodes one KeyValue of a span and appends it to the attribute
// arena, unless its value is empty (see keyValue). The common shapes are
// written in place: this runs once per attribute received.
func (d *wireDecoder) attr(b []byte, first *int) error {
	key, str, kind, num, ok := keyValueCommon(b)
	if !ok {
		kv, keep, err := d.keyValue(b, first)
		if keep {
			d.attrs = append(d.attrs, kv)
		}
		return err
	}
	if err := d.countValue(); err != nil {
		return err
	}
	d.reserve(first)
	d.lastKey, d.lastIsStr = key, kind == 1
	if kind == 0 {
		return nil // an empty value, dropped
	}
	d.attrs = d.attrs[:len(d.attrs)+1]
	kv := &d.attrs[len(d.attrs)-1]
	kv.Key = attribute.Key(d.key(key))
	switch kind {
	case 1:
		kv.Value = attribute.StringValue(d.key(str))
	case 2:
		kv.Value = attribute.BoolValue(num != 0)
	case 3:
		kv.Value = attribute.Int64Value(int64(num))
	default:
		kv.Value = attribute.Float64Value(math.Float64frombits(num))
	}
	return nil
}

// packState is what packAttr keeps of a span's attributes: where they
// start in the packed buffer, how many were kept, and whether the first
// kept coordbench.source (otelmap.AttrSource, which Span.Attr would find)
// says the span was rebuilt from the Traceability Extension.
type packState struct {
	start                 int
	count                 uint32
	sourceSeen, extension bool
}

// packAttr is attr for a decoder that packs spans' attributes
// (packAttrs): the KeyValue is appended to packed in otelmap's packed
// encoding, unless its value is empty, as attr would have built it.
func (d *wireDecoder) packAttr(b []byte, pk *packState) error {
	key, str, kind, num, ok := keyValueCommon(b)
	if !ok {
		first := len(d.attrs)
		kv, keep, err := d.keyValue(b, &first)
		if err != nil || !keep {
			return err
		}
		d.packed.Buf = otelmap.AppendPackedAttr(d.packed.Buf, kv)
		pk.kept(kv.Key == otelmap.AttrSource, kv.Value.Type() == attribute.STRING && kv.Value.AsString() == otelmap.SourceExtension)
		return nil
	}
	if err := d.countValue(); err != nil {
		return err
	}
	d.lastKey, d.lastIsStr = key, kind == 1
	switch kind {
	case 0:
		return nil // an empty value, dropped
	case 1:
		d.packed.Buf = otelmap.AppendPackedString(d.packed.Buf, key, str)
	case 2:
		d.packed.Buf = otelmap.AppendPackedBool(d.packed.Buf, key, num != 0)
	case 3:
		d.packed.Buf = otelmap.AppendPackedInt(d.packed.Buf, key, int64(num))
	default:
		d.packed.Buf = otelmap.AppendPackedFloat(d.packed.Buf, key, math.Float64frombits(num))
	}
	pk.kept(string(key) == string(otelmap.AttrSource), kind == 1 && string(str) == otelmap.SourceExtension)
	return nil
}

// kept counts one more attribute kept; source tells whether its key is
// coordbench.source, extension whether its value is the string
// "extension".
func (pk *packState) kept(source, extension bool) {
	pk.count++
	if source && !pk.sourceSeen {
		pk.sourceSeen, pk.extension = true, extension
	}
}

// keyValue decodes one KeyValue. keep is false for an empty value, which
// is dropped as SpansFromTraces drops it. Before it returns, the arena has
// room for one more attribute after the ones from *first on (moved to a
// new chunk if need be, *first updated), so the caller's append never
// reallocates.
func (d *wireDecoder) keyValue(b []byte, first *int) (attribute.KeyValue, bool, error) {
	if err := d.countValue(); err != nil {
		return attribute.KeyValue{}, false, err
	}
	var (
		key  []byte
		kind int32 // the AnyValue field last set, 0 for none
		num  uint64
		str  []byte
		// val is the last array, map or bytes value, built when met.
		val     pcommon.Value
		hasComp bool
	)
	var err error
	if key, str, kind, num, ok := keyValueCommon(b); ok {
		return d.keyValueOf(key, str, kind, num, pcommon.Value{}, first)
	}
	err = d.fields(b, "KeyValue", func(n int32, v []byte, x uint64) error {
		switch n {
		case 1:
			key = v
		case 2:
			return d.fields(v, "AnyValue", func(n int32, v []byte, x uint64) error {
				switch n {
				case 1:
					str = v
				case 2, 3, 4, 8:
					num = x
				case 5, 6, 7:
					// Built now, into one value: a later value replaces it,
					// but pdata decodes and checks it first.
					if !hasComp {
						hasComp, val = true, pcommon.NewValueEmpty()
					}
					if err := d.fillComplex(val, n, v); err != nil {
						return err
					}
				default:
					return nil
				}
				kind = n
				return nil
			}, anyValueTypes)
		}
		return nil
	}, "-bbv")
	if err != nil {
		return attribute.KeyValue{}, false, err
	}
	return d.keyValueOf(key, str, kind, num, val, first)
}

// keyValueCommon decodes a KeyValue in the shapes SDKs and collectors
// write: a key and a value holding one string, boolean, integer or double,
// or nothing, each field once, in either order (the protobuf runtimes
// write the key first; pdata's marshaller, and so every Collector and
// Jaeger, the value first). ok is false for any other shape, which
// keyValue decodes field by field.
func keyValueCommon(b []byte) (key, str []byte, kind int32, num uint64, ok bool) {
	var v []byte
	var haveKey, haveValue bool
	for pos := 0; pos < len(b); {
		tag := b[pos]
		if tag != 0x0a && tag != 0x12 { // field 1 or 2, length-delimited
			return
		}
		var s, e int
		if pos+1 < len(b) && b[pos+1] < 0x80 { // a one-byte length, read inline
			s, e = pos+2, pos+2+int(b[pos+1])
			if e > len(b) {
				return
			}
		} else {
			var err error
			if s, e, err = wireLen(b, pos+1); err != nil {
				return
			}
		}
		if tag == 0x0a {
			if haveKey {
				return
			}
			haveKey, key = true, b[s:e]
		} else {
			if haveValue {
				return
			}
			haveValue, v = true, b[s:e]
		}
		pos = e
	}
	if !haveKey {
		return
	}
	if len(v) == 0 {
		return key, nil, 0, 0, true
	}
	switch v[0] {
	case 0x0a: // string_value
		if len(v) > 1 && v[1] < 0x80 { // a one-byte length, read inline
			if 2+int(v[1]) != len(v) {
				return
			}
			return key, v[2:], 1, 0, true
		}
		s, e, err := wireLen(v, 1)
		if err != nil || e != len(v) {
			return
		}
		return key, v[s:e], 1, 0, true
	case 0x10, 0x18: // bool_value, int_value
		x, e, err := wireVarint(v, 1)
		if err != nil || e != len(v) {
			return
		}
		return key, nil, int32(v[0] >> 3), x, true
	case 0x21: // double_value
		if len(v) != 9 {
			return
		}
		x, _, _ := wireFixed64(v, 1)
		return key, nil, 4, x, true
	}
	return
}

// keyValueOf makes the attribute of a decoded KeyValue.
func (d *wireDecoder) keyValueOf(key, str []byte, kind int32, num uint64, val pcommon.Value, first *int) (attribute.KeyValue, bool, error) {
	d.reserve(first)
	d.lastKey, d.lastIsStr = key, kind == 1
	k := attribute.Key(d.key(key))
	switch kind {
	case 5, 6, 7:
		kv, ok := pdataKeyValue(string(k), val)
		return kv, ok, nil
	case 1:
		return k.String(d.key(str)), true, nil
	case 2:
		return k.Bool(num != 0), true, nil
	case 3:
		return k.Int64(int64(num)), true, nil
	case 4:
		return k.Float64(math.Float64frombits(num)), true, nil
	}
	return attribute.KeyValue{}, false, nil // empty, or a string table index
}

const anyValueTypes = "-bvv8bbbv"
