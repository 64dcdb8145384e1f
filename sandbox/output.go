package sandbox

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
)

// cappedOutput keeps the first limit bytes of a stream, counts the rest,
// and closes over once the stream passes limit.
type cappedOutput struct {
	limit int64
	buf   bytes.Buffer
	total int64
	over  chan struct{}
	once  sync.Once
}

// drain reads r until EOF or its deadline.
func (c *cappedOutput) drain(r io.Reader) {
	b := make([]byte, 32<<10)
	for {
		n, err := r.Read(b)
		if n > 0 {
			c.total += int64(n)
			if room := c.limit - int64(c.buf.Len()); room > 0 {
				c.buf.Write(b[:min(int64(n), room)])
			}
			if c.total > c.limit {
				c.once.Do(func() { close(c.over) })
			}
		}
		if err != nil {
			return
		}
	}
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// clipText keeps the first n runes of s, marking a cut.
func clipText(s string, n int) string {
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + "…[truncated]"
		}
		count++
	}
	return s
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
