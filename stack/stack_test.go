package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/otlpdecode"
	"github.com/coordbench/coordbench/otelmap/otlpreceiver"
	"github.com/coordbench/coordbench/report"
)

// The whole local stack on loopback, as docker-compose-local.yaml lays it
// out, every part the real program: Jaeger (bin/jaeger on
// jaeger-config.yaml), the Collector (bin/otelcol on collector-config.yaml),
// the green agent (cmd/green) and a purple team of the base purple agent
// (cmd/purple: a coordinator fanning out to two reviewers). The purple
// agents export their spans only to the collector and return no
// Traceability-Extension steps, so whatever the green agent knows of their
// calls to each other came through the collector. The test drives one
// assessment over A2A, as AgentBeats does, and then asks Jaeger's query API
// for the task's trace: one trace holding the spans of every agent, the
// green agent's evaluator spans included.

// stackAgents are the services whose spans the task's trace must hold.
var stackAgents = []string{green.DefaultServiceName, "coordinator", "reviewer-1", "reviewer-2"}

func TestStackAssessmentThroughCollectorAndJaeger(t *testing.T) {
	otelcolBin := toolBinary(t, "otelcol", "otelcol")
	jaegerBin := toolBinary(t, "jaeger", "jaeger-build")
	greenBin, purpleBin := goBuild(t, "green"), goBuild(t, "purple")
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()

	// Started in this order, stopped in the reverse one: the agents flush
	// their last spans to a collector that still runs, and it to Jaeger.
	jg := startJaeger(t, jaegerBin)
	greenPort := freePort(t)
	greenURL := "http://127.0.0.1:" + strconv.Itoa(greenPort)
	col := newCollector(t, jg.otlpHTTPURL, greenURL+otlpreceiver.TracesPath)
	col.start(t, otelcolBin)

	// Every agent is configured as in the compose file: the AgentBeats
	// command line, and the standard OpenTelemetry environment naming the
	// collector as the only place its spans go. Nothing of the developer's
	// own environment reaches them.
	otelEnv := func(service string) []string {
		return []string{
			"OTEL_EXPORTER_OTLP_ENDPOINT=" + col.httpURL,
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=",
			"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT=",
			"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
			"OTEL_TRACES_EXPORTER=",
			"OTEL_METRICS_EXPORTER=",
			"OTEL_BSP_SCHEDULE_DELAY=100",
			"OTEL_SERVICE_NAME=" + service,
			"OTEL_RESOURCE_ATTRIBUTES=",
			"AGENTBEATS_LLM_API_KEY=", // the rule-based judge and reviewers: no remote LLM
		}
	}
	agentArgs := func(port int) []string {
		p := strconv.Itoa(port)
		return []string{"--host", "127.0.0.1", "--port", p, "--card-url", "http://127.0.0.1:" + p}
	}
	startAgent := func(name, bin string, port int, env []string, extra ...string) string {
		proc := startProcess(t, name, bin, append(agentArgs(port), extra...), env, "")
		url := "http://127.0.0.1:" + strconv.Itoa(port)
		waitFor(t, name, 60*time.Second, proc, httpOK(url+"/.well-known/agent-card.json"))
		return url
	}
	startAgent(green.DefaultServiceName, greenBin, greenPort, otelEnv(green.DefaultServiceName))

	// The purple team: the base purple agent, a coordinator fanning out to
	// two reviewers. --no-extension: they return no steps in their A2A
	// answers, so the collector is the only road of their spans.
	r1, r2 := freePort(t), freePort(t)
	team := map[string]string{}
	for name, port := range map[string]int{"reviewer-1": r1, "reviewer-2": r2} {
		team[name] = startAgent(name, purpleBin, port, otelEnv(name), "--name", name, "--role", "reviewer", "--no-extension")
	}
	team["coordinator"] = startAgent("coordinator", purpleBin, freePort(t), otelEnv("coordinator"),
		"--name", "coordinator", "--role", "coordinator", "--no-extension",
		"--peers", "reviewer-1="+team["reviewer-1"]+",reviewer-2="+team["reviewer-2"])

	// One assessment, as AgentBeats sends it: participants and config in
	// the first message, the result as the Result artifact. The settle
	// interval is raised for the extra hops (agent batcher, collector
	// batch) on a loaded machine.
	request, err := json.Marshal(map[string]any{
		"participants": team,
		"config": map[string]any{
			"scenario":           "coordination",
			"entry_role":         "coordinator",
			"num_tasks":          1,
			"settle_quiet_ms":    2000,
			"settle_max_wait_ms": 20000,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	res := assess(t, ctx, greenURL, string(request))
	if len(res.Tasks) != 1 {
		t.Fatalf("%d tasks in the result, want 1", len(res.Tasks))
	}
	task := res.Tasks[0]
	t.Logf("task %s: trace %s, coverage %+v", task.TaskID, task.TraceID, task.Coverage)

	// The purple agents' calls to each other reached the assessment, seen
	// from both sides, though their spans came only through the collector.
	for _, reviewer := range []string{"reviewer-1", "reviewer-2"} {
		i := slices.IndexFunc(task.Interactions, func(in interaction) bool { return in.From == "coordinator" && in.To == reviewer })
		if i < 0 {
			t.Errorf("no coordinator -> %s interaction in %+v", reviewer, task.Interactions)
			continue
		}
		if in := task.Interactions[i]; in.BothSides < 1 || in.ExtensionOnly != 0 {
			t.Errorf("coordinator -> %s not seen from both sides through OTLP: %+v", reviewer, in)
		}
	}
	if task.Coverage.SpansBySource["otlp"] == 0 {
		t.Errorf("no span of the task came by OTLP: %+v", task.Coverage)
	}
	for _, s := range stackAgents {
		if !slices.Contains(task.Coverage.Services, s) {
			t.Errorf("service %s missing from the assessed trace (services %v)", s, task.Coverage.Services)
		}
	}

	// Jaeger holds the same trace, with every agent's spans and the
	// evaluator spans the green agent added after assembling it.
	got := waitJaegerTrace(t, jg, task.TraceID, func(tr jaegerTrace) error {
		counts := tr.spansByService()
		for _, s := range stackAgents {
			if counts[s] == 0 {
				return fmt.Errorf("no span of %s yet (%v): %w", s, counts, errNotYet)
			}
		}
		if !slices.ContainsFunc(tr.Spans, func(sp jaegerSpan) bool { return strings.HasPrefix(sp.OperationName, otelmap.SpanEvaluatorPrefix) }) {
			return fmt.Errorf("no evaluator span yet: %w", errNotYet)
		}
		return nil
	})
	counts := got.spansByService()
	t.Logf("Jaeger trace %s: %d spans; per agent: %v", task.TraceID, len(got.Spans), counts)
	ops := map[string][]string{}
	for _, sp := range got.Spans {
		svc := got.Processes[sp.ProcessID].ServiceName
		ops[svc] = append(ops[svc], sp.OperationName)
	}
	for _, svc := range slices.Sorted(maps.Keys(ops)) {
		slices.Sort(ops[svc])
		t.Logf("  %s: %s", svc, strings.Join(ops[svc], ", "))
	}
	var evaluators []string
	for _, sp := range got.Spans {
		if name, ok := strings.CutPrefix(sp.OperationName, otelmap.SpanEvaluatorPrefix); ok {
			evaluators = append(evaluators, name)
		}
	}
	slices.Sort(evaluators)
	t.Logf("evaluator spans: %v", evaluators)

	// Every step the assessment was built from is a span Jaeger has, and
	// Jaeger has each span once (an agent forwarding a peer's spans that
	// the peer exported too would show as duplicate span ids).
	ids := map[string]bool{}
	for _, sp := range got.Spans {
		if ids[sp.SpanID] {
			t.Errorf("span %s (%s) is in Jaeger's trace twice", sp.SpanID, sp.OperationName)
		}
		ids[sp.SpanID] = true
	}
	for _, st := range task.Steps {
		if !ids[st.StepID] {
			t.Errorf("step %s (%s, agent %s) is not in Jaeger's trace", st.StepID, st.Name, st.Agent)
		}
	}
	if len(got.Spans) < task.Coverage.Spans {
		t.Errorf("Jaeger has %d spans, the assessment was built from %d", len(got.Spans), task.Coverage.Spans)
	}

	// The same trace from the v3 API, as OTLP JSON, reads back through
	// coordbench's own OTLP file reader (`green assess --otlp`).
	v3 := httpGet(t, jg.queryURL+"/api/v3/traces/"+task.TraceID)
	traces, err := otlpdecode.ReadOTLPJSON(bytes.NewReader(v3), "api/v3/traces")
	if err != nil {
		t.Fatalf("v3 answer: %v", err)
	}
	n := 0
	for _, tr := range traces {
		n += tr.SpanCount()
	}
	if n != len(got.Spans) {
		t.Errorf("v3 API: %d spans, v1 API: %d", n, len(got.Spans))
	}
}

// result is the part of coordbench.result/v2 this test reads.
type result struct {
	Schema string `json:"schema"`
	Tasks  []struct {
		TaskID       string        `json:"task_id"`
		TraceID      string        `json:"trace_id"`
		Interactions []interaction `json:"interactions"`
		Steps        []struct {
			StepID string `json:"step_id"`
			Name   string `json:"name"`
			Agent  string `json:"agent"`
		} `json:"steps"`
		Coverage struct {
			Interactions  int            `json:"interactions"`
			BothSides     int            `json:"both_sides"`
			Complete      float64        `json:"complete"`
			Spans         int            `json:"spans"`
			SpansBySource map[string]int `json:"spans_by_source"`
			Services      []string       `json:"services"`
		} `json:"coverage"`
	} `json:"tasks"`
}

type interaction struct {
	From          string `json:"from"`
	To            string `json:"to"`
	Count         int    `json:"count"`
	BothSides     int    `json:"both_sides"`
	ExtensionOnly int    `json:"extension_only"`
}

// assess sends one assessment request to the green agent with a2a-go's
// client, streaming, and returns the JSON part of the Result artifact.
func assess(t *testing.T, ctx context.Context, greenURL, request string) *result {
	t.Helper()
	card, err := (&agentcard.Resolver{Client: http.DefaultClient}).Resolve(ctx, greenURL)
	if err != nil {
		t.Fatalf("green agent card: %v", err)
	}
	client, err := a2aclient.NewFactory(a2aclient.WithDefaultsDisabled(), a2aclient.WithJSONRPCTransport(http.DefaultClient)).CreateFromCard(ctx, card)
	if err != nil {
		t.Fatalf("A2A client: %v", err)
	}
	defer client.Destroy()
	msg := &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(request))}
	var art *a2a.Artifact
	var state a2a.TaskState
	var status string
	for ev, err := range client.SendStreamingMessage(ctx, msg) {
		if err != nil {
			t.Fatalf("assessment stream: %v", err)
		}
		switch v := ev.(type) {
		case *a2a.Task:
			state = v.Status.State
			for _, a := range v.Artifacts {
				if a.Name == green.ResultArtifactName {
					art = a
				}
			}
		case *a2a.TaskStatusUpdateEvent:
			state = v.Status.State
			if v.Status.Message != nil {
				status = ""
				for _, p := range v.Status.Message.Parts {
					status += p.Text()
				}
			}
		case *a2a.TaskArtifactUpdateEvent:
			if v.Artifact.Name == green.ResultArtifactName {
				art = v.Artifact
			}
		}
	}
	if state != a2a.TaskStateCompleted {
		t.Fatalf("assessment ended %s: %s", state, status)
	}
	if art == nil || len(art.Parts) != 2 {
		t.Fatalf("no two-part Result artifact: %+v", art)
	}
	raw, err := json.Marshal(art.Parts[1].Data())
	if err != nil {
		t.Fatal(err)
	}
	var res result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("result: %v", err)
	}
	if res.Schema != report.Schema {
		t.Fatalf("result schema %q", res.Schema)
	}
	return &res
}

