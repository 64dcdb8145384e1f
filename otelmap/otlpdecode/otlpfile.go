package otlpdecode

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Limits on OTLP JSON files. A file is read whole (a single document) or a
// line at a time (JSON Lines), so these bound memory, not time.
const (
	MaxOTLPFileBytes = 1 << 30
	MaxOTLPLineBytes = 256 << 20
)

// ReadOTLPJSONFile reads an OTLP JSON trace file; see ReadOTLPJSON. Errors
// name the file as path was given.
func ReadOTLPJSONFile(path string) ([]ptrace.Traces, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read OTLP JSON: %w", err)
	}
	defer f.Close()
	return ReadOTLPJSON(f, path)
}

// ReadOTLPJSON reads spans exported as OTLP JSON, in any of the three forms
// they are found in:
//   - one ExportTraceServiceRequest document, compact or pretty-printed
//     over many lines (what `curl` of an OTLP/HTTP JSON body saves);
//   - one document per line, JSON Lines (the Collector's file exporter);
//   - Jaeger's /api/v3/traces answer, which wraps the document as
//     {"result": {"resourceSpans": [...]}}, once or once per line.
//
// It returns one ptrace.Traces per document that holds spans. The OTLP JSON
// itself is decoded by pdata (ptrace.JSONUnmarshaler). Errors name the file
// (name) and, where it can be told, the line, and say what is wrong; a file
// with no spans at all is an error, since assessing it would silently
// assess nothing. MaxOTLPFileBytes and MaxOTLPLineBytes apply.
func ReadOTLPJSON(r io.Reader, name string) ([]ptrace.Traces, error) {
	return readOTLPJSON(r, name, MaxOTLPFileBytes, MaxOTLPLineBytes)
}

var errFileTooLarge = errors.New("file too large")

// fileLimitReader fails with errFileTooLarge once more than max bytes were
// read, so a JSON Lines file is refused at the limit, not after it was all
// parsed.
type fileLimitReader struct {
	r      io.Reader
	n, max int64
}

