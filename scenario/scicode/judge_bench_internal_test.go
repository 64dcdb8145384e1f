//go:build linux

package scicode

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"
)

// npyFloat64 is a 1-d float64 array in numpy's .npy format.
func npyFloat64(v []float64) []byte {
	header := fmt.Sprintf("{'descr': '<f8', 'fortran_order': False, 'shape': (%d,), }", len(v))
	header += strings.Repeat(" ", (64-(10+len(header)+1)%64)%64) + "\n"
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	_ = binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	_ = binary.Write(&b, binary.LittleEndian, v)
	return b.Bytes()
}

// BenchmarkJudgeRequest is one judge request of step 1.1 (three cases,
// values of the target's shape that fail: the comparison, the structure
// rule and SciCode's own comparison again), and the empty request
// "hello": the judge's cost per request, the fork's included.
func BenchmarkJudgeRequest(b *testing.B) {
	j, p, step, plan, targets := judgeForTest(b)
	var records bytes.Buffer
	for c := 1; c <= 3; c++ {
		records.Write(frame(fmt.Sprintf(`{"t": "begin", "case": %d}`, c)))
		records.Write(frame(fmt.Sprintf(`{"t": "assert", "case": %d, "assertion": 0, "leaves": [{"npy": 0}]}`, c), npyFloat64(make([]float64, 7))))
		records.Write(frame(fmt.Sprintf(`{"t": "end", "case": %d}`, c)))
	}
	records.Write(frame(`{"t": "done"}`))
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	b.Run("judge", func(b *testing.B) {
		for b.Loop() {
			got, err := j.judge(ctx, p, step, targets, plan, records.Bytes(), nil)
			if err != nil || got.Passed || got.Failure == nil || got.Failure.Kind != "failed" {
				b.Fatalf("%+v, %v", got, err)
			}
		}
	})
	b.Run("hello", func(b *testing.B) {
		for b.Loop() {
			if err := j.call(ctx, map[string]any{"op": "hello"}, nil, &judgeReply{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
