package otlpdecode

import (
	"fmt"
	"math/bits"

	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/coordbench/coordbench/otelmap"
)

// SpansFromProto decodes a protobuf OTLP ExportTraceServiceRequest
// straight into the store's Span, without pdata's intermediate tree: it
// yields exactly what SpansFromTraces yields for the same bytes decoded by
// pdata (ptraceotlp.ExportRequest.UnmarshalProto), with the same warnings,
// and rejects the bodies pdata rejects (FuzzProtoDecodersAgree holds it
// to that), but one kind: pdata cannot skip an unknown group, which this
// decoder skips as protobuf requires (see wireSkip). See SpansFromTraces
// for the mapping.
//
// Unknown fields of every wire type, groups included, are skipped. The
// deprecated instrumentation_library_spans (field 1000) are used when a
// ResourceSpans has no scope_spans, as pdata migrates them. The spans'
// strings are copied out of body into shared arenas: body may be reused
// as soon as this returns. On error no spans are returned.
func SpansFromProto(body []byte, source string) ([]otelmap.Span, []string, error) {
	return spansFromProto(body, source, false)
}

func spansFromProto(body []byte, source string, pdataGroups bool) ([]otelmap.Span, []string, error) {
	var d wireDecoder
	return d.decode(body, source, pdataGroups)
}

// decode decodes body. A decoder made to reuse its memory (NewDecoder)
// writes each call's spans, attributes and strings over the last call's:
// what one call returned is valid only until the next, and its caller
// must copy what it keeps (the store does: packed.go).
func (d *wireDecoder) decode(body []byte, source string, pdataGroups bool) ([]otelmap.Span, []string, error) {
	return d.decodeCounted(body, countSpans(body), source, pdataGroups)
}

// decodeCounted is decode for a body of n spans (countSpans).
func (d *wireDecoder) decodeCounted(body []byte, n int, source string, pdataGroups bool) ([]otelmap.Span, []string, error) {
	d.source, d.pdataGroups = source, pdataGroups
	d.warnings, d.badIDs, d.lastKey, d.lastIsStr = nil, 0, nil, false
	d.attrs, d.strs, d.attrNext, d.strNext = nil, nil, 0, 0
	d.values = 0
	if d.packAttrs {
		d.packed.Buf, d.packed.Spans = d.packed.Buf[:0], d.packed.Spans[:0]
	}
	// The intern table grows with the request, so a one-span export does
	// not pay for a large one's table. A reused table is cleared: its
	// strings point into arenas about to be written over.
	slots := min(maxInternSlots, max(minInternSlots, 1<<bits.Len(uint(len(body)/128))))
	if cap(d.interned) >= slots {
		d.interned = d.interned[:slots]
		clear(d.interned)
	} else {
		d.interned = make([]string, slots)
	}
	if d.reuse && cap(d.spans) >= n {
		d.spans = d.spans[:0]
	} else {
		d.spans = make([]otelmap.Span, 0, n)
	}
	if err := d.request(body); err != nil {
		return nil, nil, fmt.Errorf("decode protobuf ExportTraceServiceRequest: %w", err)
	}
	if d.badIDs > maxIDWarnings {
		d.warnings = append(d.warnings, fmt.Sprintf("%d more spans with an invalid trace or span id", d.badIDs-maxIDWarnings))
	}
	return d.spans, d.warnings, nil
}

// wireDecoder carries the state of one SpansFromProto call.
type wireDecoder struct {
	// reuse: the attribute and string chunks below, and spans' array, are
	// kept for the next decode (NewDecoder).
	reuse bool
	// alias: names, keys and string values point into the body, not into
	// the string arenas, and are not interned (NewDecoder).
	alias      bool
	attrChunks [][]attribute.KeyValue
	strChunks  [][]byte
	// attrNext and strNext are the next chunk to hand out in this decode.
	attrNext, strNext int
	// values counts the attribute values decoded (every KeyValue, and each
	// element of an array or map value); maxValues, when positive, bounds
	// them (ReceiverLimits.MaxAttributesPerRequest).
	values, maxValues int

	source   string
	spans    []otelmap.Span
	warnings []string
	badIDs   int
	// attrs is the current attribute chunk: its length is what is used.
	attrs []attribute.KeyValue
	// strs is the current string chunk: its length is what is used.
	strs []byte
	// interned are recent keys, names and short values (see key).
	interned []string // a power of two long
	// pdataGroups skips unknown groups as pdata v1.70.0 does (wrongly: it
	// stops at the group's first scalar), for FuzzProtoDecodersAgree only.
	pdataGroups bool
	// lastKey and lastIsStr are the key of the last KeyValue decoded and
	// whether its value is a string, kept or not: a resource's service.name
	// is its first such key's value if that is a string.
	lastKey   []byte
	lastIsStr bool
	// packAttrs: spans' attributes are written to packed in otelmap's
	// packed encoding, not built as KeyValues (Decoder.DecodePacked).
	packAttrs bool
	packed    otelmap.PackedAttrs
}

