package coordination

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/internal/textutil"
	"github.com/coordbench/coordbench/scenario"
)

// PeerRead (allenai/PeerRead, Kang et al., NAACL 2018) is the data set the
// coordination scenario draws its papers from. The project never ships it:
// it is read from a directory in the upstream layout,
// <dir>/<venue>/<split>/reviews/<id>.json, named by the environment or found
// next to the checkout (see DefaultPeerReadDir).

// EnvPeerReadDir names the PeerRead directory (the one holding iclr_2017/,
// acl_2017/, ...).
const EnvPeerReadDir = "COORDBENCH_PEERREAD_DIR"

// peerReadRelDir is where tests, CI and local runs keep the data set,
// relative to the working directory or to the module root.
var peerReadRelDir = filepath.Join("..", "shared", "data", "peerread")

// VenueScale returns the recommendation scale of a PeerRead venue: ICLR
// reviewers recommend on 1–10, ACL and CoNLL reviewers (and PeerRead's
// other annotated venues) on 1–5.
func VenueScale(venue string) groundtruth.RecommendationScale {
	if strings.HasPrefix(strings.ToLower(venue), "iclr") {
		return groundtruth.RecommendationScale{Min: 1, Max: 10}
	}
	return groundtruth.RecommendationScale{Min: 1, Max: 5}
}

// Paper is one PeerRead paper with its reviews.
type Paper struct {
	Venue    string `json:"venue"`
	Split    string `json:"split"`
	ID       string `json:"id"`
	Title    string `json:"title"`
	Abstract string `json:"abstract"`
	// Accepted is the venue's decision; nil where the venue published none
	// (ACL 2017, CoNLL 2016).
	Accepted *bool `json:"accepted"`
	// Reviews are the file's review entries in file order, duplicates
	// removed; they include meta reviews and the ICLR committee's decision
	// note, marked as such.
	Reviews []Review `json:"reviews"`
	// MeanRecommendation is the mean RECOMMENDATION of the scored reviews
	// (not meta reviews, not the committee's note, with a recommendation),
	// on the venue's scale; NormalizedRecommendation is the same on 0..1.
	// Both are 0 when ScoredReviews is 0.
	MeanRecommendation       float64                         `json:"mean_recommendation"`
	NormalizedRecommendation float64                         `json:"normalized_recommendation"`
	Scale                    groundtruth.RecommendationScale `json:"recommendation_scale"`
	ScoredReviews            int                             `json:"scored_reviews"`
	// Warnings name what was odd in the file and how it was read (an empty
	// or different id, duplicated reviews, unreadable scores).
	Warnings []string `json:"warnings,omitempty"`
}

// Decision returns the venue's decision, "accept" or "reject", and false
// when the venue has none.
func (p *Paper) Decision() (string, bool) {
	if p.Accepted == nil {
		return "", false
	}
	if *p.Accepted {
		return groundtruth.DecisionAccept, true
	}
	return groundtruth.DecisionReject, true
}

// ExpectedDecision is the decision a review of the paper is judged against:
// the venue's own where it published one, else accept when the normalised
// mean recommendation is at least groundtruth.DerivedAcceptThreshold. derived reports
// that the second rule was used; ok is false when neither is possible (no
// decision and no scored review).
func (p *Paper) ExpectedDecision() (decision string, derived, ok bool) {
	if d, has := p.Decision(); has {
		return d, false, true
	}
	if p.ScoredReviews == 0 {
		return "", true, false
	}
	if p.NormalizedRecommendation >= groundtruth.DerivedAcceptThreshold {
		return groundtruth.DecisionAccept, true, true
	}
	return groundtruth.DecisionReject, true, true
}

// Review is one review entry of a PeerRead paper.
type Review struct {
	// Title is the ICLR review's title (OpenReview); empty elsewhere.
	Title    string `json:"title,omitempty"`
	Comments string `json:"comments"`
	// Recommendation is the overall recommendation on the venue's scale,
	// nil when the entry has none (the committee's note, some comments).
	Recommendation *float64 `json:"recommendation,omitempty"`
	Confidence     *float64 `json:"confidence,omitempty"`
	// Scores are the aspect scores the entry has, keyed by the upstream
	// name in lower case: originality, clarity, soundness_correctness,
	// substance, impact, meaningful_comparison, appropriateness,
	// replicability.
	Scores map[string]float64 `json:"scores,omitempty"`
	// Meta marks a meta review (IS_META_REVIEW / is_meta_review).
	Meta bool `json:"meta,omitempty"`
	// CommitteeDecision marks ICLR's "ICLR committee final decision" entry,
	// the programme chairs' note: it states the decision, so it is neither
	// a review to average nor text to show a reviewer under test.
	CommitteeDecision bool `json:"committee_decision,omitempty"`
}

