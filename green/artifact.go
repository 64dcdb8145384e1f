package green

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/coordbench/coordbench/report"
)

// The result artifact (docs/green-agent.md#the-result-artifact): one artifact
// named Result, added before the final completed status, with a text part (the
// Markdown summary, for people; never valid JSON, so a client that parses the
// first part that decodes as JSON finds the data part) and a data part (the JSON
// result, for programs and leaderboards).

// ResultArtifactName is the name of the artifact an assessment ends with.
const ResultArtifactName = "Result"

// Media types of the result artifact's parts.
const (
	MediaTypeMarkdown = "text/markdown"
	MediaTypeJSON     = "application/json"
)

// ResultArtifact builds the Result artifact of res.
func ResultArtifact(res *report.Result) (*a2a.Artifact, error) {
	data, err := resultData(res)
	if err != nil {
		return nil, err
	}
	text := a2a.NewTextPart(report.Summary(res))
	text.MediaType = MediaTypeMarkdown
	dataPart := a2a.NewDataPart(data)
	dataPart.MediaType = MediaTypeJSON
	return &a2a.Artifact{
		ID:          a2a.NewArtifactID(),
		Name:        ResultArtifactName,
		Description: "coordbench assessment result: a Markdown summary and the JSON result (schema " + report.Schema + ")",
		Parts:       a2a.ContentParts{text, dataPart},
	}, nil
}

// ResultArtifactEvent is the artifact event that delivers res, whole, in
// one chunk.
func ResultArtifactEvent(info a2a.TaskInfoProvider, res *report.Result) (*a2a.TaskArtifactUpdateEvent, error) {
	art, err := ResultArtifact(res)
	if err != nil {
		return nil, err
	}
	ti := info.TaskInfo()
	return &a2a.TaskArtifactUpdateEvent{
		TaskID:    ti.TaskID,
		ContextID: ti.ContextID,
		Artifact:  art,
		LastChunk: true,
	}, nil
}

// resultData is res as a generic JSON object. A data part must hold an
// object (A2A 0.3 clients expect a map), and the round trip keeps exactly
// the JSON that Result encodes to, evaluator results included.
func resultData(res *report.Result) (map[string]any, error) {
	if res == nil {
		return nil, fmt.Errorf("result artifact: no result")
	}
	raw, err := jsonMarshal(res)
	if err != nil {
		return nil, fmt.Errorf("result artifact: %w", err)
	}
	var data map[string]any
	if err := json.Unmarshal(raw, &data); err != nil {
		return nil, fmt.Errorf("result artifact: %w", err)
	}
	return data, nil
}

// jsonMarshal encodes v without escaping <, > and &, which appear in
// summaries and error texts and read badly as \u003c.
func jsonMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// AgentBeatsResults is the results file AgentBeats collects from a run:
// the participants and one result per assessment.
type AgentBeatsResults struct {
	Participants map[string]string `json:"participants"`
	Results      []*report.Result  `json:"results"`
}