// skip skips the value of unknown field num of type typ at pos.
func (d *wireDecoder) skip(b []byte, pos int, num int32, typ protowire.Type) (int, error) {
	if typ != protowire.StartGroupType || d.pdataGroups {
		return wireSkip(b, pos, typ)
	}
	n := protowire.ConsumeFieldValue(protowire.Number(num), typ, b[pos:])
	if n < 0 {
		return 0, fmt.Errorf("field %d: group: %w", num, protowire.ParseError(n))
	}
	return pos + n, nil
}

func (d *wireDecoder) request(b []byte) error {
	for pos := 0; pos < len(b); {
		num, typ, next, err := wireTag(b, pos)
		if err != nil {
			return err
		}
		if num != 1 {
			if pos, err = d.skip(b, next, num, typ); err != nil {
				return err
			}
			continue
		}
		if err := wireWant("ExportTraceServiceRequest", num, typ, protowire.BytesType); err != nil {
			return err
		}
		start, end, err := wireLen(b, next)
		if err != nil {
			return err
		}
		if err := d.resourceSpans(b[start:end]); err != nil {
			return fmt.Errorf("resource_spans: %w", err)
		}
		pos = end
	}
	return nil
}

// resourceSpans decodes one ResourceSpans in two passes: the resource
// first, wherever it stands, so its spans can point at it; then the spans.
func (d *wireDecoder) resourceSpans(b []byte) error {
	res, scopes, err := d.resource(b)
	if err != nil {
		return err
	}
	for pos := 0; pos < len(b); {
		num, typ, next, err := wireTag(b, pos)
		if err != nil {
			return err
		}
		if num != 2 && num != 1000 {
			if pos, err = d.skip(b, next, num, typ); err != nil {
				return err
			}
			continue
		}
		start, end, _ := wireLen(b, next) // checked by resource
		if num == 2 || scopes == 0 {
			err = d.scopeSpans(b[start:end], res)
		} else {
			// Deprecated spans beside current ones: pdata drops them,
			// but only after decoding them.
			spans, warnings, badIDs := len(d.spans), len(d.warnings), d.badIDs
			packedSpans, packedBuf := len(d.packed.Spans), len(d.packed.Buf)
			err = d.scopeSpans(b[start:end], res)
			d.spans, d.warnings, d.badIDs = d.spans[:spans], d.warnings[:warnings], badIDs
			d.packed.Spans, d.packed.Buf = d.packed.Spans[:packedSpans], d.packed.Buf[:packedBuf]
		}
		if err != nil {
			return fmt.Errorf("scope_spans: %w", err)
		}
		pos = end
	}
	return nil
}

// resource decodes the resource (field 1, merged when repeated) of a
// ResourceSpans, checks the wire types of its other fields, and counts its
// scope_spans.
func (d *wireDecoder) resource(b []byte) (*otelmap.Resource, int, error) {
	var (
		scopes, kvs int
		service     string
		serviceSeen bool
	)
	first := len(d.attrs)
	for pos := 0; pos < len(b); {
		num, typ, next, err := wireTag(b, pos)
		if err != nil {
			return nil, 0, err
		}
		switch num {
		case 1, 2, 3, 1000:
			if err := wireWant("ResourceSpans", num, typ, protowire.BytesType); err != nil {
				return nil, 0, err
			}
		default:
			if pos, err = d.skip(b, next, num, typ); err != nil {
				return nil, 0, err
			}
			continue
		}
		start, end, err := wireLen(b, next)
		if err != nil {
			return nil, 0, err
		}
		pos = end
		switch num {
		case 2:
			scopes++
		case 1:
			err = d.fields(b[start:end], "Resource", func(num int32, v []byte, x uint64) error {
				switch num {
				case 1:
					kv, keep, err := d.keyValue(v, &first)
					if err != nil {
						return err
					}
					kvs++
					if !serviceSeen && string(d.lastKey) == string(otelmap.AttrServiceName) {
						serviceSeen = true
						if d.lastIsStr {
							service = kv.Value.AsString()
						}
					}
					if keep {
						d.attrs = append(d.attrs, kv)
					}
				case 3:
					return d.entityRef(v)
				}
				return nil
			}, "-bvb")
			if err != nil {
				return nil, 0, fmt.Errorf("resource: %w", err)
			}
		}
	}
	if kvs == 0 {
		return otelmap.EmptyResource(), scopes, nil
	}
	return &otelmap.Resource{ServiceName: service, Attrs: d.carve(first)}, scopes, nil
}

