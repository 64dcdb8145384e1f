package purple

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/coordbench/coordbench/a2acall"
	"github.com/coordbench/coordbench/internal/textutil"
)

// What travels between agents: the caller's text and data parts, plus a
// small delegation record in the data part that says which agents the
// request already passed through and whether the callee is only consulted.
// The record is what keeps a cyclic topology (a reviewer calling its
// coordinator back) finite: an agent already on the path, or consulted,
// answers by itself.

// Data part keys and kinds.
const (
	// DelegationKey holds the delegation record in a data part.
	DelegationKey = "coordbench.delegation"
	// ReviewRequestKind is the kind of the green agent's coordination
	// request (green/coordination.go); its keys are read into Paper.
	ReviewRequestKind = "coordbench.review_request/v1"
)

// Peer is an agent this agent may call.
type Peer struct {
	// Name names the peer in logs and errors; its spans are named by its
	// agent card.
	Name string
	// URL is its A2A URL (its card is at URL/.well-known/agent-card.json).
	URL string
}

// ParsePeers reads the --peers flag: name=url pairs separated by commas.
// A bare URL is named by its host and port.
func ParsePeers(s string) ([]Peer, error) {
	var peers []Peer
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		name, u, ok := strings.Cut(item, "=")
		if !ok {
			u, name = item, ""
		}
		name, u = strings.TrimSpace(name), strings.TrimSpace(u)
		if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return nil, fmt.Errorf("peer %q: want name=http(s)://host:port[/path]", item)
		}
		if name == "" {
			name = strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
			name, _, _ = strings.Cut(name, "/")
		}
		if slices.ContainsFunc(peers, func(p Peer) bool { return p.Name == name }) {
			return nil, fmt.Errorf("peer %q named twice", name)
		}
		peers = append(peers, Peer{Name: name, URL: u})
	}
	return peers, nil
}

// Request is one message an agent received.
type Request struct {
	// Text joins the message's text parts; Data holds its data parts (the
	// delegation record removed).
	Text string
	Data []map[string]any
	// ContextID and TaskID are the A2A context and task.
	ContextID string
	TaskID    string
	// Path names the agents the request passed through before reaching
	// this one, the first being the entry agent the green agent called.
	Path []string
	// Consult is true when the caller asks for an opinion only: the agent
	// answers by itself.
	Consult bool
	// Paper is the paper to review, read from a coordbench review request;
	// nil when the message carries none (the text is then the paper).
	Paper *Paper
}

// Paper is what a review request says of the paper.
type Paper struct {
	// TaskID is the green agent's task id, e.g. "iclr2017-305".
	TaskID   string
	Title    string
	Abstract string
	// Reviews are the comments of the venue's reviewers, scores withheld.
	Reviews []string
	// TitleOnly marks a request without the abstract and the reviews.
	TitleOnly bool
}

// Text is everything the paper's request says, for a rule or a prompt.
func (p *Paper) Text() string {
	parts := append([]string{p.Title, p.Abstract}, p.Reviews...)
	return strings.Join(parts, "\n\n")
}

// delegation is the record in DelegationKey.
type delegation struct {
	Path    []string `json:"path"`
	Consult bool     `json:"consult,omitempty"`
	From    string   `json:"from,omitempty"`
}

// newRequest reads an A2A message.
func newRequest(msg *a2a.Message, contextID, taskID string) *Request {
	req := &Request{ContextID: contextID, TaskID: taskID}
	if msg == nil {
		return req
	}
	var texts []string
	for _, part := range msg.Parts {
		if part == nil {
			continue
		}
		switch v := part.Content.(type) {
		case a2a.Text:
			if s := string(v); s != "" {
				texts = append(texts, s)
			}
		case a2a.Data:
			m, ok := v.Value.(map[string]any)
			if !ok {
				continue
			}
			if d, ok := m[DelegationKey]; ok {
				req.readDelegation(d)
				m = withoutKey(m, DelegationKey)
			}
			if len(m) > 0 {
				req.Data = append(req.Data, m)
			}
		}
	}
	req.Text = strings.Join(texts, "\n")
	for _, d := range req.Data {
		if p := paperFrom(d); p != nil {
			req.Paper = p
			break
		}
	}
	return req
}

func (r *Request) readDelegation(v any) {
	raw, err := json.Marshal(v)
	if err != nil {
		return
	}
	var d delegation
	if json.Unmarshal(raw, &d) != nil {
		return
	}
	for _, name := range d.Path {
		if name = strings.TrimSpace(name); name != "" && len(r.Path) < maxPath {
			r.Path = append(r.Path, name)
		}
	}
	r.Consult = d.Consult
}

// maxPath bounds the path a request carries; a longer one is cut, which
// only makes the agents at its end answer by themselves sooner.
const maxPath = 64

