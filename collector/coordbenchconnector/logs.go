package coordbenchconnector

import (
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/coordbench/coordbench/report"
)

// The log record of an assessed trace (README.md).
const (
	// eventName is the record's event name.
	eventName  = "coordbench.trace.assessed"
	attrSchema = "coordbench.schema"
)

// bodyBuffers hold the buffers record bodies are encoded in, grown to
// the largest body seen: the body's string is then its one allocation.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// logRecord is one record carrying tr's coordbench.result/v2 task JSON as
// its body, with the trace's id (and its root span's, when held) on the
// record so a backend shows the verdict next to the trace.
func logRecord(res pcommon.Resource, tr *report.TaskResult, r released, spans int, now time.Time) (plog.Logs, error) {
	buf := bodyBuffers.Get().(*[]byte)
	defer bodyBuffers.Put(buf)
	body, err := tr.AppendJSON((*buf)[:0])
	if err != nil {
		return plog.Logs{}, fmt.Errorf("encode task result of trace %s: %w", r.id, err)
	}
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	res.CopyTo(rl.Resource())
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(scopeName)
	rec := sl.LogRecords().AppendEmpty()
	ts := pcommon.NewTimestampFromTime(now)
	rec.SetTimestamp(ts)
	rec.SetObservedTimestamp(ts)
	rec.SetSeverityNumber(plog.SeverityNumberInfo)
	rec.SetSeverityText("INFO")
	rec.SetEventName(eventName)
	rec.SetTraceID(pcommon.TraceID(r.id))
	if root, ok := r.spans.Root(); ok {
		rec.SetSpanID(pcommon.SpanID(root))
	}
	rec.Body().SetStr(string(body))
	*buf = body
	label, evidence := labelAndEvidence(tr)
	attrs := rec.Attributes()
	attrs.PutStr(attrSchema, report.Schema)
	attrs.PutStr(attrLabel, label)
	attrs.PutStr(attrEvidence, evidence)
	attrs.PutStr(attrCompletion, r.completion)
	attrs.PutInt("coordbench.trace.spans", int64(spans))
	return ld, nil
}
