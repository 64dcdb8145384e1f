package otlpdecode

import (
	"errors"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/encoding/protowire"
)

// The low-level readers of SpansFromProto. They follow the decoder that
// pdata (go.opentelemetry.io/collector/pdata v1.70.0, internal/proto/
// unmarshal.go) generates, byte for byte in what they accept and reject,
// not protowire's stricter Consume* functions: the two decoders must agree
// on every input (FuzzProtoDecodersAgree), and pdata stays the reference
// for OTLP/JSON. Where they differ pdata is lenient — a tag's field number
// is truncated to 32 bits, a tenth varint byte may carry more than one
// bit. One exception: pdata cannot skip an unknown group (it stops at the
// group's first scalar field and then fails on the end-group tag), so
// SpansFromProto skips groups with protowire.ConsumeFieldValue, as
// protobuf requires; wireSkip keeps pdata's way for the differential fuzz
// target and for groups nested in a group.

var (
	errWireOverflow   = errors.New("varint overflows 64 bits")
	errWireNegative   = errors.New("negative length")
	errWireEndOfGroup = errors.New("end of group without its start")
)

// wireVarint reads a varint at pos.
func wireVarint(b []byte, pos int) (uint64, int, error) {
	if pos < len(b) && b[pos] < 0x80 {
		return uint64(b[pos]), pos + 1, nil
	}
	var v uint64
	for shift := uint(0); ; shift += 7 {
		if shift >= 64 {
			return 0, 0, errWireOverflow
		}
		if pos >= len(b) {
			return 0, 0, io.ErrUnexpectedEOF
		}
		c := b[pos]
		pos++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, pos, nil
		}
	}
}

// wireTag reads a field's tag at pos.
func wireTag(b []byte, pos int) (int32, protowire.Type, int, error) {
	tag, pos, err := wireVarint(b, pos)
	if err != nil {
		return 0, 0, 0, err
	}
	num := int32(tag >> 3) // truncated, as pdata does
	if num <= 0 {
		return 0, 0, 0, fmt.Errorf("illegal field number %d", num)
	}
	return num, protowire.Type(tag & 7), pos, nil
}

