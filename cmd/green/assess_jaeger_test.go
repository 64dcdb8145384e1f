package main

import (
	"flag"
	"net"
	"strings"
	"testing"
	"time"
)

// The Jaeger source's flags: every wrong combination is refused with
// status 2 and a message naming the flag, before anything is asked of
// Jaeger (the URL below is one nothing listens on, so a request would
// fail with status 1 instead). The source itself runs against a real
// Jaeger in stack/jaeger_source_test.go.

func deadJaegerURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func TestAssessJaegerFlagErrors(t *testing.T) {
	j := deadJaegerURL(t)
	id := "4bf92f3577b34da6a3ce929d0e0e4736"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--trace-id", id}, "--trace-id reads from Jaeger"},
		{[]string{"--service", "s"}, "--service reads from Jaeger"},
		{[]string{"--since", "1h", "x.json"}, "--since reads from Jaeger"},
		{[]string{"--workers", "2", "x.json"}, "--workers reads from Jaeger"},
		{[]string{"--jaeger", j}, "needs --trace-id ID or --service NAME"},
		{[]string{"--jaeger", j, "x.json"}, "not both"},
		{[]string{"--jaeger", j, "--otlp", "x.json", "--trace-id", id}, "not both"},
		{[]string{"--jaeger", j, "--trace-id", id, "--service", "s"}, "--trace-id and --service"},
		{[]string{"--jaeger", j, "--trace-id", id, "--limit", "3"}, "--trace-id and --limit"},
		{[]string{"--jaeger", j, "--trace-id", "xyz"}, "hex digits"},
		{[]string{"--jaeger", j, "--trace-id", strings.Repeat("a", 33)}, "1 to 32 hex digits"},
		{[]string{"--jaeger", j, "--trace-id", "0000"}, "all-zero"},
		{[]string{"--jaeger", j, "--trace-id", ""}, "hex digits"},
		{[]string{"--jaeger", j, "--since", "1h"}, "give --service too"},
		{[]string{"--jaeger", j, "--service", "s", "--since", "yesterday"}, "--since"},
		{[]string{"--jaeger", j, "--service", "s", "--since", "-1h"}, "positive duration"},
		{[]string{"--jaeger", j, "--service", "s", "--since", "1h", "--start", "2026-01-01T00:00:00Z"}, "one time range"},
		{[]string{"--jaeger", j, "--service", "s", "--end", "2026-01-01T00:00:00Z"}, "--end needs --start"},
		{[]string{"--jaeger", j, "--service", "s", "--start", "2026-01-02"}, "RFC 3339"},
		{[]string{"--jaeger", j, "--service", "s", "--start", "2026-01-02T00:00:00Z", "--end", "2026-01-01T00:00:00Z"}, "before --start"},
		{[]string{"--jaeger", j, "--service", "s", "--limit", "0"}, "--limit 0"},
		{[]string{"--jaeger", j, "--service", "s", "--page-size", "0"}, "--page-size 0"},
		{[]string{"--jaeger", j, "--service", "s", "--workers", "0"}, "--workers 0"},
		{[]string{"--jaeger", j, "--service", "s", "--jaeger-timeout", "0s"}, "--jaeger-timeout"},
		{[]string{"--jaeger", "127.0.0.1:16686", "--service", "s"}, "http://"},
		{[]string{"--jaeger", "http://h:16686/?q=1", "--service", "s"}, "without a query"},
	} {
		code, stdout, stderr := assessCmd(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%q: exit %d, stderr %q, stdout %q; want 2 and %q", tc.args, code, stderr, stdout, tc.want)
		}
	}
}

func TestAssessJaegerUnreachable(t *testing.T) {
	j := deadJaegerURL(t)
	for _, args := range [][]string{
		{"--jaeger", j, "--trace-id", "4bf92f3577b34da6a3ce929d0e0e4736", "--trace-id", "1"},
		{"--jaeger", j, "--service", "coordinator", "--since", "10m"},
	} {
		code, stdout, stderr := assessCmd(t, args...)
		if code != 1 || !strings.Contains(stderr, "jaeger unreachable") || !strings.Contains(stderr, strings.TrimPrefix(j, "http://")) || stdout != "" {
			t.Errorf("%q: exit %d, stderr %q; want 1 and Jaeger unreachable at its address", args, code, stderr)
		}
	}
}

func TestJaegerTimeRange(t *testing.T) {
	now := time.Date(2026, 5, 6, 7, 8, 9, 0, time.UTC)
	read := func(args ...string) (*jaegerOptions, error) {
		fs := flag.NewFlagSet("assess", flag.ContinueOnError)
		jf := registerJaegerFlags(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		set := map[string]bool{}
		for _, a := range args {
			if name, ok := strings.CutPrefix(a, "--"); ok {
				set[name] = true
			}
		}
		return jf.read(set, now)
	}
	o, err := read("--jaeger", "http://j", "--service", "s")
	if err != nil || !o.search.Start.Equal(now.Add(-time.Hour)) || !o.search.End.Equal(now) {
		t.Errorf("default range: %+v, %v; want the last hour", o, err)
	}
	o, err = read("--jaeger", "http://j", "--service", "s", "--since", "36h")
	if err != nil || !o.search.Start.Equal(now.Add(-36*time.Hour)) || !o.search.End.Equal(now) {
		t.Errorf("--since 36h: %+v, %v", o, err)
	}
	o, err = read("--jaeger", "http://j", "--service", "s", "--start", "2026-05-01T00:00:00+02:00")
	if err != nil || !o.search.Start.Equal(time.Date(2026, 4, 30, 22, 0, 0, 0, time.UTC)) || !o.search.End.Equal(now) {
		t.Errorf("--start alone: %+v, %v; want up to now", o, err)
	}
	o, err = read("--jaeger", "http://j", "--trace-id", "ABCDEF")
	if err != nil || len(o.traceIDs) != 1 || o.traceIDs[0].String() != "00000000000000000000000000abcdef" {
		t.Errorf("short upper-case id: %+v, %v; want it padded as Jaeger pads it", o, err)
	}
}
