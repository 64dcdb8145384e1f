package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/coordbench/coordbench/internal/procbench"

	"github.com/coordbench/coordbench/green"
	"github.com/coordbench/coordbench/otelmap/tracestore"
)

// server is one of the two servers compared: how to start a fresh process
// of it, where it takes OTLP/HTTP, and how to read how many spans it holds.
type server interface {
	name() string
	// command is the process to start, listening on free loopback ports.
	command(ctx context.Context) (*exec.Cmd, error)
	// ready tells whether the started process serves.
	ready(ctx context.Context, c *http.Client) bool
	// tracesURL is where the export requests go.
	tracesURL() string
	// held is how many spans the server holds (has stored) now; an error
	// when it refused or lost some.
	held(ctx context.Context, c *http.Client) (int, error)
}

func getBody(ctx context.Context, c *http.Client, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, body, err
}

// greenServer is `green serve` on a free port: OTLP/HTTP at /v1/traces of
// its main listener, its counters at green.StatsPath.
type greenServer struct {
	bin  string
	base string
}

func (g *greenServer) name() string { return "green" }

func (g *greenServer) command(ctx context.Context) (*exec.Cmd, error) {
	port, err := procbench.FreePort()
	if err != nil {
		return nil, err
	}
	g.base = "http://127.0.0.1:" + strconv.Itoa(port)
	// One exporter sends the whole payload: its quota of unsolicited traces
	// (a quarter of the store by default) is raised to the whole store, as
	// a deployment with one trusted collector in front would set it.
	cmd := exec.CommandContext(ctx, g.bin, "serve", "--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--otlp-traces-per-source", strconv.Itoa(tracestore.DefaultMaxTraces))
	cmd.Env = procbench.ChildEnv()
	return cmd, nil
}

func (g *greenServer) ready(ctx context.Context, c *http.Client) bool {
	status, _, err := getBody(ctx, c, g.base+"/healthz")
	return err == nil && status == http.StatusOK
}

func (g *greenServer) tracesURL() string { return g.base + "/v1/traces" }

func (g *greenServer) held(ctx context.Context, c *http.Client) (int, error) {
	status, body, err := getBody(ctx, c, g.base+green.StatsPath)
	if err != nil {
		return 0, fmt.Errorf("green stats: %w", err)
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("green stats: status %d: %s", status, bytes.TrimSpace(body))
	}
	var st green.ServerStats
	if err := json.Unmarshal(body, &st); err != nil {
		return 0, fmt.Errorf("green stats: %w", err)
	}
	if st.Receiver.SpansRejected > 0 || st.Store.SpansDuplicate > 0 {
		return 0, fmt.Errorf("green rejected %d spans and took %d as duplicates (store %+v)",
			st.Receiver.SpansRejected, st.Store.SpansDuplicate, st.Store)
	}
	return st.Store.Spans, nil
}

// jaegerServer is Jaeger v2 as `make jaeger` runs it (jaeger-config.yaml:
// OTLP receiver, batch processor, in-memory storage), every port moved to
// a free one. The spans it holds are what its storage exporter has
// written, from its own metrics.
type jaegerServer struct {
	bin, config string
	otlp        string
	health      string
	metrics     string
	query       string
}

func (j *jaegerServer) name() string { return "jaeger" }

func (j *jaegerServer) command(ctx context.Context) (*exec.Cmd, error) {
	vars := []string{"JAEGER_OTLP_GRPC_PORT", "JAEGER_OTLP_HTTP_PORT", "JAEGER_QUERY_HTTP_PORT",
		"JAEGER_QUERY_GRPC_PORT", "JAEGER_HEALTH_PORT", "JAEGER_TELEMETRY_PORT"}
	ports := map[string]string{}
	env := []string{"JAEGER_LISTEN_HOST=127.0.0.1"}
	for _, v := range vars {
		p, err := procbench.FreePort()
		if err != nil {
			return nil, err
		}
		ports[v] = strconv.Itoa(p)
		env = append(env, v+"="+ports[v])
	}
	j.otlp = "http://127.0.0.1:" + ports["JAEGER_OTLP_HTTP_PORT"]
	j.health = "http://127.0.0.1:" + ports["JAEGER_HEALTH_PORT"] + "/status"
	j.metrics = "http://127.0.0.1:" + ports["JAEGER_TELEMETRY_PORT"] + "/metrics"
	j.query = "http://127.0.0.1:" + ports["JAEGER_QUERY_HTTP_PORT"]
	cmd := exec.CommandContext(ctx, j.bin, "--config", j.config)
	cmd.Env = procbench.ChildEnv(env...)
	return cmd, nil
}

func (j *jaegerServer) ready(ctx context.Context, c *http.Client) bool {
	status, _, err := getBody(ctx, c, j.health)
	if err != nil || status != http.StatusOK {
		return false
	}
	// The health check can answer before the receiver listens.
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(j.otlp, "http://"), time.Second)
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

func (j *jaegerServer) tracesURL() string { return j.otlp + "/v1/traces" }

// held sums the storage exporter's sent spans from Jaeger's Prometheus
// metrics (otelcol_exporter_sent_spans; the batch processor between the
// receiver and the exporter writes after the export was answered).
func (j *jaegerServer) held(ctx context.Context, c *http.Client) (int, error) {
	status, body, err := getBody(ctx, c, j.metrics)
	if err != nil {
		return 0, fmt.Errorf("jaeger metrics: %w", err)
	}
	if status != http.StatusOK {
		return 0, fmt.Errorf("jaeger metrics: status %d", status)
	}
	sent, failed := 0.0, 0.0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || !strings.Contains(line, `exporter="jaeger_storage_exporter"`) {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		v, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err != nil {
			continue
		}
		switch {
		case strings.HasPrefix(line, "otelcol_exporter_sent_spans"):
			sent += v
		case strings.HasPrefix(line, "otelcol_exporter_send_failed_spans"):
			failed += v
		}
	}
	if failed > 0 {
		return 0, fmt.Errorf("jaeger's storage exporter failed %v spans", failed)
	}
	return int(sent), nil
}

// checkTrace asks Jaeger's query API for one trace of the payload and
// checks it holds the spans sent of it: the figures count spans Jaeger
// can serve, not only spans its exporter passed on.
func (j *jaegerServer) checkTrace(ctx context.Context, c *http.Client, id string, want int) error {
	status, body, err := getBody(ctx, c, j.query+"/api/traces/"+id)
	if err != nil {
		return fmt.Errorf("jaeger query: %w", err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("jaeger query: trace %s: status %d", id, status)
	}
	var resp struct {
		Data []struct {
			Spans []json.RawMessage `json:"spans"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return fmt.Errorf("jaeger query: %w", err)
	}
	if len(resp.Data) != 1 || len(resp.Data[0].Spans) != want {
		n := 0
		for _, d := range resp.Data {
			n += len(d.Spans)
		}
		return fmt.Errorf("jaeger query: trace %s has %d spans, want %d", id, n, want)
	}
	return nil
}