// wireLen reads a length-delimited field's length at pos and returns the
// bounds of its contents.
func wireLen(b []byte, pos int) (start, end int, err error) {
	n, pos, err := wireVarint(b, pos)
	if err != nil {
		return 0, 0, err
	}
	length := int(n)
	if length < 0 {
		return 0, 0, errWireNegative
	}
	end = pos + length
	if end < 0 || end > len(b) {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return pos, end, nil
}

// wireFixed64 reads a fixed 64-bit field at pos.
func wireFixed64(b []byte, pos int) (uint64, int, error) {
	v, n := protowire.ConsumeFixed64(b[pos:])
	if n < 0 {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return v, pos + n, nil
}

// wireFixed32 reads a fixed 32-bit field at pos.
func wireFixed32(b []byte, pos int) (uint32, int, error) {
	v, n := protowire.ConsumeFixed32(b[pos:])
	if n < 0 {
		return 0, 0, io.ErrUnexpectedEOF
	}
	return v, pos + n, nil
}

// wireSkip skips the value of an unknown field of type typ at pos, groups
// included, as protobuf requires of fields a reader does not know.
func wireSkip(b []byte, pos int, typ protowire.Type) (int, error) {
	var err error
	depth := 0
	for pos < len(b) {
		switch typ {
		case protowire.VarintType:
			_, pos, err = wireVarint(b, pos)
			return pos, err
		case protowire.Fixed64Type:
			_, pos, err = wireFixed64(b, pos)
			return pos, err
		case protowire.BytesType:
			_, pos, err = wireLen(b, pos)
			return pos, err
		case protowire.StartGroupType:
			depth++
		case protowire.EndGroupType:
			if depth == 0 {
				return 0, errWireEndOfGroup
			}
			depth--
		case protowire.Fixed32Type:
			_, pos, err = wireFixed32(b, pos)
			return pos, err
		default:
			return 0, fmt.Errorf("illegal wire type %d", typ)
		}
		if depth == 0 {
			return pos, nil
		}
		_, typ, pos, err = wireTag(b, pos)
		if err != nil {
			return 0, err
		}
	}
	return 0, io.ErrUnexpectedEOF
}

// wireWant checks a known field's wire type.
func wireWant(msg string, num int32, got, want protowire.Type) error {
	if got != want {
		return fmt.Errorf("%s field %d: wire type %d, want %d", msg, num, got, want)
	}
	return nil
}

// countSpans counts the spans of an ExportTraceServiceRequest without
// decoding them, so that the decoder allocates its span slice once. It
// stops quietly at malformed input, which the decoding proper reports.
func countSpans(b []byte) int {
	n := 0
	each(b, 1, func(rs []byte) {
		each(rs, 2, func(ss []byte) { each(ss, 2, func([]byte) { n++ }) })
		each(rs, 1000, func(ss []byte) { each(ss, 2, func([]byte) { n++ }) })
	})
	return n
}

// each calls f with the contents of every length-delimited field num of b.
func each(b []byte, num int32, f func([]byte)) {
	for pos := 0; pos < len(b); {
		n, typ, next, err := wireTag(b, pos)
		if err != nil {
			return
		}
		if n == num && typ == protowire.BytesType {
			start, end, err := wireLen(b, next)
			if err != nil {
				return
			}
			f(b[start:end])
			pos = end
			continue
		}
		if typ == protowire.StartGroupType {
			m := protowire.ConsumeFieldValue(protowire.Number(n), typ, b[next:])
			if m < 0 {
				return
			}
			pos = next + m
			continue
		}
		if pos, err = wireSkip(b, next, typ); err != nil {
			return
		}
	}
}

// fieldTypes gives a message's known fields and their wire types, one
// byte per field number from 0: 'b' length-delimited, 'v' varint, '8'
// fixed64, '4' fixed32, '-' unknown. Field numbers past its end are
// unknown.
type fieldTypes = string

// fields walks the fields of message b: a known field (in types) of the
// wrong wire type is an error, an unknown one is skipped. f, if not nil,
// gets each known field: v is a length-delimited one's contents, x a
// scalar's value. With types "" every field is known and any wire type
// is accepted (a second walk over a message already checked).
func (d *wireDecoder) fields(b []byte, msg string, f func(num int32, v []byte, x uint64) error, types fieldTypes) error {
	for pos := 0; pos < len(b); {
		num, v, x, next, known, err := d.field(b, pos, msg, types)
		if err != nil {
			return err
		}
		pos = next
		if known && f != nil {
			if err := f(num, v, x); err != nil {
				return err
			}
		}
	}
	return nil
}

// field reads the field of message b at pos, as fields walks them, and
// returns where the next one starts. known is false for a field that was
// skipped; the hot loops (a span's fields) call it directly rather than
// through fields' callback.
func (d *wireDecoder) field(b []byte, pos int, msg string, types fieldTypes) (num int32, v []byte, x uint64, next int, known bool, err error) {
	var typ protowire.Type
	num, typ, next, err = wireTag(b, pos)
	if err != nil {
		return 0, nil, 0, 0, false, err
	}
	if types != "" {
		want := byte('-')
		if int(num) < len(types) {
			want = types[num]
		}
		if want == '-' {
			next, err = d.skip(b, next, num, typ)
			return num, nil, 0, next, false, err
		}
		if wireTypeCode[typ&7] != want {
			return 0, nil, 0, 0, false, fmt.Errorf("%s field %d: wrong wire type %d", msg, num, typ)
		}
	}
	switch typ {
	case protowire.BytesType:
		var start int
		if start, next, err = wireLen(b, next); err != nil {
			return 0, nil, 0, 0, false, err
		}
		v = b[start:next]
	case protowire.VarintType:
		x, next, err = wireVarint(b, next)
	case protowire.Fixed64Type:
		x, next, err = wireFixed64(b, next)
	case protowire.Fixed32Type:
		var x32 uint32
		x32, next, err = wireFixed32(b, next)
		x = uint64(x32)
	default:
		next, err = d.skip(b, next, num, typ)
	}
	if err != nil {
		return 0, nil, 0, 0, false, err
	}
	return num, v, x, next, true, nil
}

// wireTypeCode is fieldTypes' letter for each wire type.
const wireTypeCode = "v8b--4--"

// wireID copies an id field into dst: empty means all zero, any other
// length than dst's is an error.
func wireID(dst, v []byte, what string) error {
	switch len(v) {
	case 0:
		clear(dst)
	case len(dst):
		copy(dst, v)
	default:
		return fmt.Errorf("%s: %d bytes, want %d", what, len(v), len(dst))
	}
	return nil
}

// wireTime converts an OTLP timestamp; 0 is the zero time.
func wireTime(ts uint64) time.Time {
	if ts == 0 {
		return time.Time{}
	}
	return time.Unix(0, int64(ts))
}

// pdataKindNumber maps an OTLP span kind number as pdataKind does.
func pdataKindNumber(k int32) trace.SpanKind {
	switch k {
	case 2:
		return trace.SpanKindServer
	case 3:
		return trace.SpanKindClient
	case 4:
		return trace.SpanKindProducer
	case 5:
		return trace.SpanKindConsumer
	default:
		return trace.SpanKindInternal
	}
}
