package a2acall_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/coordbench/coordbench/a2aserve"
	"github.com/coordbench/coordbench/internal/cputime"
)

// This file: TestMain, and the benchmark server it becomes when the test
// binary is started again with benchServerEnv set. The call benchmarks
// (bench_test.go) run their A2A server in that child process, so that the
// benchmark's own process time is the client's alone and the server's is
// read from the child (GET /rusage) rather than mixed in.

// benchServerEnv, set to "1", makes the test binary serve benchmarkServer
// instead of running tests.
const benchServerEnv = "A2ACALL_BENCH_SERVER"

func TestMain(m *testing.M) {
	if os.Getenv(benchServerEnv) == "1" {
		if err := serveBenchmarkServer(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "benchmark server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// serveBenchmarkServer serves an untraced a2aserve agent on loopback that
// answers every message with a completed task holding one short text
// artifact, writes "URL <participant URL>" to out, and serves until in
// ends (the parent closed the pipe or died). GET /rusage answers the
// process's CPU time so far: "<user ns> <system ns>".
func serveBenchmarkServer(in io.Reader, out io.Writer) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	url := "http://" + ln.Addr().String()
	// A bounded task store (a2aserve's), so a long benchmark's server does
	// not grow with every call it answered.
	store, err := a2aserve.NewTaskStore(a2aserve.TaskStoreLimits{MaxTasks: 64})
	if err != nil {
		return fmt.Errorf("task store: %w", err)
	}
	mux, err := a2aserve.NewHandler(a2aserve.Options{
		Card: &a2a.AgentCard{
			Name:        "bench",
			Description: "a2acall benchmark server",
			Version:     "1.0.0",
			SupportedInterfaces: []*a2a.AgentInterface{
				{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
				{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
			},
			DefaultInputModes:  []string{"text/plain"},
			DefaultOutputModes: []string{"text/plain"},
			Skills:             []a2a.AgentSkill{},
		},
		Executor:  benchExecutor{},
		TaskStore: store,
	})
	if err != nil {
		return fmt.Errorf("handler: %w", err)
	}
	mux.HandleFunc("GET /rusage", func(w http.ResponseWriter, _ *http.Request) {
		user, sys := processCPU()
		fmt.Fprintf(w, "%d %d\n", user, sys)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	if _, err := fmt.Fprintf(out, "URL %s\n", url); err != nil {
		return fmt.Errorf("announce: %w", err)
	}
	_, _ = io.Copy(io.Discard, in)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// benchExecutor answers with a completed task: submitted, one artifact,
// completed, as a simple purple agent does.
type benchExecutor struct{}

func (benchExecutor) Execute(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if ec.StoredTask == nil && !yield(a2a.NewSubmittedTask(ec, ec.Message), nil) {
			return
		}
		art := a2a.NewArtifactEvent(ec, a2a.NewTextPart("accept: the paper is sound, the experiments support its claims, minor revisions only."))
		art.Artifact.Name = "answer"
		if !yield(art, nil) {
			return
		}
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCompleted, nil), nil)
	}
}

func (benchExecutor) Cancel(_ context.Context, ec *a2asrv.ExecutorContext) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		yield(a2a.NewStatusUpdateEvent(ec, a2a.TaskStateCanceled, nil), nil)
	}
}

// processCPU is this process's user and system CPU time in nanoseconds.
func processCPU() (user, sys int64) {
	u, s, _ := cputime.Self()
	return int64(u), int64(s)
}

// benchServer is the benchmark server running in a child process.
type benchServer struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.Closer
}

// startBenchServer starts the test binary again as the benchmark server
// and waits for its URL; the server stops at the end of the benchmark.
func startBenchServer(b *testing.B) *benchServer {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), benchServerEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &benchServer{cmd: cmd, stdin: stdin}
	b.Cleanup(s.stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("benchmark server did not announce its URL: %v", err)
	}
	u, ok := strings.CutPrefix(strings.TrimSpace(line), "URL ")
	if !ok {
		b.Fatalf("benchmark server said %q", line)
	}
	s.URL = u
	return s
}

func (s *benchServer) stop() {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// cpu is the server process's CPU time so far (user + system), in
// nanoseconds.
func (s *benchServer) cpu(b *testing.B) int64 {
	b.Helper()
	resp, err := http.Get(s.URL + "/rusage")
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(body))
	if len(f) != 2 {
		b.Fatalf("rusage answered %q", body)
	}
	user, err1 := strconv.ParseInt(f[0], 10, 64)
	sys, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("rusage answered %q", body)
	}
	return user + sys
}
