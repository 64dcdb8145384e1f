package otlpreceiver

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
)

// This file: reading request bodies within their limits, and the buffers
// they are read into, kept for the next request. A protobuf body is
// garbage once its spans are stored (the store copies every string it
// keeps), and under a steady stream of exports the bodies were a third of
// what the receiver allocated: each one a fresh megabyte or more that the
// kernel had to zero and the collector had to account for.

// bodyRound is the step body buffers are sized in, so that a buffer freed
// by one request fits the next of about the same size.
const bodyRound = 64 << 10

// maxPooledBody is the largest buffer kept: larger bodies are rare and a
// pooled one would hold its memory past the burst that needed it.
const maxPooledBody = maxPrealloc + bodyRound

// bodyPool holds body buffers between requests. The zero value is ready.
type bodyPool struct {
	p sync.Pool // of *[]byte, each empty with a capacity of at most maxPooledBody
}

// bodyBufferSize is the capacity of the buffer a body of n bytes (the
// declared length plus one, see readLimited) starts in.
func bodyBufferSize(n int64) int64 {
	return (n + bodyRound - 1) / bodyRound * bodyRound
}

// get returns an empty buffer of capacity exactly size: a pooled one when
// one is large enough, a new one otherwise. The capacity is cut to size
// so that what the request holds is what its lease counts.
func (bp *bodyPool) get(size int64) []byte {
	if bp != nil {
		if v, _ := bp.p.Get().(*[]byte); v != nil {
			if b := *v; int64(cap(b)) >= size {
				return b[:0:size]
			}
			bp.p.Put(v) // too small for this one; maybe not for the next
		}
	}
	return make([]byte, 0, size)
}

// put keeps b for a later request. The caller must hold no reference into
// b afterwards.
func (bp *bodyPool) put(b []byte) {
	if bp == nil || cap(b) == 0 || cap(b) > maxPooledBody {
		return
	}
	b = b[:0]
	bp.p.Put(&b)
}

// errBodyTooLarge is returned by readLimited when the reader holds more
// than the limit.
type errBodyTooLarge struct {
	what  string
	limit int64
}

func (e *errBodyTooLarge) Error() string {
	return fmt.Sprintf("%s exceeds the limit of %d bytes", e.what, e.limit)
}

// readBody reads the whole body, decompressed, within the limits. The wire
// bytes pass through http.MaxBytesReader (which also tells the server to
// close the connection rather than drain an oversized body); the
// decompressed bytes are counted as they come, so a gzip bomb is stopped
// after at most MaxDecompressedBytes+1 bytes were inflated.
func (r *Receiver) readBody(w http.ResponseWriter, req *http.Request, gz bool, l *lease) ([]byte, error) {
	var body io.Reader = ctxReader{req.Context(), http.MaxBytesReader(w, req.Body, r.limits.MaxBodyBytes)}
	if !gz {
		limit := min(r.limits.MaxBodyBytes, r.limits.MaxDecompressedBytes)
		return readLimited(body, limit, req.ContentLength, "request body", l, &r.bodies)
	}
	zr, err := gzip.NewReader(body)
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	defer zr.Close()
	b, err := readLimited(zr, r.limits.MaxDecompressedBytes, 0, "decompressed request body", l, &r.bodies)
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return b, nil
}

func (r *Receiver) classifyReadError(ctx context.Context, err error) *rejection {
	var tooBig *errBodyTooLarge
	var maxBytes *http.MaxBytesError
	var over *errOverloaded
	switch {
	case ctx.Err() != nil:
		return r.canceled(ctx.Err())
	case errors.As(err, &over):
		return r.overloaded(over)
	case errors.As(err, &tooBig):
		return r.tooLarge(tooBig.Error())
	case errors.As(err, &maxBytes):
		return r.tooLarge(fmt.Sprintf("request body exceeds the limit of %d bytes", maxBytes.Limit))
	default:
		return r.malformed("read request body: " + err.Error())
	}
}

// maxPrealloc caps what a declared Content-Length makes us allocate before
// the bytes arrive, so that idle connections claiming large bodies cost
// little.
const maxPrealloc = 4 << 20

// readLimited reads r to EOF into one buffer of at most limit bytes. The
// buffer starts at the declared size when there is one (up to maxPrealloc)
// and grows by doubling, never past limit+1 bytes: the one byte more is how
// an over-limit body is told from one exactly at the limit. Each buffer is
// taken from l before it is allocated (errOverloaded when l's budget is
// spent); a buffer outgrown is given back once copied.
func readLimited(r io.Reader, limit, declared int64, what string, l *lease, pool *bodyPool) ([]byte, error) {
	size := bodyStartSize(limit, declared)
	if !l.grow(size) {
		return nil, &errOverloaded{l.b.limit}
	}
	buf := pool.get(size)
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) > limit {
				return nil, &errBodyTooLarge{what, limit}
			}
			next := min(2*int64(cap(buf))+1, limit+1)
			if !l.grow(next) {
				return nil, &errOverloaded{l.b.limit}
			}
			grown := make([]byte, len(buf), next)
			copy(grown, buf)
			l.shrink(int64(cap(buf)))
			buf = grown
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return nil, &errBodyTooLarge{what, limit}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// bodyStartSize is the capacity readLimited starts with: the declared
// length and one (the read that meets EOF then needs no growth), up to
// maxPrealloc, in bodyRound steps so that pooled buffers fit the next body
// of about the same size; 64 KiB when no length is declared; never more
// than limit+1.
func bodyStartSize(limit, declared int64) int64 {
	size := int64(64 << 10)
	if declared > 0 {
		size = bodyBufferSize(min(declared+1, maxPrealloc))
	}
	return min(size, limit+1)
}

// ctxReader stops reading once ctx has ended, so that decompressing a large
// body does not outlive its request.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
