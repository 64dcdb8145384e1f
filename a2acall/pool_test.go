package a2acall_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/a2atest"
	"github.com/coordbench/coordbench/internal/testenv"
	"github.com/coordbench/coordbench/otelmap"
)

// TestMessengerFailures: every way a participant can fail ends the call
// with an error naming its URL, promptly, records the failure on the
// invoke_agent span, and leaves no goroutine behind once closed.
func TestMessengerFailures(t *testing.T) {
	cases := []struct {
		name    string
		opts    a2atest.Options
		refused bool
		errType string
		is      error
	}{
		{name: "hang", opts: a2atest.Options{Fault: a2atest.FaultHang}, errType: "timeout", is: context.DeadlineExceeded},
		{name: "hang streaming", opts: a2atest.Options{Fault: a2atest.FaultHang, Streaming: true}, errType: "timeout", is: context.DeadlineExceeded},
		{name: "hang 0.3 streaming", opts: a2atest.Options{Fault: a2atest.FaultHang, Streaming: true, Legacy: true}, errType: "timeout", is: context.DeadlineExceeded},
		{name: "fail", opts: a2atest.Options{Fault: a2atest.FaultFail}, errType: "task_failed", is: a2acall.ErrTaskFailed},
		{name: "fail 0.3 streaming", opts: a2atest.Options{Fault: a2atest.FaultFail, Legacy: true, Streaming: true}, errType: "task_failed", is: a2acall.ErrTaskFailed},
		{name: "garbage", opts: a2atest.Options{Fault: a2atest.FaultGarbage}, errType: "protocol"},
		{name: "garbage streaming", opts: a2atest.Options{Fault: a2atest.FaultGarbage, Streaming: true}, errType: "no_result", is: a2acall.ErrNoResult},
		{name: "garbage 0.3", opts: a2atest.Options{Fault: a2atest.FaultGarbage, Legacy: true}, errType: "protocol"},
		{name: "crash 0.3 streaming", opts: a2atest.Options{Fault: a2atest.FaultCrash, Streaming: true, Legacy: true}, errType: "connection"},
		{name: "crash", opts: a2atest.Options{Fault: a2atest.FaultCrash}, errType: "connection"},
		{name: "crash streaming", opts: a2atest.Options{Fault: a2atest.FaultCrash, Streaming: true}, errType: "connection"},
		{name: "refused", refused: true, errType: "agent_card"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			var url string
			var p *a2atest.Agent
			if tc.refused {
				url = a2atest.RefusedURL(t)
			} else {
				p = a2atest.Start(t, tc.opts)
				url = p.URL
			}
			// Only a hang meets a short call timeout; the other failures
			// get a minute, so that a slow machine does not turn them into
			// timeouts.
			timeout := time.Minute
			if tc.is == context.DeadlineExceeded {
				timeout = 500 * time.Millisecond
			}
			c := newCaller(t, a2acall.Options{CallTimeout: timeout})
			start := time.Now()
			reply, tid, err := c.send(t, a2acall.SendRequest{URL: url, Text: "hi"})
			took := time.Since(start)
			if err == nil {
				t.Fatalf("no error; reply %+v", reply)
			}
			t.Logf("error after %v: %v", took, err)
			// A bound against hanging, below the minute the failures that
			// are not hangs may take.
			if took > 50*time.Second {
				t.Errorf("took %v", took)
			}
			var ce *a2acall.CallError
			if !errors.As(err, &ce) || ce.URL != url || !strings.Contains(err.Error(), url) {
				t.Errorf("error does not name %s: %v", url, err)
			}
			if !tc.refused && (ce == nil || ce.Agent != "purple" || !strings.Contains(err.Error(), "(purple)")) {
				t.Errorf("error does not name the agent of the card: %v", err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error is not %v: %v", tc.is, err)
			}
			if errors.Is(err, a2acall.ErrTaskFailed) {
				if reply == nil || reply.State != "failed" || !strings.Contains(reply.Text, "deliberate failure") || ce.State != "failed" {
					t.Errorf("failed task: reply %+v", reply)
				}
				if !strings.Contains(err.Error(), "deliberate failure") {
					t.Errorf("the error quotes the task's text: %v", err)
				}
			}
			var inv *otelmap.Span
			for _, s := range c.store.Spans(tid) {
				if strings.HasPrefix(s.Name, otelmap.OpInvokeAgent) {
					inv = &s
				}
			}
			if inv == nil || !inv.StatusError {
				t.Fatalf("invoke_agent span not failed: %+v", inv)
			}
			if tc.errType != "" && strAttr(*inv, otelmap.AttrErrorType) != tc.errType {
				t.Errorf("error.type %q, want %q", strAttr(*inv, otelmap.AttrErrorType), tc.errType)
			}
			if err := c.m.Close(); err != nil {
				t.Error(err)
			}
			if p != nil {
				p.Close()
			}
			testenv.CheckNoGoroutineLeak(t, before)
		})
	}
}

