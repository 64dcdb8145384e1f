package coordination

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/evals"
	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/internal/textutil"
)

// Reading and scoring a participant's answer.

// coordAnswer is a participant's answer as read.
type coordAnswer struct {
	Decision       string
	Recommendation *float64
	Scores         map[string]float64
	Rationale      string
	// Source says where the decision was found: "data" (a data part),
	// "json" (a JSON object in the text), "fenced_json" (one in a ``` block)
	// or "word" (a bare accept/reject).
	Source string
	// Problems are parts of the answer that were ignored, and why.
	Problems []string
}

// States of a participant's task that mean it gave no answer.
var coordFailedStates = []string{"failed", "rejected", "canceled", "cancelled", "auth-required", "input-required", "unknown"}

// coordState normalises an A2A task state: 1.0 writes TASK_STATE_FAILED,
// 0.3 writes failed.
func coordState(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "task_state_")
	return strings.ReplaceAll(s, "_", "-")
}

// coordSummaryChars bounds the excerpt of an unreadable answer in the
// summary.
const coordSummaryChars = 200

// answerRule says which answers count (config.delivery): the review
// submitted through the tool, when any, else the reply's when text counts.
type answerRule struct {
	submitted *coordAnswer
	text      bool
}

// scoreCoordReply turns the participant's answer into the task's outcome.
func scoreCoordReply(t *Task, role string, reply *a2acall.Reply, sendErr error, rule answerRule) *evals.Outcome {
	sc := &t.Scenario
	expected := sc.Expected.Decision
	scale := sc.Paper.RecommendationScale
	decisionSource := "venue"
	if sc.Paper.Decision == nil {
		decisionSource = fmt.Sprintf("derived: normalised mean recommendation >= %g", groundtruth.DerivedAcceptThreshold)
	}
	details := map[string]any{
		"paper":                           sc.Paper.Ref(),
		"title":                           sc.Paper.Title,
		"expected_decision":               expected,
		"expected_decision_source":        decisionSource,
		"paper_mean_recommendation":       sc.Paper.MeanRecommendation,
		"paper_recommendation_scale":      fmt.Sprintf("%g-%g", scale.Min, scale.Max),
		"paper_normalized_recommendation": sc.Paper.NormalizedRecommendation,
		"entry_role":                      role,
		"title_only":                      t.Paper == nil,
	}
	want := fmt.Sprintf("expected %s (reviewers' mean %.2f of %g)", expected, sc.Paper.MeanRecommendation, scale.Max)
	fail := func(summary string, err error) *evals.Outcome {
		details["error"] = err.Error()
		return &evals.Outcome{Success: false, Score: 0, Summary: want + "; " + summary, Details: details}
	}
	if rule.submitted != nil {
		// The review came through the tool: the reply, whatever it is,
		// does not change it.
		if sendErr != nil {
			details["reply_error"] = sendErr.Error()
		}
		return scoreCoordAnswer(t, role, *rule.submitted, want, details)
	}
	if sendErr != nil {
		// The Messenger returns the reply as well when the participant's
		// task ended failed, rejected or canceled: it answered, but not
		// with a review.
		if reply != nil {
			if reply.State != "" {
				details["state"] = reply.State
			}
			return fail(fmt.Sprintf("%s's task did not complete: %v", role, sendErr), sendErr)
		}
		return fail(fmt.Sprintf("%s did not answer: %v", role, sendErr), sendErr)
	}
	if reply == nil {
		err := errors.New("no reply")
		return fail(fmt.Sprintf("%s did not answer: %v", role, err), err)
	}
	if reply.AgentName != "" {
		details["agent"] = reply.AgentName
	}
	if reply.State != "" {
		details["state"] = reply.State
	}
	if reply.TaskID != "" {
		details["a2a_task_id"] = reply.TaskID
	}
	if reply.ContextID != "" {
		details["context_id"] = reply.ContextID
	}
	details["extension_steps"] = reply.ExtensionSteps
	if st := coordState(reply.State); slices.Contains(coordFailedStates, st) {
		err := fmt.Errorf("the participant's task ended in state %s", st)
		return fail(fmt.Sprintf("%s ended in state %s: %s", role, st, coordExcerpt(reply)), err)
	}
	if !rule.text {
		err := fmt.Errorf("no review was submitted through %s (config.delivery is mcp: the reply's text is not read)", ToolSubmitReview)
		return fail(fmt.Sprintf("%s submitted no review", role), err)
	}
	ans, err := parseCoordAnswer(reply)
	if err != nil {
		return fail(fmt.Sprintf("could not read a decision from %s's answer (%v): %s", role, err, coordExcerpt(reply)), err)
	}
	return scoreCoordAnswer(t, role, ans, want, details)
}

