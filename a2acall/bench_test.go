package a2acall_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/coordbench/coordbench/a2acall"
)

// BenchmarkCall measures what one blocking A2A call costs the caller, in
// three ways against the same loopback a2aserve server (an untraced child
// process, see main_test.go):
//
//   - a2a-go: a plain a2a-go client, no tracing, no Messenger;
//   - messenger/off: the Messenger with a no-op TracerProvider;
//   - messenger/sdk: the Messenger with an SDK TracerProvider that records
//     every span (AlwaysSample) and hands it to a no-op exporter.
//
// Besides ns/op (wall time, which the loaded machine makes noisy) each
// reports the CPU time of the calling process per call (cpu-ns/op, from
// getrusage around the loop), of the server process (server-cpu-ns/op) and
// their sum (total-cpu-ns/op). The Messenger's overhead is its cpu-ns/op
// over a2a-go's. Run it interleaved, e.g.
//
//	go test -c -o /tmp/a2acall.test ./a2acall
//	for i in 1 2 3 4 5; do /tmp/a2acall.test -test.run '^$' -test.bench Call -test.benchmem; done
func BenchmarkCall(b *testing.B) {
	srv := startBenchServer(b)
	for _, v := range callVariants(nil) {
		b.Run(v.name, func(b *testing.B) {
			call, closeCall := v.start(b, srv.URL)
			defer closeCall()
			measureCalls(b, srv, call)
		})
	}
}

// BenchmarkInterleavedCalls makes the same three kinds of call as
// BenchmarkCall (loopback) and BenchmarkClientWork (in-process), but in one
// process and interleaved: each round makes a block of calls of each kind,
// in an order that rotates, and the CPU time of each block (getrusage
// around it) is added to its kind's. A shared machine whose load changes
// from second to second then weighs on the three alike, and the overheads
// (off-overhead-%, sdk-overhead-%: CPU per call over a2a-go's) compare like
// with like. The garbage collector's work is shared out by time rather than
// by who allocated, which slightly flatters the kinds that allocate more;
// BenchmarkCall and BenchmarkClientWork, each kind alone, do not.
func BenchmarkInterleavedCalls(b *testing.B) {
	b.Run("loopback", func(b *testing.B) {
		srv := startBenchServer(b)
		interleave(b, callVariants(nil), srv.URL)
	})
	b.Run("in-process", func(b *testing.B) {
		rp := recordAnswers(b)
		interleave(b, callVariants(rp), rp.url)
	})
}

func interleave(b *testing.B, variants []callVariant, url string) {
	const block = 10
	calls := make([]func(), len(variants))
	for i, v := range variants {
		call, closeCall := v.start(b, url)
		defer closeCall()
		call()
		calls[i] = call
	}
	cpu := make([]int64, len(variants))
	n := 0
	for b.Loop() {
		for j := range variants {
			i := (n + j) % len(variants)
			u0, s0 := processCPU()
			for range block {
				calls[i]()
			}
			u1, s1 := processCPU()
			cpu[i] += (u1 - u0) + (s1 - s0)
		}
		n++
	}
	per := make([]float64, len(variants))
	for i, v := range variants {
		per[i] = float64(cpu[i]) / float64(n*block)
		b.ReportMetric(per[i], strings.ReplaceAll(v.name, "messenger/", "")+"-cpu-ns/call")
	}
	b.ReportMetric(100*(per[1]/per[0]-1), "off-overhead-%")
	b.ReportMetric(100*(per[2]/per[0]-1), "sdk-overhead-%")
}

// callVariant is one way of making the benchmark's call: start makes the
// client and returns the call and what closes the client.
type callVariant struct {
	name  string
	start func(b *testing.B, url string) (call func(), closeCall func())
}

// callVariants are the three kinds of call the benchmarks compare, in this
// order: a2a-go, messenger/off, messenger/sdk; over base when it is not
// nil, else over a fresh *http.Transport each.
func callVariants(base http.RoundTripper) []callVariant {
	text := benchText()
	messenger := func(newTP func() trace.TracerProvider) func(b *testing.B, url string) (func(), func()) {
		return func(b *testing.B, url string) (func(), func()) {
			tp := newTP()
			opts := a2acall.Options{Logger: quietLogger}
			m := a2acall.New(tp, nil, opts)
			if base != nil {
				m = a2acall.NewWithTransport(tp, nil, opts, base)
			}
			call := func() {
				reply, err := m.Send(b.Context(), a2acall.SendRequest{URL: url, Text: text})
				if err != nil {
					b.Fatal(err)
				}
				if reply.State != "completed" || reply.Text == "" {
					b.Fatalf("reply %+v", reply)
				}
			}
			return call, func() {
				_ = m.Close()
				if sdk, ok := tp.(*sdktrace.TracerProvider); ok {
					_ = sdk.Shutdown(context.Background())
				}
			}
		}
	}
	return []callVariant{
		{"a2a-go", func(b *testing.B, url string) (func(), func()) {
			ctx := b.Context()
			transport := http.DefaultTransport.(*http.Transport).Clone()
			var rt http.RoundTripper = transport
			if base != nil {
				rt = base
			}
			card, err := (&agentcard.Resolver{Client: &http.Client{Transport: rt}}).Resolve(ctx, url)
			if err != nil {
				b.Fatal(err)
			}
			client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(&http.Client{Transport: rt}))
			if err != nil {
				b.Fatal(err)
			}
			call := func() {
				res, err := client.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))})
				if err != nil {
					b.Fatal(err)
				}
				task, ok := res.(*a2a.Task)
				if !ok || task.Status.State != a2a.TaskStateCompleted || len(task.Artifacts) != 1 {
					b.Fatalf("answer %#v", res)
				}
			}
			return call, func() {
				_ = client.Destroy()
				transport.CloseIdleConnections()
			}
		}},
		{"messenger/off", messenger(func() trace.TracerProvider { return noop.NewTracerProvider() })},
		{"messenger/sdk", messenger(func() trace.TracerProvider {
			return sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))
		})},
	}
}

// measureCalls makes one call to warm the connection (and the Messenger's
// card cache), then times b.Loop and reports the CPU time per call of both
// processes.
func measureCalls(b *testing.B, srv *benchServer, call func()) {
	call()
	b.ReportAllocs()
	serverBefore := srv.cpu(b)
	u0, s0 := processCPU()
	n := 0
	for b.Loop() {
		call()
		n++
	}
	u1, s1 := processCPU()
	serverAfter := srv.cpu(b)
	client := float64((u1-u0)+(s1-s0)) / float64(n)
	server := float64(serverAfter-serverBefore) / float64(n)
	b.ReportMetric(client, "cpu-ns/op")
	b.ReportMetric(server, "server-cpu-ns/op")
	b.ReportMetric(client+server, "total-cpu-ns/op")
}

// benchText is a request of about a kilobyte, the size of a short task
// prompt.
func benchText() string {
	return strings.Repeat("Review paper 7 against the venue's criteria and answer accept or reject with reasons. ", 12)
}
