package otlpdecode

import (
	"bytes"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/internal/tracegen"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/internal/otlptest"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// checkPackerAgrees packs batches, in turn, into one Held per trace two
// ways: EachSpan's spans through Batch.Add (the connector's road before
// the Packer) and the Packer straight from pdata; with a Dict and
// without. Every span must meet the same outcome, and every trace hold
// the same bytes (Held.AppendPacked: ids, records, resources and details
// counted), the Dicts the same words.
func checkPackerAgrees(t testing.TB, batches []ptrace.Traces) {
	t.Helper()
	checkPackerAgreesFrom(t, batches, otelmap.SourceOTLP)
}

// checkPackerAgreesFrom is checkPackerAgrees with spans of source.
func checkPackerAgreesFrom(t testing.TB, batches []ptrace.Traces, source string) {
	t.Helper()
	for _, withDict := range []bool{false, true} {
		var dicts [2]*tracestore.Dict
		if withDict {
			dicts = [2]*tracestore.Dict{tracestore.NewDict(), tracestore.NewDict()}
		}
		held := [2]map[trace.TraceID]*tracestore.Held{{}, {}}
		var order []trace.TraceID
		get := func(road int, id trace.TraceID) *tracestore.Held {
			h := held[road][id]
			if h == nil {
				h = tracestore.NewHeld(dicts[road])
				held[road][id] = h
				if road == 0 {
					order = append(order, id)
				}
			}
			return h
		}
		var outcomes [2][]tracestore.AddOutcome
		var b [2]tracestore.Batch
		p := NewPacker(source)
		for _, td := range batches {
			EachSpan(td, source, func(sp *otelmap.Span) {
				if sp.TraceID.IsValid() && sp.SpanID.IsValid() {
					outcomes[0] = append(outcomes[0], b[0].Add(get(0, sp.TraceID), sp))
				}
			})
			b[0].Commit()
			for _, rs := range td.ResourceSpans().All() {
				res := p.Resource(rs.Resource())
				for _, ss := range rs.ScopeSpans().All() {
					for _, ps := range ss.Spans().All() {
						id, spanID := trace.TraceID(ps.TraceID()), trace.SpanID(ps.SpanID())
						if id.IsValid() && spanID.IsValid() {
							var sp otelmap.Span
							attrs, n := p.Span(ps, res, &sp)
							outcomes[1] = append(outcomes[1], b[1].AddWith(get(1, id), &sp, n, func(w *tracestore.AttrWriter) { p.WriteAttrs(w, attrs) }))
						}
					}
				}
			}
			b[1].Commit()
		}
		if fmt.Sprint(outcomes[0]) != fmt.Sprint(outcomes[1]) {
			t.Fatalf("dict %v: Batch.Add's outcomes %v, the Packer's %v", withDict, outcomes[0], outcomes[1])
		}
		if len(held[0]) != len(held[1]) {
			t.Fatalf("dict %v: %d traces through Batch.Add, %d through the Packer", withDict, len(held[0]), len(held[1]))
		}
		for _, id := range order {
			want, got := held[0][id].AppendPacked(nil), held[1][id].AppendPacked(nil)
			if !bytes.Equal(want, got) {
				t.Fatalf("dict %v, trace %s: the Packer packed\n%x\nBatch.Add\n%x", withDict, id, got, want)
			}
			if w, g := otlptest.SpansTextOf(held[0][id].Spans(id), false), otlptest.SpansTextOf(held[1][id].Spans(id), false); w != g {
				t.Fatalf("dict %v, trace %s: the Packer's spans unpack\n%s\nBatch.Add's\n%s", withDict, id, g, w)
			}
		}
		if withDict {
			wk, wn := dicts[0].Len()
			gk, gn := dicts[1].Len()
			if wk != gk || wn != gn {
				t.Fatalf("dict words: the Packer's %d keys, %d names; Batch.Add's %d, %d", gk, gn, wk, wn)
			}
		}
	}
}

// TestPackerAgreesOnTheCorpus: the framework captures (every one a batch,
// and all of them again as a second round of batches: spans held
// already), the seeds of the decoders' fuzz target, the generated
// traces of `make bench-collector`, and edgeCaseTraces.
func TestPackerAgreesOnTheCorpus(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "assemble", "testdata", "frameworks", "*.otlp.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("captures: %v", err)
	}
	sort.Strings(files)
	var captures []ptrace.Traces
	for _, f := range files {
		tds, err := ReadOTLPJSONFile(f)
		if err != nil {
			t.Fatal(err)
		}
		captures = append(captures, tds...)
	}
	checkPackerAgrees(t, append(captures, captures...))
	var seeds []ptrace.Traces
	for _, body := range protoSeeds(t) {
		if td, err := decodeTraces(body, FormatProtobuf); err == nil {
			seeds = append(seeds, td)
		}
	}
	checkPackerAgrees(t, seeds)
	shape := tracegen.Shape{Requests: 3, SpansPerRequest: 500, SpansPerTrace: 50, OpenTraces: 20}
	var generated []ptrace.Traces
	for r := range shape.Requests {
		generated = append(generated, tracegen.Request(shape, r))
	}
	checkPackerAgrees(t, generated)
	checkPackerAgrees(t, []ptrace.Traces{edgeCaseTraces(), edgeCaseTraces()})
	// Keys twice in one span (pcommon.Map's Put replaces; the wire and
	// OTLP/JSON keep both): the first coordbench.source empty, the second
	// the extension's, or the other way round.
	dup, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[
		{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060708","name":"a","attributes":[
			{"key":"coordbench.source","value":{}},{"key":"coordbench.source","value":{"stringValue":"extension"}},
			{"key":"k","value":{"stringValue":"a long enough value"}},{"key":"k","value":{"stringValue":"a long enough value"}}]},
		{"traceId":"0102030405060708090a0b0c0d0e0f10","spanId":"0102030405060709","name":"b","attributes":[
			{"key":"coordbench.source","value":{"stringValue":"otlp"}},{"key":"coordbench.source","value":{"stringValue":"extension"}}]}
	]}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := dup.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().Len(); got != 4 {
		t.Fatalf("the duplicate keys' premise: %d attributes, want 4", got)
	}
	checkPackerAgrees(t, []ptrace.Traces{dup})
	// A source written out in the record (not one of the codes): the
	// extension's mark is looked for before the attributes are written.
	for _, source := range []string{"", otelmap.SourceInProcess, otelmap.SourceExtension, "a source of its own"} {
		checkPackerAgreesFrom(t, []ptrace.Traces{dup, edgeCaseTraces()}, source)
	}
}