// entityRef checks a Resource's EntityRef, which the store does not keep.
func (d *wireDecoder) entityRef(b []byte) error {
	return d.fields(b, "EntityRef", nil, "-bbbb")
}

func (d *wireDecoder) scopeSpans(b []byte, res *otelmap.Resource) error {
	return d.fields(b, "ScopeSpans", func(num int32, v []byte, x uint64) error {
		switch num {
		case 1:
			return d.scope(v)
		case 2:
			return d.span(v, res)
		}
		return nil
	}, "-bbb")
}

// scope checks an InstrumentationScope, which the store does not keep.
func (d *wireDecoder) scope(b []byte) error {
	return d.fields(b, "InstrumentationScope", func(num int32, v []byte, x uint64) error {
		if num == 3 {
			first := len(d.attrs)
			_, _, err := d.keyValue(v, &first)
			return err
		}
		return nil
	}, "-bbbv")
}

// spanFieldTypes are the wire types of Span's fields.
const spanFieldTypes = "-bbbbbv88bvbvbvb4"

// span decodes one Span in two passes: its own fields and attributes
// first, then, if it has any, its events and links, so that each one's
// attributes are contiguous in the arena.
func (d *wireDecoder) span(b []byte, res *otelmap.Resource) error {
	d.spans = append(d.spans, otelmap.Span{Resource: res, Source: d.source})
	sp := &d.spans[len(d.spans)-1]
	var (
		start, end          uint64
		kind, code          uint64
		nEvents, nLinks     int
		name, statusMessage []byte
	)
	first := len(d.attrs)
	pk := packState{start: len(d.packed.Buf)}
	// The fields are walked here rather than through fields' callback:
	// this loop runs once per field of every span received.
	for pos := 0; pos < len(b); {
		// The fields every span has, with a one-byte tag and length (or
		// value), are read inline; any other field, or one of these in
		// another shape, by field, which reads them the same way.
		if pos+1 < len(b) && b[pos+1] < 0x80 {
			var err error
			switch l := int(b[pos+1]); b[pos] {
			case 0x4a: // attributes, the most frequent
				if e := pos + 2 + l; e <= len(b) {
					if d.packAttrs {
						err = d.packAttr(b[pos+2:e], &pk)
					} else {
						err = d.attr(b[pos+2:e], &first)
					}
					if err != nil {
						return fmt.Errorf("span: %w", err)
					}
					pos = e
					continue
				}
			case 0x0a, 0x12, 0x22: // trace_id, span_id, parent_span_id
				if e := pos + 2 + l; e <= len(b) {
					dst, what := sp.TraceID[:], "trace_id"
					if b[pos] == 0x12 {
						dst, what = sp.SpanID[:], "span_id"
					} else if b[pos] == 0x22 {
						dst, what = sp.ParentSpanID[:], "parent_span_id"
					}
					if err = wireID(dst, b[pos+2:e], what); err != nil {
						return fmt.Errorf("span: %w", err)
					}
					pos = e
					continue
				}
			case 0x2a: // name
				if e := pos + 2 + l; e <= len(b) {
					name = b[pos+2 : e]
					pos = e
					continue
				}
			case 0x30: // kind
				kind = uint64(l)
				pos += 2
				continue
			}
		}
		num, v, x, next, known, err := d.field(b, pos, "Span", spanFieldTypes)
		if err != nil {
			return fmt.Errorf("span: %w", err)
		}
		pos = next
		if !known {
			continue
		}
		switch num {
		case 1:
			err = wireID(sp.TraceID[:], v, "trace_id")
		case 2:
			err = wireID(sp.SpanID[:], v, "span_id")
		case 4:
			err = wireID(sp.ParentSpanID[:], v, "parent_span_id")
		case 5:
			name = v
		case 6:
			kind = x
		case 7:
			start = x
		case 8:
			end = x
		case 9:
			if d.packAttrs {
				err = d.packAttr(v, &pk)
			} else {
				err = d.attr(v, &first)
			}
		case 11:
			nEvents++
		case 13:
			nLinks++
		case 15:
			err = d.fields(v, "Status", func(num int32, v []byte, x uint64) error {
				if num == 2 {
					statusMessage = v
				} else if num == 3 {
					code = x
				}
				return nil
			}, "--bv")
		}
		if err != nil {
			return fmt.Errorf("span: %w", err)
		}
	}
	if d.packAttrs {
		d.packed.Spans = append(d.packed.Spans, otelmap.PackedSpanAttrs{Start: uint32(pk.start), End: uint32(len(d.packed.Buf)), Count: pk.count})
	} else {
		sp.Attrs = d.carve(first)
	}
	sp.Name = d.key(name)
	sp.Kind = pdataKindNumber(int32(kind))
	sp.Start, sp.End = wireTime(start), wireTime(end)
	if int32(code) == 2 { // STATUS_CODE_ERROR
		sp.StatusError = true
		sp.StatusMessage = d.str(statusMessage)
	}
	if nEvents > 0 || nLinks > 0 {
		if err := d.eventsAndLinks(b, sp, nEvents, nLinks); err != nil {
			return fmt.Errorf("span: %w", err)
		}
	}
	if d.packAttrs {
		if pk.extension {
			sp.Source = otelmap.SourceExtension
		}
	} else if v, ok := sp.Attr(otelmap.AttrSource); ok && v.Type() == attribute.STRING && v.AsString() == otelmap.SourceExtension {
		sp.Source = otelmap.SourceExtension
	}
	if !sp.TraceID.IsValid() || !sp.SpanID.IsValid() {
		d.badIDs++
		if d.badIDs <= maxIDWarnings {
			d.warnings = append(d.warnings, fmt.Sprintf("span %q (trace id %s, span id %s): invalid trace or span id",
				sp.Name, sp.TraceID, sp.SpanID))
		}
	}
	return nil
}