func (l *fileLimitReader) Read(p []byte) (int, error) {
	if l.n > l.max {
		return 0, errFileTooLarge
	}
	if left := l.max - l.n + 1; int64(len(p)) > left {
		p = p[:left]
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	if l.n > l.max {
		return n, errFileTooLarge
	}
	return n, err
}

var errLineTooLong = errors.New("line too long")

// otlpFile is the state of one ReadOTLPJSON call.
type otlpFile struct {
	name    string
	maxFile int64
	maxLine int64
	br      *bufio.Reader
	line    []byte // reused: pdata copies what it keeps
	lineNo  int
	out     []ptrace.Traces
	spans   int
}

func readOTLPJSON(r io.Reader, name string, maxFile, maxLine int64) ([]ptrace.Traces, error) {
	f := &otlpFile{
		name:    name,
		maxFile: maxFile,
		maxLine: maxLine,
		br:      bufio.NewReaderSize(&fileLimitReader{r: r, max: maxFile}, 64<<10),
	}
	if err := f.read(); err != nil {
		return nil, err
	}
	if f.spans == 0 {
		return nil, fmt.Errorf("%s: no spans found: expected OTLP JSON (an ExportTraceServiceRequest with resourceSpans)", name)
	}
	return f.out, nil
}

func (f *otlpFile) read() error {
	// The first line that is not blank tells the form: a complete JSON
	// value means one document per line, anything else the start of a
	// document spread over many lines.
	for {
		eof, err := f.nextLine()
		if err != nil {
			return err
		}
		if f.lineNo == 1 {
			f.line = bytes.TrimPrefix(f.line, []byte("\uFEFF")) // a BOM some editors write
		}
		if len(bytes.TrimSpace(f.line)) > 0 {
			break
		}
		if eof {
			return fmt.Errorf("%s: empty file: expected OTLP JSON", f.name)
		}
	}
	if !json.Valid(f.line) {
		return f.readDocument()
	}
	for {
		if len(bytes.TrimSpace(f.line)) > 0 {
			if err := f.decode(f.line, f.lineNo, true); err != nil {
				return err
			}
		}
		eof, err := f.nextLine()
		if err != nil {
			return err
		}
		if eof && len(f.line) == 0 {
			return nil
		}
	}
}

// readDocument reads the rest of the file and decodes it, with the lines
// already read, as one document.
func (f *otlpFile) readDocument() error {
	first := f.lineNo
	doc := append(slices.Clone(f.line), '\n')
	rest, err := io.ReadAll(f.br)
	if err != nil {
		return f.readError(err)
	}
	doc = append(doc, rest...)
	return f.decode(doc, first, false)
}

// nextLine reads one line into f.line, without its end of line. eof is
// true when the file ended with this line.
func (f *otlpFile) nextLine() (eof bool, err error) {
	f.line = f.line[:0]
	f.lineNo++
	for {
		frag, err := f.br.ReadSlice('\n')
		if int64(len(f.line)+len(frag)) > f.maxLine+1 { // +1: the '\n'
			return false, fmt.Errorf("%s line %d: %w: longer than the limit of %d bytes", f.name, f.lineNo, errLineTooLong, f.maxLine)
		}
		f.line = append(f.line, frag...)
		switch {
		case err == nil:
			f.line = bytes.TrimRight(f.line, "\r\n")
			return false, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			f.line = bytes.TrimRight(f.line, "\r\n")
			return true, nil
		default:
			return false, f.readError(err)
		}
	}
}

func (f *otlpFile) readError(err error) error {
	if errors.Is(err, errFileTooLarge) {
		return fmt.Errorf("%s: larger than the limit of %d bytes", f.name, f.maxFile)
	}
	return fmt.Errorf("%s: read: %w", f.name, err)
}

// decode decodes one document that starts on line first. perLine says the
// document is one line of JSON Lines, so that every error names that line.
func (f *otlpFile) decode(doc []byte, first int, perLine bool) error {
	where := func(line int) string {
		if line > 0 {
			return fmt.Sprintf("%s line %d", f.name, line)
		}
		return f.name
	}
	docLine := 0
	if perLine {
		docLine = first
	}
	if !json.Valid(doc) {
		var serr *json.SyntaxError
		if err := json.Unmarshal(doc, new(json.RawMessage)); errors.As(err, &serr) {
			line := first + bytes.Count(doc[:min(int(serr.Offset), len(doc))], []byte("\n"))
			return fmt.Errorf("%s: invalid JSON: %s", where(line), serr.Error())
		}
		return fmt.Errorf("%s: invalid JSON", where(docLine))
	}
	if p := jsonSkipSpace(doc, 0); doc[p] != '{' {
		return fmt.Errorf("%s: expected a JSON object holding resourceSpans, found %s", where(docLine), jsonKind(doc[p]))
	}
	inner, at, key := jaegerWrapped(doc)
	switch key {
	case "error":
		return fmt.Errorf("%s: %s", where(docLine), jaegerError(inner))
	case "result":
		first += bytes.Count(doc[:at], []byte("\n"))
		doc = inner
	}
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces(doc)
	if err != nil {
		line, msg := explainDecodeError(doc, err)
		if line > 0 && !perLine {
			docLine = first + line - 1
		}
		return fmt.Errorf("%s: %s", where(docLine), msg)
	}
	if td.ResourceSpans().Len() == 0 {
		// pdata skips fields it does not know, so a document of another
		// kind decodes as an empty one. Look at what it held instead.
		if result, err := f.otherDocument(doc); err != nil {
			return fmt.Errorf("%s: %w", where(docLine), err)
		} else if result != nil {
			return f.decode(result, first, perLine)
		}
		return nil
	}
	f.out = append(f.out, td)
	f.spans += td.SpanCount()
	return nil
}

// otherDocument looks at the top-level keys of a document that decoded to
// no spans. A Jaeger wrapper whose "result" is not the first key yields
// that result; a document that is JSON but not OTLP yields an error naming
// its keys; an empty request ({} or "resourceSpans": []) yields nothing.
func (f *otlpFile) otherDocument(doc []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		return nil, fmt.Errorf("expected a JSON object holding resourceSpans: %w", err)
	}
	if res, ok := top["result"]; ok {
		return res, nil
	}
	if e, ok := top["error"]; ok {
		return nil, errors.New(jaegerError(e))
	}
	_, camel := top["resourceSpans"]
	_, snake := top["resource_spans"]
	if camel || snake || len(top) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(top))
	for k := range top {
		keys = append(keys, strconv.Quote(k))
	}
	slices.Sort(keys)
	msg := fmt.Sprintf("not OTLP JSON: no resourceSpans (top-level keys %s)", strings.Join(keys, ", "))
	if _, ok := top["data"]; ok {
		msg += "; this looks like Jaeger's /api/traces answer, which is not OTLP: fetch /api/v3/traces instead"
	}
	return nil, errors.New(msg)
}

// jaegerWrapped recognises Jaeger's /api/v3 envelope when its key comes
// first, as Jaeger writes it, and returns the wrapped value and its offset
// in doc: {"result": {...}} or {"error": {...}}. Anything else returns key
// "".
func jaegerWrapped(doc []byte) (inner []byte, at int, key string) {
	p := jsonSkipSpace(doc, 0)
	if p >= len(doc) || doc[p] != '{' {
		return nil, 0, ""
	}
	p = jsonSkipSpace(doc, p+1)
	for _, k := range []string{"result", "error"} {
		quoted := `"` + k + `"`
		if !bytes.HasPrefix(doc[p:], []byte(quoted)) {
			continue
		}
		q := jsonSkipSpace(doc, p+len(quoted))
		end := bytes.LastIndexByte(doc, '}')
		if q >= len(doc) || doc[q] != ':' || end <= q {
			return nil, 0, ""
		}
		at = jsonSkipSpace(doc, q+1)
		return bytes.TrimSpace(doc[at:end]), at, k
	}
	return nil, 0, ""
}

