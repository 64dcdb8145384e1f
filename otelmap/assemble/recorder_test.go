package assemble_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/sdkbridge"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// TestRecorderConcurrentEnds: spans ended on many goroutines at once all
// arrive, and assembly may read the store meanwhile (run with -race).
func TestRecorderConcurrentEnds(t *testing.T) {
	store := tracestore.NewStore(tracestore.Limits{})
	tps := make([]*sdktrace.TracerProvider, 3)
	for i := range tps {
		tps[i] = sdktrace.NewTracerProvider(
			sdktrace.WithSpanProcessor(sdkbridge.NewRecorder(store)),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", fmt.Sprintf("svc%d", i)))),
		)
		defer func() { _ = tps[i].Shutdown(context.Background()) }()
	}
	ctx, root := tps[0].Tracer("t").Start(context.Background(), "invoke_agent root",
		trace.WithAttributes(invokeAttrs("root")...))
	id := root.SpanContext().TraceID()

	const workers, perWorker = 8, 100
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readers sync.WaitGroup
	readers.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				assemble.Trace(id, store.Spans(id))
			}
		}
	})
	for w := range workers {
		wg.Go(func() {
			tr := tps[w%len(tps)].Tracer("t")
			agent := fmt.Sprintf("agent%d", w)
			for range perWorker {
				actx, inv := tr.Start(ctx, "invoke_agent "+agent, trace.WithAttributes(invokeAttrs(agent)...))
				_, ch := tr.Start(actx, "chat m", trace.WithSpanKind(trace.SpanKindClient),
					trace.WithAttributes(otelmap.AttrGenAIOperationName.String(otelmap.OpChat)))
				ch.End()
				inv.End()
			}
		})
	}
	wg.Wait()
	root.End()
	close(stop)
	readers.Wait()

	spans := store.Spans(id)
	if want := 1 + 2*workers*perWorker; len(spans) != want {
		t.Fatalf("store holds %d spans, want %d", len(spans), want)
	}
	td := assemble.Trace(id, spans)
	if len(td.Steps) != len(spans) {
		t.Errorf("steps = %d, want %d", len(td.Steps), len(spans))
	}
	// Workers on svc0 nest in root's process: in-process calls; the others
	// run in other processes under a span of svc0, which is no call.
	var got []string
	for _, in := range td.Interactions {
		got = append(got, fmt.Sprintf("%s->%s x%d", in.From, in.To, in.Count))
	}
	want := []string{"root->agent0 x100", "root->agent3 x100", "root->agent6 x100"}
	if !slices.Equal(got, want) {
		t.Errorf("interactions = %v, want %v", got, want)
	}
}
