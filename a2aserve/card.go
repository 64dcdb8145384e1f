package a2aserve

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// CardMaxAge is how long clients may cache the agent card.
const CardMaxAge = 5 * time.Minute

// cardHandler serves the encoded agent card with the caching headers A2A
// 1.0 §8.6.1 asks for (Agent Card HTTP endpoints "SHOULD include a
// Cache-Control response header with a max-age directive", "SHOULD include
// an ETag response header derived from the Agent Card's version field or a
// hash of the card content", "MAY include a Last-Modified response header";
// a2a-go v2.3.1's card handler sets none): the ETag is a hash of the card's
// bytes, Last-Modified the time the handler was made,
// and a request whose If-None-Match or If-Modified-Since still holds gets
// 304 Not Modified. HEAD is answered as GET without the body, OPTIONS as
// a CORS preflight, as a2a-go answers it; other methods get 405.
type cardHandler struct {
	body     []byte
	etag     string
	modified time.Time
}

func newCardHandler(body []byte, modified time.Time) *cardHandler {
	sum := sha256.Sum256(body)
	return &cardHandler{
		body:     body,
		etag:     `"` + hex.EncodeToString(sum[:16]) + `"`,
		modified: modified.UTC().Truncate(time.Second),
	}
}

func (c *cardHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// The card is public: any page may read it, without credentials.
	h.Set("Access-Control-Allow-Origin", "*")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		h.Set("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
		h.Set("Access-Control-Allow-Headers", "Content-Type, If-None-Match, If-Modified-Since")
		h.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		methodNotAllowed(w, "GET, HEAD, OPTIONS")
		return
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "public, max-age="+strconv.Itoa(int(CardMaxAge/time.Second)))
	h.Set("ETag", c.etag)
	// ServeContent answers the conditional requests (If-None-Match before
	// If-Modified-Since, RFC 9110 §13.2.2), HEAD and ranges.
	http.ServeContent(w, r, "", c.modified, bytes.NewReader(c.body))
}

// methodNotAllowed answers 405 naming the methods allowed.
func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
}