// scoreCoordAnswer scores a review read from any road.
func scoreCoordAnswer(t *Task, role string, ans coordAnswer, want string, details map[string]any) *evals.Outcome {
	sc := &t.Scenario
	expected := sc.Expected.Decision
	correct := ans.Decision == expected
	score := 0.0
	if correct {
		score = coordDecisionWeight
	}
	details["decision"] = ans.Decision
	details["answer_source"] = ans.Source
	recText := "no usable recommendation"
	if ans.Recommendation != nil {
		rec := *ans.Recommendation
		norm := groundtruth.RecommendationScale{Min: coordRecMin, Max: coordRecMax}.Normalize(rec)
		delta := math.Abs(norm - sc.Paper.NormalizedRecommendation)
		score += coordRecommendationWeight * (1 - delta)
		details["recommendation"] = rec
		details["recommendation_normalized"] = coordRound(norm, 4)
		details["recommendation_delta"] = coordRound(delta, 4)
		recText = fmt.Sprintf("recommendation %g of 5", rec)
	}
	if len(ans.Scores) > 0 {
		details["scores"] = ans.Scores
	}
	if ans.Rationale != "" {
		details["rationale"] = textutil.Clip(ans.Rationale, 1000)
	}
	if len(ans.Problems) > 0 {
		details["answer_problems"] = ans.Problems
	}
	score = coordRound(score, 4)
	return &evals.Outcome{
		Success: correct,
		Score:   score,
		Summary: fmt.Sprintf("%s; %s answered %s, %s (score %.2f)", want, role, ans.Decision, recText, score),
		Details: details,
	}
}

func coordRound(x float64, n int) float64 {
	p := math.Pow(10, float64(n))
	return math.Round(x*p) / p
}

// coordExcerpt shows what came back, bounded, for a summary.
func coordExcerpt(reply *a2acall.Reply) string {
	text := strings.TrimSpace(reply.Text)
	if text == "" && len(reply.Data) > 0 {
		if b, err := json.Marshal(reply.Data); err == nil {
			text = string(b)
		}
	}
	if text == "" {
		return "(an empty answer)"
	}
	return strconv.Quote(textutil.Clip(strings.Join(strings.Fields(text), " "), coordSummaryChars))
}

// Bounds of the search for a JSON answer in free text.
const (
	coordMaxScanBytes  = 256 << 10
	coordMaxObjectTrys = 256
)

var (
	coordWordRE = regexp.MustCompile(`(?i)\b(accept(?:ed|ance)?|reject(?:ed|ion)?)\b`)
)

// parseCoordAnswer reads the decision from a reply: a data part holding a
// decision, else the first JSON object holding one in the text (fenced
// blocks first), else a bare accept or reject in the text.
func parseCoordAnswer(reply *a2acall.Reply) (coordAnswer, error) {
	for _, d := range reply.Data {
		if obj := coordFindDecisionObject(d, 0); obj != nil {
			return coordAnswerFrom(obj, "data")
		}
	}
	text := reply.Text
	if len(text) > coordMaxScanBytes {
		text = text[:coordMaxScanBytes]
	}
	for _, fc := range textutil.Fences(text) {
		if fc.Lang != "" && fc.Lang != "json" && fc.Lang != "jsonc" {
			continue
		}
		if obj := coordFirstObject(fc.Body); obj != nil {
			return coordAnswerFrom(obj, "fenced_json")
		}
	}
	if obj := coordFirstObject(text); obj != nil {
		return coordAnswerFrom(obj, "json")
	}
	return coordAnswerFromWords(text)
}

// coordFirstObject returns the first JSON object in text that holds a
// decision (at its top level or one level down, for answers wrapped as
// {"review": {...}}).
func coordFirstObject(text string) map[string]any {
	tries := 0
	for i := 0; i < len(text) && tries < coordMaxObjectTrys; i++ {
		if text[i] != '{' {
			continue
		}
		tries++
		var obj map[string]any
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		dec.UseNumber()
		if dec.Decode(&obj) != nil {
			continue
		}
		if found := coordFindDecisionObject(obj, 0); found != nil {
			return found
		}
		// Skip past the object: a decision nested deeper is not an answer.
		i += int(dec.InputOffset()) - 1
	}
	return nil
}

