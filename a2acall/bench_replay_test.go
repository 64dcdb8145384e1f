package a2acall_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2acompat/a2av0"

	"github.com/coordbench/coordbench/a2aserve"
)

// BenchmarkClientWork measures the caller's own work for one call: the
// same three kinds of call as BenchmarkCall, over an http.RoundTripper that
// replays, in process, the answers the benchmark server gave (recorded
// once). No network, kernel or server time is in the figures, so the load
// of a shared machine weighs on them far less, and the difference between
// a kind and a2a-go is what the Messenger adds to a call, in CPU time.
func BenchmarkClientWork(b *testing.B) {
	rp := recordAnswers(b)
	for _, v := range callVariants(rp) {
		b.Run(v.name, func(b *testing.B) {
			call, closeCall := v.start(b, rp.url)
			defer closeCall()
			call()
			b.ReportAllocs()
			u0, s0 := processCPU()
			n := 0
			for b.Loop() {
				call()
				n++
			}
			u1, s1 := processCPU()
			b.ReportMetric(float64((u1-u0)+(s1-s0))/float64(n), "cpu-ns/op")
		})
	}
}

// idMark stands for the JSON-RPC id in a recorded answer.
const idMark = "\x00id\x00"

// replayer answers as the benchmark server answered: the agent card to a
// GET, the recorded SendMessage answer, with the request's id, to a POST.
type replayer struct {
	url    string
	card   []byte
	answer string
}

func (r *replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	body := r.card
	if req.Method == http.MethodPost {
		in, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		var rpc struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(in, &rpc); err != nil {
			return nil, fmt.Errorf("replay: request: %w", err)
		}
		body = []byte(strings.Replace(r.answer, idMark, string(rpc.ID), 1))
	}
	return &http.Response{
		Status: "200 OK", StatusCode: http.StatusOK,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {"application/json"}},
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// recordAnswers serves the benchmark agent in process, makes one call to
// it with a plain client, and returns a replayer of its answers.
func recordAnswers(b *testing.B) *replayer {
	b.Helper()
	srv := httptest.NewUnstartedServer(nil)
	url := "http://" + srv.Listener.Addr().String()
	mux, err := a2aserve.NewHandler(a2aserve.Options{
		Card: &a2a.AgentCard{
			Name: "bench", Description: "a2acall benchmark server", Version: "1.0.0",
			SupportedInterfaces: []*a2a.AgentInterface{
				{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version},
				{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2av0.Version},
			},
			DefaultInputModes: []string{"text/plain"}, DefaultOutputModes: []string{"text/plain"}, Skills: []a2a.AgentSkill{},
		},
		Executor:  benchExecutor{},
		TaskStore: nil, // a2aserve's bounded store
	})
	if err != nil {
		b.Fatal(err)
	}
	srv.Config.Handler = mux
	srv.Start()
	defer srv.Close()

	rec := &recorder{base: srv.Client().Transport}
	rp := &replayer{url: url}
	for _, v := range callVariants(rec) {
		if v.name != "a2a-go" {
			continue
		}
		call, closeCall := v.start(b, url)
		call()
		closeCall()
	}
	if rec.card == nil || rec.answer == "" {
		b.Fatal("no card or answer recorded")
	}
	rp.card = rec.card
	rp.answer = rec.answer
	return rp
}

// recorder keeps the card and the first SendMessage answer, with the
// request's id replaced by idMark.
type recorder struct {
	base   http.RoundTripper
	card   []byte
	answer string
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var id json.RawMessage
	if req.Method == http.MethodPost {
		in, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		var rpc struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal(in, &rpc); err != nil {
			return nil, err
		}
		id = rpc.ID
		req.Body = io.NopCloser(bytes.NewReader(in))
	}
	res, err := r.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	out, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(out))
	if req.Method == http.MethodGet {
		r.card = out
	} else if r.answer == "" {
		r.answer = strings.Replace(string(out), `"id":`+string(id), `"id":`+idMark, 1)
	}
	return res, nil
}