// TestMessengerRequestTimeout: SendRequest.Timeout bounds one call below
// the Messenger's CallTimeout, and the error says how long it waited.
func TestMessengerRequestTimeout(t *testing.T) {
	p := a2atest.Start(t, a2atest.Options{Fault: a2atest.FaultHang, Streaming: true})
	c := newCaller(t, a2acall.Options{})
	_, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hi", Timeout: 300 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 300ms") {
		t.Errorf("err %v", err)
	}
}

// TestMessengerReusesClients: one card fetch serves every call to a
// participant, concurrent first calls included; Close ends the Messenger.
func TestMessengerReusesClients(t *testing.T) {
	before := runtime.NumGoroutine()
	p := a2atest.Start(t, a2atest.Options{Streaming: true})
	c := newCaller(t, a2acall.Options{})
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = c.m.Send(t.Context(), a2acall.SendRequest{URL: p.URL, Text: fmt.Sprint(i)})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "again"}); err != nil {
		t.Fatal(err)
	}
	if n := p.CardFetches(); n != 1 {
		t.Errorf("%d card fetches for 7 calls, want 1", n)
	}
	if len(p.Calls()) != 7 {
		t.Errorf("%d calls", len(p.Calls()))
	}
	info, err := c.m.Agent(t.Context(), p.URL)
	if err != nil || info.Name != "purple" || !info.Streaming || info.Protocol != "1.0" || info.Endpoint != p.URL || info.URL != p.URL || info.Traceability {
		t.Errorf("agent info %+v, %v", info, err)
	}

	if err := c.m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.m.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "late"}); !errors.Is(err, a2acall.ErrClosed) {
		t.Errorf("send after close: %v", err)
	}
	if _, err := c.m.Agent(t.Context(), p.URL); !errors.Is(err, a2acall.ErrClosed) {
		t.Errorf("agent after close: %v", err)
	}
	p.Close()
	testenv.CheckNoGoroutineLeak(t, before)
}

// TestMessengerCardRetry: a participant that is not up yet at the first
// call is asked for its card again at the next.
func TestMessengerCardRetry(t *testing.T) {
	var up sync.Mutex
	ready := false
	p := a2atest.Start(t, a2atest.Options{})
	gate := startHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		up.Lock()
		ok := ready
		up.Unlock()
		if !ok {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		http.Redirect(w, r, p.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	c := newCaller(t, a2acall.Options{})
	if _, _, err := c.send(t, a2acall.SendRequest{URL: gate, Text: "hi"}); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("first call: %v", err)
	}
	up.Lock()
	ready = true
	up.Unlock()
	reply, _, err := c.send(t, a2acall.SendRequest{URL: gate, Text: "hi"})
	if err != nil || reply.AgentName != "purple" {
		t.Fatalf("second call: %+v %v", reply, err)
	}
}

// TestMessengerCloseEndsCalls: Close ends the calls under way, with an error
// that says so.
func TestMessengerCloseEndsCalls(t *testing.T) {
	before := runtime.NumGoroutine()
	p := a2atest.Start(t, a2atest.Options{Fault: a2atest.FaultHang, Streaming: true})
	c := newCaller(t, a2acall.Options{})
	done := make(chan error, 1)
	go func() {
		_, _, err := c.send(t, a2acall.SendRequest{URL: p.URL, Text: "hi"})
		done <- err
	}()
	for len(p.Calls()) == 0 {
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.m.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, a2acall.ErrClosed) || !strings.Contains(err.Error(), p.URL) {
			t.Errorf("call under way at Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not end the call under way")
	}
	p.Close()
	testenv.CheckNoGoroutineLeak(t, before)
}