// paperFrom reads a coordbench review request's data part.
func paperFrom(d map[string]any) *Paper {
	if kind, _ := d["kind"].(string); kind != ReviewRequestKind {
		if _, ok := d["title"].(string); !ok {
			return nil
		}
	}
	p := &Paper{}
	p.TaskID, _ = d["task_id"].(string)
	p.Title, _ = d["title"].(string)
	p.Abstract, _ = d["abstract"].(string)
	p.TitleOnly, _ = d["title_only"].(bool)
	if rs, ok := d["reviews"].([]any); ok {
		for _, r := range rs {
			switch rv := r.(type) {
			case map[string]any:
				if c, _ := rv["comments"].(string); c != "" {
					p.Reviews = append(p.Reviews, c)
				}
			case string:
				p.Reviews = append(p.Reviews, rv)
			}
		}
	}
	if p.Title == "" && p.Abstract == "" {
		return nil
	}
	return p
}

// taskID is the green agent's task id a request is about, for fault
// filters: the review request's task_id, else the A2A task id.
func (r *Request) taskID() string {
	if r.Paper != nil && r.Paper.TaskID != "" {
		return r.Paper.TaskID
	}
	for _, d := range r.Data {
		if id, ok := d["task_id"].(string); ok && id != "" {
			return id
		}
	}
	return r.TaskID
}

// onPath reports whether name already handled this request upstream.
func (r *Request) onPath(name string) bool { return slices.Contains(r.Path, name) }

// forward builds the message an agent named from sends a peer: the same
// text and data, with the delegation record extended by from.
func (r *Request) forward(from string, consult bool) a2acall.SendRequest {
	data := map[string]any{}
	if len(r.Data) > 0 {
		for k, v := range r.Data[0] {
			data[k] = v
		}
	}
	path := append(slices.Clone(r.Path), from)
	data[DelegationKey] = map[string]any{"path": path, "consult": consult, "from": from}
	text := r.Text
	if consult {
		text = fmt.Sprintf("%s asks for your opinion on the paper below; answer by yourself, without asking others.\n\n%s", from, text)
	}
	return a2acall.SendRequest{Text: text, Data: data}
}

func withoutKey(m map[string]any, drop string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != drop {
			out[k] = v
		}
	}
	return out
}

// Review is the answer form of the coordination scenario.
type Review struct {
	Decision       string         `json:"decision"`
	Recommendation float64        `json:"recommendation"`
	Scores         map[string]int `json:"scores,omitempty"`
	Rationale      string         `json:"rationale,omitempty"`
}

// Decisions of a review.
const (
	DecisionAccept = "accept"
	DecisionReject = "reject"
)

// answer renders a review as the agent's answer: the JSON in the text, for
// readers of text, and the same object as a data part.
func (r *Review) answer() *Answer {
	b, err := json.Marshal(r)
	if err != nil { // strings and numbers only: cannot happen
		return &Answer{Text: r.Decision}
	}
	var data map[string]any
	_ = json.Unmarshal(b, &data)
	return &Answer{Text: string(b), Data: data}
}

// ParseReview reads a review from a peer's reply: a data part holding a
// decision, else the first JSON object in the text that holds one.
func ParseReview(reply *a2acall.Reply) (*Review, error) {
	if reply == nil {
		return nil, errors.New("no reply")
	}
	for _, d := range reply.Data {
		if _, ok := d["decision"]; ok {
			return reviewFromMap(d)
		}
	}
	return ParseReviewText(reply.Text)
}

// ParseReviewText reads a review from text: a fenced JSON block, else the
// first JSON object that holds a decision.
func ParseReviewText(text string) (*Review, error) {
	if len(text) > 1<<20 {
		text = text[:1<<20]
	}
	candidates := []string{}
	for _, fc := range textutil.Fences(text) {
		if body := strings.TrimSpace(fc.Body); strings.HasPrefix(body, "{") {
			candidates = append(candidates, body)
		}
	}
	for i := 0; i < len(text) && len(candidates) < 64; i++ {
		if text[i] == '{' {
			candidates = append(candidates, text[i:])
		}
	}
	for _, c := range candidates {
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(c))
		if dec.Decode(&m) != nil {
			continue
		}
		if _, ok := m["decision"]; ok {
			return reviewFromMap(m)
		}
	}
	return nil, fmt.Errorf("no JSON review with a decision in %s", strconv.Quote(clip(text, 80)))
}

func reviewFromMap(m map[string]any) (*Review, error) {
	ds, _ := m["decision"].(string)
	// "Accept", "weak reject", "rejected": the word must name exactly one.
	d := strings.ToLower(ds)
	acc, rej := strings.Contains(d, "accept"), strings.Contains(d, "reject")
	switch {
	case acc && !rej:
		d = DecisionAccept
	case rej && !acc:
		d = DecisionReject
	default:
		return nil, fmt.Errorf("decision %q names neither or both of accept and reject", clip(ds, 40))
	}
	r := &Review{Decision: d}
	if x, ok := number(m["recommendation"]); ok && x >= 1 && x <= 5 {
		r.Recommendation = x
	} else if d == DecisionAccept {
		r.Recommendation = 4
	} else {
		r.Recommendation = 2
	}
	if sm, ok := m["scores"].(map[string]any); ok {
		for k, v := range sm {
			if x, ok := number(v); ok {
				if r.Scores == nil {
					r.Scores = map[string]int{}
				}
				r.Scores[strings.ToLower(k)] = int(math.Round(math.Max(1, math.Min(5, x))))
			}
		}
	}
	r.Rationale, _ = m["rationale"].(string)
	return r, nil
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case int:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// clip cuts s to n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}