// jaeger is a running bin/jaeger on jaeger-config.yaml.
type jaeger struct {
	proc        *process
	queryURL    string // UI and query API
	otlpHTTPURL string // OTLP/HTTP base URL
}

// startJaeger runs Jaeger on loopback with free ports and waits until its
// health check says it is ready.
func startJaeger(t *testing.T, bin string) *jaeger {
	t.Helper()
	ports := map[string]int{}
	for _, name := range []string{"JAEGER_OTLP_GRPC_PORT", "JAEGER_OTLP_HTTP_PORT", "JAEGER_QUERY_HTTP_PORT", "JAEGER_QUERY_GRPC_PORT", "JAEGER_HEALTH_PORT", "JAEGER_TELEMETRY_PORT"} {
		ports[name] = freePort(t)
	}
	env := []string{"JAEGER_LISTEN_HOST=127.0.0.1", "JAEGER_UI_ASSETS=", "JAEGER_MAX_TRACES=1000"}
	for _, name := range slices.Sorted(maps.Keys(ports)) {
		env = append(env, name+"="+strconv.Itoa(ports[name]))
	}
	j := &jaeger{
		queryURL:    "http://127.0.0.1:" + strconv.Itoa(ports["JAEGER_QUERY_HTTP_PORT"]),
		otlpHTTPURL: "http://127.0.0.1:" + strconv.Itoa(ports["JAEGER_OTLP_HTTP_PORT"]),
	}
	j.proc = startProcess(t, "jaeger", bin, []string{"--config", repoFile(t, "jaeger-config.yaml")}, env, "")
	waitFor(t, "jaeger", 60*time.Second, j.proc, httpOK("http://127.0.0.1:"+strconv.Itoa(ports["JAEGER_HEALTH_PORT"])+"/status"))
	waitFor(t, "jaeger query", 30*time.Second, j.proc, httpOK(j.queryURL+"/api/services"))
	return j
}