// coordFindDecisionObject returns obj when it has a "decision" key, or the
// first of its object values that does.
func coordFindDecisionObject(obj map[string]any, depth int) map[string]any {
	if obj == nil {
		return nil
	}
	for k := range obj {
		if strings.EqualFold(k, "decision") {
			return obj
		}
	}
	if depth > 0 {
		return nil
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys) // deterministic when several values qualify
	for _, k := range keys {
		if inner, ok := obj[k].(map[string]any); ok {
			if found := coordFindDecisionObject(inner, depth+1); found != nil {
				return found
			}
		}
	}
	return nil
}

// coordAnswerFrom reads an answer object; keys are matched
// case-insensitively.
func coordAnswerFrom(obj map[string]any, source string) (coordAnswer, error) {
	get := func(key string) (any, bool) {
		for k, v := range obj {
			if strings.EqualFold(k, key) {
				return v, true
			}
		}
		return nil, false
	}
	ans := coordAnswer{Source: source}
	dv, _ := get("decision")
	ds, ok := dv.(string)
	if !ok {
		return ans, fmt.Errorf("decision is %s, not a string", coordJSONType(dv))
	}
	d, err := coordDecisionWord(ds)
	if err != nil {
		return ans, fmt.Errorf("decision %q: %w", textutil.Clip(ds, 60), err)
	}
	ans.Decision = d
	if rv, present := get("recommendation"); present && rv != nil {
		x, ok := coordNumber(rv)
		switch {
		case !ok:
			ans.Problems = append(ans.Problems, fmt.Sprintf("recommendation %s is not a number; ignored", textutil.Clip(fmt.Sprint(rv), 40)))
		case x < coordRecMin || x > coordRecMax:
			ans.Problems = append(ans.Problems, fmt.Sprintf("recommendation %g outside 1-5; ignored", x))
		default:
			ans.Recommendation = &x
		}
	}
	if sv, present := get("scores"); present {
		m, ok := sv.(map[string]any)
		if !ok && sv != nil {
			ans.Problems = append(ans.Problems, fmt.Sprintf("scores is %s, not an object; ignored", coordJSONType(sv)))
		}
		for k, v := range m {
			if x, ok := coordNumber(v); ok {
				if ans.Scores == nil {
					ans.Scores = map[string]float64{}
				}
				ans.Scores[strings.ToLower(k)] = x
			} else {
				ans.Problems = append(ans.Problems, fmt.Sprintf("score %s is not a number; ignored", textutil.Clip(k, 40)))
			}
		}
		slices.Sort(ans.Problems)
	}
	if r, ok := get("rationale"); ok {
		if rs, ok := r.(string); ok {
			ans.Rationale = strings.TrimSpace(rs)
		}
	}
	return ans, nil
}

// coordDecisionWord maps a decision string to accept or reject: it must
// name exactly one of them ("Accept", "weak reject", "rejected" all do).
func coordDecisionWord(s string) (string, error) {
	kinds := map[string]bool{}
	for _, w := range coordWordRE.FindAllString(s, -1) {
		if strings.HasPrefix(strings.ToLower(w), "accept") {
			kinds[groundtruth.DecisionAccept] = true
		} else {
			kinds[groundtruth.DecisionReject] = true
		}
	}
	switch {
	case len(kinds) == 0:
		return "", errors.New("names neither accept nor reject")
	case len(kinds) > 1:
		return "", errors.New("names both accept and reject")
	case kinds[groundtruth.DecisionAccept]:
		return groundtruth.DecisionAccept, nil
	default:
		return groundtruth.DecisionReject, nil
	}
}

// coordAnswerFromWords is the last resort: a text that names exactly one of
// accept and reject.
func coordAnswerFromWords(text string) (coordAnswer, error) {
	if strings.TrimSpace(text) == "" {
		return coordAnswer{}, errors.New("no decision: the answer is empty")
	}
	d, err := coordDecisionWord(text)
	if err != nil {
		return coordAnswer{}, fmt.Errorf("no JSON answer, and the text %w", err)
	}
	return coordAnswer{Decision: d, Source: "word"}, nil
}

// coordNumber reads a JSON number, or a string holding one ("4").
func coordNumber(v any) (float64, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case string:
		s = strings.TrimSpace(x)
	default:
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

func coordJSONType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number, float64, int, int64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