func (d *wireDecoder) eventsAndLinks(b []byte, sp *otelmap.Span, nEvents, nLinks int) error {
	det := sp.EnsureDetail() // the caller has seen at least one event or link
	if nEvents > 0 {
		det.Events = make([]otelmap.Event, 0, nEvents)
	}
	if nLinks > 0 {
		det.Links = make([]otelmap.Link, 0, nLinks)
	}
	return d.fields(b, "Span", func(num int32, v []byte, x uint64) error {
		switch num {
		case 11:
			var e otelmap.Event
			var name []byte
			var ts uint64
			first := len(d.attrs)
			err := d.fields(v, "Event", func(num int32, v []byte, x uint64) error {
				switch num {
				case 1:
					ts = x
				case 2:
					name = v
				case 3:
					kv, keep, err := d.keyValue(v, &first)
					if keep {
						d.attrs = append(d.attrs, kv)
					}
					return err
				}
				return nil
			}, "-8bbv")
			if err != nil {
				return fmt.Errorf("event: %w", err)
			}
			e.Name, e.Time, e.Attrs = d.str(name), wireTime(ts), d.carve(first)
			det.Events = append(det.Events, e)
		case 13:
			var l otelmap.Link
			first := len(d.attrs)
			err := d.fields(v, "Link", func(num int32, v []byte, x uint64) error {
				switch num {
				case 1:
					return wireID(l.TraceID[:], v, "trace_id")
				case 2:
					return wireID(l.SpanID[:], v, "span_id")
				case 4:
					kv, keep, err := d.keyValue(v, &first)
					if keep {
						d.attrs = append(d.attrs, kv)
					}
					return err
				}
				return nil
			}, "-bbbbv4")
			if err != nil {
				return fmt.Errorf("link: %w", err)
			}
			l.Attrs = d.carve(first)
			det.Links = append(det.Links, l)
		}
		return nil
	}, "")
}