// edgeCaseTraces are spans whose attributes the two roads could pack
// apart: coordbench.source set after an empty value of that key, or
// twice, or as another type; 128 and more attributes, some empty (the
// count takes two bytes); every value type; links and events; error
// status; zero and out-of-range timestamps; long keys and names (past
// the Dict's words), values repeated within a span, a trace and across
// traces (value references); a duplicate span id in the batch.
func edgeCaseTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "edge")
	ss := rs.ScopeSpans().AppendEmpty()
	long := strings.Repeat("k", 200)
	n := byte(0)
	add := func(trace byte, fill func(sp ptrace.Span, m pcommon.Map)) {
		n++
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{0xed, trace})
		sp.SetSpanID(pcommon.SpanID{0xed, n})
		sp.SetName(fmt.Sprintf("edge %d", n))
		sp.SetStartTimestamp(pcommon.Timestamp(1_700_000_000_000_000_000 + uint64(n)))
		sp.SetEndTimestamp(pcommon.Timestamp(1_700_000_001_000_000_000 + uint64(n)))
		fill(sp, sp.Attributes())
	}
	add(1, func(_ ptrace.Span, m pcommon.Map) {
		m.PutEmpty(string(otelmap.AttrSource))
		m.PutStr("a", "the same long value")
	})
	add(1, func(_ ptrace.Span, m pcommon.Map) {
		m.PutStr(string(otelmap.AttrSource), otelmap.SourceExtension)
		m.PutStr("conversation", "the same long value")
		m.PutStr("conversation.again", "the same long value")
	})
	add(1, func(_ ptrace.Span, m pcommon.Map) {
		m.PutInt(string(otelmap.AttrSource), 3)
		m.PutStr("conversation", "the same long value")
	})
	add(2, func(_ ptrace.Span, m pcommon.Map) {
		m.PutStr("conversation", "the same long value") // another trace: held again
		m.PutEmptySlice(string(otelmap.AttrSource)).AppendEmpty().SetStr(otelmap.SourceExtension)
	})
	add(2, func(sp ptrace.Span, m pcommon.Map) {
		for i := range 140 {
			switch i % 7 {
			case 0:
				m.PutEmpty(fmt.Sprintf("empty.%d", i))
			case 1:
				m.PutInt(fmt.Sprintf("int.%d", i), int64(i)*-1_000_003)
			case 2:
				m.PutDouble(fmt.Sprintf("double.%d", i), math.Float64frombits(0x7ff8_0000_0000_0001+uint64(i)))
			case 3:
				m.PutBool(fmt.Sprintf("bool.%d", i), i%2 == 0)
			case 4:
				m.PutEmptyBytes(fmt.Sprintf("bytes.%d", i)).FromRaw([]byte{1, 2, byte(i)})
			case 5:
				mm := m.PutEmptyMap(fmt.Sprintf("map.%d", i))
				mm.PutStr("x", "y")
				mm.PutInt("n", int64(i))
			default:
				s := m.PutEmptySlice(fmt.Sprintf("slice.%d", i))
				s.AppendEmpty().SetStr("one")
				if i%2 == 0 {
					s.AppendEmpty().SetInt(2) // mixed: JSON text
				} else {
					s.AppendEmpty().SetStr("two")
				}
			}
		}
		m.PutStr(long, "a value under a key longer than the Dict's words")
		for _, typ := range []func(pcommon.Slice){
			func(s pcommon.Slice) { s.AppendEmpty().SetInt(1); s.AppendEmpty().SetInt(-2) },
			func(s pcommon.Slice) { s.AppendEmpty().SetDouble(1.5) },
			func(s pcommon.Slice) { s.AppendEmpty().SetBool(true); s.AppendEmpty().SetBool(false) },
			func(pcommon.Slice) {},
		} {
			typ(m.PutEmptySlice(fmt.Sprintf("typed.%d", m.Len())))
		}
		sp.SetName(strings.Repeat("n", 300))
		sp.Status().SetCode(ptrace.StatusCodeError)
		sp.Status().SetMessage("it failed")
		sp.SetStartTimestamp(0)
		sp.SetEndTimestamp(pcommon.Timestamp(math.MaxUint64))
		sp.SetKind(ptrace.SpanKindConsumer)
		l := sp.Links().AppendEmpty()
		l.SetTraceID(pcommon.TraceID{1})
		l.SetSpanID(pcommon.SpanID{2})
		l.Attributes().PutStr("link", "attr")
		e := sp.Events().AppendEmpty()
		e.SetName("event")
		e.SetTimestamp(5)
		e.Attributes().PutStr("event.attr", "the same long value")
	})
	add(2, func(_ ptrace.Span, m pcommon.Map) {
		for i := range 128 {
			m.PutStr(fmt.Sprintf("exactly.%d", i), "v")
		}
	})
	add(2, func(_ ptrace.Span, m pcommon.Map) {
		for i := range 129 {
			if i == 0 {
				m.PutEmpty("dropped")
				continue
			}
			m.PutStr(fmt.Sprintf("exactly.%d", i), "the same long value")
		}
	})
	add(3, func(sp ptrace.Span, m pcommon.Map) {
		sp.SetSpanID(pcommon.SpanID{0xed, 1}) // another trace's id: taken
		sp.Events().AppendEmpty().SetName("only an event")
	})
	add(3, func(sp ptrace.Span, m pcommon.Map) {
		sp.SetSpanID(pcommon.SpanID{0xed, n - 1}) // a duplicate within the trace
		m.PutStr("dup", "refused")
	})
	return td
}