// jsonKind names the kind of JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

func jsonSkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// jaegerError words Jaeger's error answer, {"error": {"httpCode": 404,
// "message": "trace not found"}}.
func jaegerError(raw []byte) string {
	var e struct {
		HTTPCode int    `json:"httpCode"`
		Message  string `json:"message"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Message == "" {
		return "Jaeger answered with an error, not traces"
	}
	if e.HTTPCode != 0 {
		return fmt.Sprintf("Jaeger answered with an error, not traces: %s (HTTP %d)", e.Message, e.HTTPCode)
	}
	return "Jaeger answered with an error, not traces: " + e.Message
}

// diagSpan and diagDoc are the little of a document that explainDecodeError
// reads to say which id pdata refused, under both spellings pdata accepts
// (lowerCamelCase and the proto's snake_case). They are never used to
// decode spans.
type diagSpan struct {
	TraceID       string `json:"traceId"`
	TraceIDSnake  string `json:"trace_id"`
	SpanID        string `json:"spanId"`
	SpanIDSnake   string `json:"span_id"`
	ParentSpanID  string `json:"parentSpanId"`
	ParentIDSnake string `json:"parent_span_id"`
	Name          string `json:"name"`
}

type diagScopeSpans struct {
	Spans []diagSpan `json:"spans"`
}

type diagResourceSpans struct {
	ScopeSpans      []diagScopeSpans `json:"scopeSpans"`
	ScopeSpansSnake []diagScopeSpans `json:"scope_spans"`
}

type diagDoc struct {
	ResourceSpans      []diagResourceSpans `json:"resourceSpans"`
	ResourceSpansSnake []diagResourceSpans `json:"resource_spans"`
}

// explainDecodeError turns pdata's error into a sentence. pdata's JSON
// errors name the decoder routine, not the field, so for the commonest
// fault, a malformed id, the ids are checked again here to name the field,
// the value and the span, and to find the line (1-based within doc; 0 when
// unknown). Other faults keep pdata's words.
func explainDecodeError(doc []byte, err error) (line int, msg string) {
	fallback := "invalid OTLP JSON: " + cleanDecodeError(err)
	var d diagDoc
	if json.Unmarshal(doc, &d) != nil {
		return 0, fallback
	}
	for _, rs := range append(d.ResourceSpans, d.ResourceSpansSnake...) {
		for _, ss := range append(rs.ScopeSpans, rs.ScopeSpansSnake...) {
			for _, sp := range ss.Spans {
				for _, id := range []struct {
					field, value string
					size         int
					optional     bool
				}{
					{"trace id", sp.TraceID + sp.TraceIDSnake, 16, false},
					{"span id", sp.SpanID + sp.SpanIDSnake, 8, false},
					{"parent span id", sp.ParentSpanID + sp.ParentIDSnake, 8, true},
				} {
					why := badID(id.value, id.size)
					if why == "" || (id.value == "" && id.optional) {
						continue
					}
					return lineOfValue(doc, id.value), fmt.Sprintf("invalid %s %q in span %q: %s", id.field, id.value, sp.Name, why)
				}
			}
		}
	}
	return 0, fallback
}

// badID says what is wrong with an OTLP JSON id of size bytes, or "" if
// pdata would accept it. An empty id decodes (as the invalid zero id, which
// the store rejects), so it is not a decoding fault.
func badID(s string, size int) string {
	if s == "" {
		return ""
	}
	if _, err := hex.DecodeString(s); err == nil && len(s) == 2*size {
		return ""
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == size {
		return fmt.Sprintf("want %d hex digits; this looks base64-encoded (protobuf's own JSON mapping), which OTLP JSON does not use", 2*size)
	}
	return fmt.Sprintf("want %d hex digits", 2*size)
}

// lineOfValue returns the 1-based line of the first occurrence of value as
// a JSON string that is an object member's value, or 0.
func lineOfValue(doc []byte, value string) int {
	quoted, err := json.Marshal(value)
	if err != nil {
		return 0
	}
	for off := 0; off < len(doc); {
		i := bytes.Index(doc[off:], quoted)
		if i < 0 {
			return 0
		}
		at := off + i
		j := at - 1
		for j >= 0 && (doc[j] == ' ' || doc[j] == '\t' || doc[j] == '\n' || doc[j] == '\r') {
			j--
		}
		if j >= 0 && doc[j] == ':' {
			return 1 + bytes.Count(doc[:at], []byte("\n"))
		}
		off = at + 1
	}
	return 0
}
