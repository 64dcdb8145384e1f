package otelmap

import "sync"

// This file: the buffers request bodies are read into, kept for the next
// request. A protobuf body is garbage once decoded (SpansFromProto copies
// every string it keeps), and under a steady stream of exports the bodies
// were a third of what the receiver allocated: each one a fresh megabyte or
// more that the kernel had to zero and the collector had to account for,
// bringing the next collection of the whole held store closer.

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
