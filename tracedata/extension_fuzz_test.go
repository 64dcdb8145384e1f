package tracedata_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/coordbench/coordbench/tracedata"
)

// FuzzDecodeResponseTrace holds the decoder to two promises on untrusted
// input: it never panics, and whatever it accepts is a fixed point of
// encode-then-decode, so a trace coordbench read can be handed on (the base
// purple agent re-encodes steps) without changing or becoming unreadable.
func FuzzDecodeResponseTrace(f *testing.F) {
	fixtures, err := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range fixtures {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		`{"steps":[{"step_id":"a","call_type":"TOOL","start_time":"2025-06-03T09:14:06Z","latency":0.0000001}]}`,
		`{"steps":[{"step_id":"a","call_type":2,"start_time":1748941446.123456789,"latency_ms":"1e3"}]}`,
		`{"traceId":7,"steps":[{"stepId":1,"callType":"agent","stepAction":{"agentInvocation":{"agentName":"x"}}}]}`,
		`{"steps":[{"step_id":"a","call_type":"HOST","parameters":{},"error":{"e":[1,2.50]}}]}`,
		`null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rt, err := tracedata.DecodeResponseTrace(data)
		if err != nil {
			if rt != nil {
				t.Fatalf("error %v came with a trace", err)
			}
			return
		}
		enc, err := tracedata.EncodeResponseTrace(rt)
		if err != nil {
			t.Fatalf("decoded trace does not encode: %v\n%+v", err, rt)
		}
		again, err := tracedata.DecodeResponseTrace(enc)
		if err != nil {
			t.Fatalf("re-encoded trace does not decode: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(rt, again) {
			t.Fatalf("re-decoded trace differs:\n first %+v\nsecond %+v\nencoded %s", rt, again, enc)
		}
	})
}