// Scored reports whether the review counts toward the mean recommendation.
func (r *Review) Scored() bool {
	return !r.Meta && !r.CommitteeDecision && r.Recommendation != nil
}

// peerReadAspects are the aspect score keys PeerRead uses.
var peerReadAspects = []string{
	"ORIGINALITY", "CLARITY", "SOUNDNESS_CORRECTNESS", "SUBSTANCE", "IMPACT",
	"MEANINGFUL_COMPARISON", "APPROPRIATENESS", "REPLICABILITY",
}

// maxPaperFileBytes bounds one paper file; upstream files are tens of
// kilobytes, the largest well under a megabyte.
const maxPaperFileBytes = 16 << 20

// PeerReadPath returns the path of a paper's file in dir.
func PeerReadPath(dir, venue, split, id string) string {
	return filepath.Join(dir, venue, split, "reviews", id+".json")
}

// LoadPaper reads one paper from a PeerRead directory in the upstream
// layout, <dataDir>/<venue>/<split>/reviews/<id>.json. It tolerates the
// upstream quirks (see Paper.Warnings) and fails only on a missing or
// unreadable file, a file that is not a paper, or path elements that would
// leave dataDir.
func LoadPaper(dataDir, venue, split, id string) (*Paper, error) {
	for _, el := range []struct{ name, v string }{{"venue", venue}, {"split", split}, {"id", id}} {
		if el.v == "" || el.v == "." || el.v == ".." || strings.ContainsAny(el.v, `/\`) {
			return nil, fmt.Errorf("peerread: bad %s %q: want one path element", el.name, el.v)
		}
	}
	path := PeerReadPath(dataDir, venue, split, id)
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("peerread: paper %s/%s/%s: file %s does not exist (is %s the PeerRead directory? set %s)",
				venue, split, id, path, dataDir, EnvPeerReadDir)
		}
		return nil, fmt.Errorf("peerread: paper %s/%s/%s: %w", venue, split, id, err)
	}
	if fi.Size() > maxPaperFileBytes {
		return nil, fmt.Errorf("peerread: paper file %s is %d bytes, more than the %d allowed", path, fi.Size(), maxPaperFileBytes)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("peerread: %w", err)
	}
	p, err := parsePaper(raw, VenueScale(venue))
	if err != nil {
		return nil, fmt.Errorf("peerread: %s: %w", path, err)
	}
	p.Venue, p.Split = venue, split
	switch {
	case p.ID == "":
		p.Warnings = append(p.Warnings, fmt.Sprintf("empty id in the file; the file name's %q is used", id))
	case p.ID != id:
		p.Warnings = append(p.Warnings, fmt.Sprintf("the file says id %q; the file name's %q is used", p.ID, id))
	}
	p.ID = id
	return p, nil
}

// rawPaper is a paper file as upstream writes it. Reviews stay raw because
// their keys differ by venue (ICLR upper-case IS_META_REVIEW, ACL lower-case
// is_meta_review) and their scores are integers or strings.
type rawPaper struct {
	ID       json.RawMessage              `json:"id"`
	Title    string                       `json:"title"`
	Abstract string                       `json:"abstract"`
	Accepted *bool                        `json:"accepted"`
	Reviews  []map[string]json.RawMessage `json:"reviews"`
}

// parsePaper decodes a paper file and computes the mean recommendation on
// scale.
func parsePaper(raw []byte, scale groundtruth.RecommendationScale) (*Paper, error) {
	var rp rawPaper
	if err := json.Unmarshal(raw, &rp); err != nil {
		return nil, fmt.Errorf("not a PeerRead paper: %w", err)
	}
	p := &Paper{
		ID:       rawScalarString(rp.ID),
		Title:    strings.TrimSpace(rp.Title),
		Abstract: strings.TrimSpace(rp.Abstract),
		Accepted: rp.Accepted,
		Scale:    scale,
		Reviews:  []Review{},
	}
	if p.Title == "" {
		p.Warnings = append(p.Warnings, "the paper has no title")
	}
	seen := map[string]bool{}
	dups := 0
	sum := 0.0
	for i, entry := range rp.Reviews {
		// Upstream repeats whole review lists in some files; an entry equal
		// to an earlier one, key for key, is that repetition.
		key, _ := json.Marshal(entry) // map keys are sorted: a canonical form
		if seen[string(key)] {
			dups++
			continue
		}
		seen[string(key)] = true
		r, warns := parseReview(entry)
		for _, w := range warns {
			p.Warnings = append(p.Warnings, fmt.Sprintf("review %d: %s", i+1, w))
		}
		if r.Recommendation != nil && !scale.Contains(*r.Recommendation) && r.Scored() {
			p.Warnings = append(p.Warnings, fmt.Sprintf("review %d: recommendation %g outside the venue's %g–%g; not counted",
				i+1, *r.Recommendation, scale.Min, scale.Max))
			r.Recommendation = nil
		}
		if r.Scored() {
			sum += *r.Recommendation
			p.ScoredReviews++
		}
		p.Reviews = append(p.Reviews, r)
	}
	if dups > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%d duplicated review entries ignored", dups))
	}
	if p.ScoredReviews > 0 {
		p.MeanRecommendation = sum / float64(p.ScoredReviews)
		p.NormalizedRecommendation = scale.Normalize(p.MeanRecommendation)
	}
	return p, nil
}

// parseReview reads one review entry; keys are matched case-insensitively.
func parseReview(entry map[string]json.RawMessage) (Review, []string) {
	upper := make(map[string]json.RawMessage, len(entry))
	for k, v := range entry {
		upper[strings.ToUpper(k)] = v
	}
	var warns []string
	str := func(key string) string { return strings.TrimSpace(rawScalarString(upper[key])) }
	num := func(key string) *float64 {
		v, present := upper[key]
		if !present {
			return nil
		}
		x, ok, empty := rawNumber(v)
		if !ok {
			if !empty {
				warns = append(warns, fmt.Sprintf("%s %s is not a number; ignored", key, textutil.Clip(string(v), 40)))
			}
			return nil
		}
		return &x
	}
	r := Review{
		Title:          str("TITLE"),
		Comments:       strings.TrimSpace(rawScalarString(upper["COMMENTS"])),
		Recommendation: num("RECOMMENDATION"),
		Confidence:     num("REVIEWER_CONFIDENCE"),
		Meta:           rawBool(upper["IS_META_REVIEW"]),
	}
	// The ICLR programme chairs' note: titled so, and signed by "pcs".
	r.CommitteeDecision = strings.EqualFold(r.Title, "ICLR committee final decision") ||
		strings.HasSuffix(strings.ToLower(str("OTHER_KEYS")), " pcs")
	for _, a := range peerReadAspects {
		if x := num(a); x != nil {
			if r.Scores == nil {
				r.Scores = map[string]float64{}
			}
			r.Scores[strings.ToLower(a)] = *x
		}
	}
	return r, warns
}

// rawNumber reads a score written as a number or as a numeric string ("4").
// empty reports null or a blank string, which is an absent score rather
// than a bad one.
func rawNumber(v json.RawMessage) (x float64, ok, empty bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return 0, false, true
	}
	if v[0] == '"' {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return 0, false, false
		}
		s = strings.TrimSpace(s)
		if s == "" {
			return 0, false, true
		}
		v = []byte(s)
	}
	x, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, false, false
	}
	return x, true, false
}

// rawBool reads true, "true" or "True"; anything else (false, null, absent)
// is false.
func rawBool(v json.RawMessage) bool {
	var b bool
	if json.Unmarshal(v, &b) == nil {
		return b
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return strings.EqualFold(strings.TrimSpace(s), "true")
	}
	return false
}

// rawScalarString reads a string, or a number written as one (upstream ids
// are strings, but nothing promises it).
func rawScalarString(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(v, &n) == nil {
		return n.String()
	}
	return ""
}

// DefaultPeerReadDir finds the PeerRead directory: $COORDBENCH_PEERREAD_DIR
// when set (an error when it names no directory, so a typo is not silently
// replaced by another copy), else ../shared/data/peerread relative to the
// working directory, else relative to the module root (the nearest parent
// of the working directory with this module's go.mod, so tests run from a
// package directory find it too). The error says where it looked.
func DefaultPeerReadDir() (string, error) {
	return scenario.LocateData(EnvPeerReadDir, peerReadRelDir, true)
}
