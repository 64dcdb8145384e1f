package a2acall

import (
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
)

// This file: the URL attributes of the HTTP client span, computed once per
// URL. A client of one participant posts every call to the same URL, and
// writing it out again (url.full) and splitting its host and port is the
// larger part of the span's request attributes.

// urlAttrCache holds the URL attributes of the last URL a transport's
// recording spans requested; a different URL replaces it. It is safe for
// concurrent use (calls to several participants only replace each other's
// entry).
type urlAttrCache struct {
	last atomic.Pointer[urlAttrs]
}

// urlAttrs are the attributes appendURLAttrs gives a URL; key is the URL
// without its user info, which url.full leaves out.
type urlAttrs struct {
	key   url.URL
	attrs []attribute.KeyValue
}

// appendURLAttrs appends what appendURLAttrs(attrs, r) does, from the
// cache when r's URL is the last one seen. A request without a URL host
// (whose server.address comes from its Host header) is not cached.
func (c *urlAttrCache) appendURLAttrs(attrs []attribute.KeyValue, r *http.Request) []attribute.KeyValue {
	if c == nil || r.URL == nil || r.URL.Host == "" {
		return appendURLAttrs(attrs, r)
	}
	key := *r.URL
	key.User = nil
	if last := c.last.Load(); last != nil && last.key == key {
		return append(attrs, last.attrs...)
	}
	n := len(attrs)
	attrs = appendURLAttrs(attrs, r)
	c.last.Store(&urlAttrs{key: key, attrs: slices.Clip(slices.Clone(attrs[n:]))})
	return attrs
}
