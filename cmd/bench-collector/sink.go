package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// sink is the OTLP/HTTP backend a collector under test exports its
// connector's metrics and log records to: it decodes them with pdata and
// keeps what tells that the connector has processed the whole payload.
type sink struct {
	srv *http.Server
	url string

	mu sync.Mutex
	// sums holds, per series of a counter (resource, metric name and data
	// point attributes), the largest cumulative value seen: what any
	// batching or splitting of exports by the collector gives.
	sums map[string]float64
	// records is the coordbench log records' trace ids, and completions
	// their coordbench.trace.completion.
	records     map[pcommon.TraceID]int
	completions map[string]int
	failures    []string
	// snapshot, when set, keeps what --snapshot writes: a line per log
	// record and the last metrics request's data points.
	snapshot    bool
	recordLines []string
	metricLines []string
}

func newSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("sink: %w", err)
	}
	s := &sink{url: "http://" + ln.Addr().String(), sums: map[string]float64{},
		records: map[pcommon.TraceID]int{}, completions: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/metrics", s.metrics)
	mux.HandleFunc("POST /v1/logs", s.logs)
	s.srv = &http.Server{Handler: mux}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

func (s *sink) close() { _ = s.srv.Close() }

func readBody(r *http.Request) ([]byte, error) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, err
		}
		defer zr.Close()
		body = zr
	}
	return io.ReadAll(io.LimitReader(body, 256<<20))
}

func (s *sink) fail(w http.ResponseWriter, err error) {
	s.mu.Lock()
	s.failures = append(s.failures, err.Error())
	s.mu.Unlock()
	http.Error(w, err.Error(), http.StatusBadRequest)
}

func (s *sink) metrics(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(r)
	if err != nil {
		s.fail(w, fmt.Errorf("metrics: %w", err))
		return
	}
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		s.fail(w, fmt.Errorf("metrics: %w", err))
		return
	}
	s.mu.Lock()
	if s.snapshot {
		s.metricLines = canonicalMetrics(req.Metrics())
	}
	for _, rm := range req.Metrics().ResourceMetrics().All() {
		res := fmt.Sprint(rm.Resource().Attributes().AsRaw())
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Type() != pmetric.MetricTypeSum {
					continue
				}
				for _, dp := range m.Sum().DataPoints().All() {
					key := res + "|" + m.Name() + "|" + fmt.Sprint(dp.Attributes().AsRaw())
					v := float64(dp.IntValue())
					if dp.ValueType() == pmetric.NumberDataPointValueTypeDouble {
						v = dp.DoubleValue()
					}
					s.sums[key] = max(s.sums[key], v)
				}
			}
		}
	}
	s.mu.Unlock()
	out, _ := pmetricotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (s *sink) logs(w http.ResponseWriter, r *http.Request) {
	raw, err := readBody(r)
	if err != nil {
		s.fail(w, fmt.Errorf("logs: %w", err))
		return
	}
	req := plogotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		s.fail(w, fmt.Errorf("logs: %w", err))
		return
	}
	s.mu.Lock()
	for _, rl := range req.Logs().ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				s.records[lr.TraceID()]++
				c := "(none)"
				if v, ok := lr.Attributes().Get("coordbench.trace.completion"); ok {
					c = v.AsString()
				}
				s.completions[c]++
				if s.snapshot {
					sum := sha256.Sum256([]byte(lr.Body().Str()))
					s.recordLines = append(s.recordLines, fmt.Sprintf("record %s span %s attrs %v body %d bytes sha256 %x",
						lr.TraceID(), lr.SpanID(), lr.Attributes().AsRaw(), len(lr.Body().Str()), sum))
				}
			}
		}
	}
	s.mu.Unlock()
	out, _ := plogotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

// canonicalMetrics is every data point of md, one line each, timestamps
// left out, and a histogram's sum to 12 significant digits: the
// connector's workers add durations in whichever order traces finish, and
// float addition in another order differs in the last bits.
func canonicalMetrics(md pmetric.Metrics) []string {
	var out []string
	for _, rm := range md.ResourceMetrics().All() {
		res := rm.Resource().Attributes().AsRaw()
		delete(res, "service.instance.id") // a fresh one each run
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				head := fmt.Sprintf("metric %v %s %s %q %q", res, m.Name(), m.Type(), m.Unit(), m.Description())
				switch m.Type() {
				case pmetric.MetricTypeSum:
					for _, dp := range m.Sum().DataPoints().All() {
						out = append(out, fmt.Sprintf("%s %v %d", head, dp.Attributes().AsRaw(), dp.IntValue()))
					}
				case pmetric.MetricTypeHistogram:
					for _, dp := range m.Histogram().DataPoints().All() {
						out = append(out, fmt.Sprintf("%s %v count %d sum %s min %v max %v bounds %v buckets %v",
							head, dp.Attributes().AsRaw(), dp.Count(), strconv.FormatFloat(dp.Sum(), 'g', 12, 64), dp.Min(), dp.Max(),
							dp.ExplicitBounds().AsRaw(), dp.BucketCounts().AsRaw()))
					}
				default:
					out = append(out, head)
				}
			}
		}
	}
	return out
}

// snapshotLines is what --snapshot writes: the records sorted, then the
// last metrics.
func (s *sink) snapshotLines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Sorted(slices.Values(s.recordLines))
	return append(out, s.metricLines...)
}

// counter is the sum over the series of the counter named name.
func (s *sink) counter(name string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := 0.0
	for key, v := range s.sums {
		if strings.SplitN(key, "|", 3)[1] == name {
			total += v
		}
	}
	return total
}

// logState is the records received: distinct traces, records in all,
// by completion, and the sink's decoding failures.
func (s *sink) logState() (traces, records int, completions map[string]int, failures []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range s.records {
		records += n
	}
	completions = map[string]int{}
	for k, v := range s.completions {
		completions[k] = v
	}
	return len(s.records), records, completions, append([]string(nil), s.failures...)
}

// promSum sums the samples of the Prometheus metric family name (any
// suffix the exporter adds, any labels) at url.
func promSum(ctx context.Context, c *http.Client, url, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return 0, err
	}
	total := 0.0
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name) {
			continue
		}
		rest := line[len(name):]
		if rest != "" && rest[0] != '{' && rest[0] != ' ' && !strings.HasPrefix(rest, "_total") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			continue
		}
		total += v
	}
	return total, nil
}

// counters lists every counter's sum, for the message of a run that did
// not finish.
func (s *sink) counters() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	totals := map[string]float64{}
	for key, v := range s.sums {
		totals[strings.SplitN(key, "|", 3)[1]] += v
	}
	if len(totals) == 0 {
		return "no counters received"
	}
	var parts []string
	for name, v := range totals {
		parts = append(parts, fmt.Sprintf("%s %v", name, v))
	}
	sort.Strings(parts)
	return "counters received: " + strings.Join(parts, ", ")
}