// jaegerTrace is one trace of Jaeger's /api/traces/{id} answer.
type jaegerTrace struct {
	TraceID   string       `json:"traceID"`
	Spans     []jaegerSpan `json:"spans"`
	Processes map[string]struct {
		ServiceName string `json:"serviceName"`
	} `json:"processes"`
}

type jaegerSpan struct {
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	ProcessID     string `json:"processID"`
}

// spansByService counts the trace's spans by service.name.
func (tr jaegerTrace) spansByService() map[string]int {
	out := map[string]int{}
	for _, sp := range tr.Spans {
		out[tr.Processes[sp.ProcessID].ServiceName]++
	}
	return out
}

// waitJaegerTrace polls /api/traces/{id} until complete accepts the trace
// and its span count has not changed for a second (late spans are still
// on their way through the batchers otherwise). Jaeger must answer with
// exactly one trace.
func waitJaegerTrace(t *testing.T, jg *jaeger, traceID string, complete func(jaegerTrace) error) jaegerTrace {
	t.Helper()
	var got jaegerTrace
	lastCount, stableSince := -1, time.Time{}
	waitFor(t, "trace "+traceID+" in Jaeger", 60*time.Second, jg.proc, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, jg.queryURL+"/api/traces/"+traceID, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %.200s", resp.Status, body)
		}
		var answer struct {
			Data []jaegerTrace `json:"data"`
		}
		if err := json.Unmarshal(body, &answer); err != nil {
			return fmt.Errorf("decode: %w", err)
		}
		if len(answer.Data) != 1 {
			return fmt.Errorf("%d traces for id %s, want 1", len(answer.Data), traceID)
		}
		got = answer.Data[0]
		if err := complete(got); err != nil {
			return err
		}
		if n := len(got.Spans); n != lastCount {
			lastCount, stableSince = n, time.Now()
		}
		if time.Since(stableSince) < time.Second {
			return fmt.Errorf("%d spans, still settling: %w", lastCount, errNotYet)
		}
		return nil
	})
	return got
}

func httpGet(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v: %.300s", url, resp.Status, err, body)
	}
	return body
}
