package e2e

// The clock-skew proxy: the purple agents read the real clock, so a
// process whose clock is off is simulated on the wire. An OTLP/HTTP
// (protobuf) proxy shifts every span's and event's times by a fixed offset
// and forwards the request to the green agent's receiver.

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// maxProxyBody bounds one export request the proxy reads.
const maxProxyBody = 32 << 20

// startSkewProxy serves OTLP/HTTP on loopback, shifting span times by
// offset before forwarding to target (a base URL; /v1/traces is kept).
// It returns the proxy's base URL and its stop function.
func startSkewProxy(ctx context.Context, target string, offset time.Duration) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("skew proxy: %w", err)
	}
	client := &http.Client{Timeout: 30 * time.Second}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := skewBody(r, offset)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, strings.TrimSuffix(target, "/")+r.URL.Path, bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		req.Header.Set("Content-Type", "application/x-protobuf")
		resp, err := client.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	})}
	go func() { _ = srv.Serve(ln) }()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}
	return "http://" + ln.Addr().String(), stop, nil
}

// skewBody reads a protobuf export request and returns it with every
// time shifted by offset.
func skewBody(r *http.Request, offset time.Duration) ([]byte, error) {
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		return nil, fmt.Errorf("skew proxy: content type %q, want application/x-protobuf", ct)
	}
	var rd io.Reader = io.LimitReader(r.Body, maxProxyBody)
	if r.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(rd)
		if err != nil {
			return nil, fmt.Errorf("skew proxy: gzip: %w", err)
		}
		defer gz.Close()
		rd = io.LimitReader(gz, maxProxyBody)
	}
	raw, err := io.ReadAll(rd)
	if err != nil {
		return nil, fmt.Errorf("skew proxy: read: %w", err)
	}
	req := ptraceotlp.NewExportRequest()
	if err := req.UnmarshalProto(raw); err != nil {
		return nil, fmt.Errorf("skew proxy: decode: %w", err)
	}
	shift := func(t pcommon.Timestamp) pcommon.Timestamp {
		return pcommon.NewTimestampFromTime(t.AsTime().Add(offset))
	}
	rss := req.Traces().ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				s := spans.At(k)
				s.SetStartTimestamp(shift(s.StartTimestamp()))
				s.SetEndTimestamp(shift(s.EndTimestamp()))
				ev := s.Events()
				for e := range ev.Len() {
					ev.At(e).SetTimestamp(shift(ev.At(e).Timestamp()))
				}
			}
		}
	}
	out, err := req.MarshalProto()
	if err != nil {
		return nil, fmt.Errorf("skew proxy: encode: %w", err)
	}
	if len(out) == 0 && len(raw) > 0 {
		return nil, errors.New("skew proxy: empty re-encoding")
	}
	return out, nil
}
