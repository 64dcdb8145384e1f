package otlpdecode

import (
	"math"
	"slices"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// Arrays, maps and byte strings are rare in spans and SpansFromTraces
// turns most of them into text (pcommon.Value.AsString: JSON, base64), so
// SpansFromProto builds them as pdata values and lets pdata say what they
// become: one definition of that text, not two. Their fields are merged as
// protobuf merges a repeated singular message field (and as pdata does):
// the last value set wins, and a later array or map replaces an earlier
// one rather than extending it.

// fillComplex sets dst to the array (field 5), map (6) or bytes (7) value
// whose encoding is v.
func (d *wireDecoder) fillComplex(dst pcommon.Value, field int32, v []byte) error {
	switch field {
	case 5:
		s := dst.SetEmptySlice()
		return d.fields(v, "ArrayValue", func(num int32, v []byte, _ uint64) error {
			if err := d.countValue(); err != nil {
				return err
			}
			return d.fillAny(s.AppendEmpty(), [][]byte{v})
		}, "-b")
	case 6:
		m := dst.SetEmptyMap()
		return d.fields(v, "KeyValueList", func(num int32, v []byte, _ uint64) error {
			if err := d.countValue(); err != nil {
				return err
			}
			return d.fillKeyValue(m, v)
		}, "-b")
	default:
		dst.SetEmptyBytes().FromRaw(slices.Clone(v))
		return nil
	}
}

// fillKeyValue puts the KeyValue encoded in b into m. A key met twice
// keeps its last value, which is what pdata's AsString shows of a map
// with duplicate keys.
func (d *wireDecoder) fillKeyValue(m pcommon.Map, b []byte) error {
	var key []byte
	var values [][]byte
	err := d.fields(b, "KeyValue", func(num int32, v []byte, _ uint64) error {
		switch num {
		case 1:
			key = v
		case 2:
			values = append(values, v)
		}
		return nil
	}, "-bbv")
	if err != nil {
		return err
	}
	return d.fillAny(m.PutEmpty(string(key)), values)
}

// fillAny sets dst (empty) to the AnyValue encoded in parts, merged. Each
// value met is built in dst, replacing the one before, so that every one
// is checked as pdata checks it, and nested arrays cost their size once.
func (d *wireDecoder) fillAny(dst pcommon.Value, parts [][]byte) error {
	for _, part := range parts {
		err := d.fields(part, "AnyValue", func(num int32, v []byte, x uint64) error {
			return d.setAny(dst, num, v, x)
		}, anyValueTypes)
		if err != nil {
			return err
		}
	}
	return nil
}

// setAny sets dst to field num of an AnyValue.
func (d *wireDecoder) setAny(dst pcommon.Value, num int32, v []byte, x uint64) error {
	switch num {
	case 1:
		dst.SetStr(string(v))
	case 2:
		dst.SetBool(x != 0)
	case 3:
		dst.SetInt(int64(x))
	case 4:
		dst.SetDouble(math.Float64frombits(x))
	case 5, 6, 7:
		return d.fillComplex(dst, num, v)
	default: // a string table index (8), which pdata shows as empty
		_ = dst.FromRaw(nil) // cannot fail for nil
	}
	return nil
}
