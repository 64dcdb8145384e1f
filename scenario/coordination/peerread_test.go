package coordination

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordbench/coordbench/groundtruth"
	"github.com/coordbench/coordbench/internal/testenv"
)

// peerReadTestDir is the shared copy of PeerRead the tests read
// (../shared/data/peerread from the repository root).
func peerReadTestDir(t *testing.T) string {
	t.Helper()
	return testenv.SharedData(t, "peerread")
}

func prNear(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPeerReadICLRAccepted(t *testing.T) {
	p, err := LoadPaper(peerReadTestDir(t), "iclr_2017", "train", "305")
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "305" || p.Venue != "iclr_2017" || p.Split != "train" {
		t.Errorf("ref = %s/%s/%s", p.Venue, p.Split, p.ID)
	}
	if p.Title != "End-to-end Optimized Image Compression" {
		t.Errorf("title = %q", p.Title)
	}
	if p.Abstract == "" {
		t.Error("no abstract")
	}
	if d, ok := p.Decision(); !ok || d != groundtruth.DecisionAccept {
		t.Errorf("decision = %q, %v; want accept", d, ok)
	}
	// Three reviews (9, 8, 8) and the committee's note, which has no
	// recommendation and must not count.
	if len(p.Reviews) != 4 {
		t.Fatalf("%d review entries, want 4", len(p.Reviews))
	}
	if last := p.Reviews[3]; !last.CommitteeDecision || last.Scored() {
		t.Errorf("the committee's note is not marked: %+v", last)
	}
	if p.ScoredReviews != 3 || !prNear(p.MeanRecommendation, 25.0/3) {
		t.Errorf("mean = %v over %d reviews, want 8.333 over 3", p.MeanRecommendation, p.ScoredReviews)
	}
	if p.Scale != (groundtruth.RecommendationScale{Min: 1, Max: 10}) || !prNear(p.NormalizedRecommendation, (25.0/3-1)/9) {
		t.Errorf("scale %v, normalised %v", p.Scale, p.NormalizedRecommendation)
	}
	if d, derived, ok := p.ExpectedDecision(); d != groundtruth.DecisionAccept || derived || !ok {
		t.Errorf("expected decision = %q derived=%v ok=%v", d, derived, ok)
	}
	if len(p.Warnings) != 0 {
		t.Errorf("warnings on a clean file: %v", p.Warnings)
	}
}

func TestPeerReadICLRRejectedWithAspects(t *testing.T) {
	dir := peerReadTestDir(t)
	p, err := LoadPaper(dir, "iclr_2017", "test", "749")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := p.Decision(); !ok || d != groundtruth.DecisionReject {
		t.Errorf("decision = %q, %v; want reject", d, ok)
	}
	if p.ScoredReviews != 2 || !prNear(p.MeanRecommendation, 3) || !prNear(p.NormalizedRecommendation, 2.0/9) {
		t.Errorf("mean %v (%v) over %d", p.MeanRecommendation, p.NormalizedRecommendation, p.ScoredReviews)
	}

	// 333's first review is annotated with aspect scores; its second is
	// not.
	p, err = LoadPaper(dir, "iclr_2017", "test", "333")
	if err != nil {
		t.Fatal(err)
	}
	r := p.Reviews[0]
	if r.Scores["clarity"] != 4 || r.Scores["originality"] != 4 || r.Scores["soundness_correctness"] != 5 || len(r.Scores) != 3 {
		t.Errorf("aspect scores = %v", r.Scores)
	}
	if r.Recommendation == nil || *r.Recommendation != 7 || r.Confidence == nil || *r.Confidence != 4 {
		t.Errorf("recommendation/confidence = %v/%v", r.Recommendation, r.Confidence)
	}
	if p.Reviews[1].Scores != nil {
		t.Errorf("unannotated review has scores %v", p.Reviews[1].Scores)
	}
}

func TestPeerReadACLStringScores(t *testing.T) {
	p, err := LoadPaper(peerReadTestDir(t), "acl_2017", "test", "49")
	if err != nil {
		t.Fatal(err)
	}
	if p.Accepted != nil {
		t.Errorf("ACL has no decision, got %v", *p.Accepted)
	}
	if _, ok := p.Decision(); ok {
		t.Error("Decision() reports one for ACL")
	}
	if p.Scale != (groundtruth.RecommendationScale{Min: 1, Max: 5}) {
		t.Errorf("scale = %v", p.Scale)
	}
	// Recommendations "4" and "4", written as strings.
	if p.ScoredReviews != 2 || !prNear(p.MeanRecommendation, 4) || !prNear(p.NormalizedRecommendation, 0.75) {
		t.Errorf("mean %v (%v) over %d", p.MeanRecommendation, p.NormalizedRecommendation, p.ScoredReviews)
	}
	r := p.Reviews[0]
	want := map[string]float64{"substance": 4, "clarity": 5, "originality": 3, "impact": 3,
		"soundness_correctness": 5, "meaningful_comparison": 5, "appropriateness": 5}
	if len(r.Scores) != len(want) {
		t.Errorf("scores = %v, want %v", r.Scores, want)
	}
	for k, v := range want {
		if r.Scores[k] != v {
			t.Errorf("score %s = %v, want %v", k, r.Scores[k], v)
		}
	}
	if r.Meta || r.CommitteeDecision {
		t.Errorf("review marked meta/committee: %+v", r)
	}
	if d, derived, ok := p.ExpectedDecision(); d != groundtruth.DecisionAccept || !derived || !ok {
		t.Errorf("expected decision = %q derived=%v ok=%v; want a derived accept (0.75 >= 0.6)", d, derived, ok)
	}

	// CoNLL adds REPLICABILITY.
	p, err = LoadPaper(peerReadTestDir(t), "conll_2016", "test", "13")
	if err != nil {
		t.Fatal(err)
	}
	if p.Reviews[0].Scores["replicability"] != 3 || !prNear(p.MeanRecommendation, 3.5) {
		t.Errorf("CoNLL 13: scores %v, mean %v", p.Reviews[0].Scores, p.MeanRecommendation)
	}
}

// TestPeerReadEveryFile loads every paper of the shared copy: none may fail
// or warn, and each must have a title, an abstract and a mean.
func TestPeerReadEveryFile(t *testing.T) {
	dir := peerReadTestDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*", "*", "reviews", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no paper files under %s: %v", dir, err)
	}
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		p, err := LoadPaper(dir, parts[0], parts[1], strings.TrimSuffix(parts[3], ".json"))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if p.Title == "" || p.Abstract == "" || p.ScoredReviews == 0 || len(p.Warnings) > 0 {
			t.Errorf("%s: title %q, abstract %d chars, %d scored reviews, warnings %v",
				rel, p.Title, len(p.Abstract), p.ScoredReviews, p.Warnings)
		}
		if strings.HasPrefix(parts[0], "iclr") != (p.Accepted != nil) {
			t.Errorf("%s: accepted = %v", rel, p.Accepted)
		}
	}
}

// TestPeerReadQuirks feeds the loader the upstream oddities the shared copy
// has cleaned out: an empty id, a review list repeated, scores as strings,
// empty and non-numeric scores, a meta review, the committee's note, and a
// recommendation off the venue's scale.
func TestPeerReadQuirks(t *testing.T) {
	dir := t.TempDir()
	n := 0
	review := func(rec string, extra string) string {
		n++
		return fmt.Sprintf(`{"comments": "review %d", "RECOMMENDATION": %s, "REVIEWER_CONFIDENCE": "3", "CLARITY": "4"%s}`, n, rec, extra)
	}
	reviews := []string{
		review(`"4"`, `, "is_meta_review": null`),
		review(`2`, `, "SUBSTANCE": "", "IMPACT": "high"`),
		review(`"5"`, `, "IS_META_REVIEW": true`), // meta: not counted
		review(`9`, ``),  // off the 1-5 scale: not counted
		review(`""`, ``), // no recommendation
		`{"comments": "We accept.", "TITLE": "ICLR committee final decision", "OTHER_KEYS": "ICLR 2017 pcs"}`,
	}
	list := strings.Join(reviews, ",")
	body := `{"id": "", "title": " Odd Paper ", "abstract": "A.", "reviews": [` + list + `,` + list + `]}`
	prWritePaper(t, dir, "acl_2017", "dev", "7", body)

	p, err := LoadPaper(dir, "acl_2017", "dev", "7")
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "7" || p.Title != "Odd Paper" {
		t.Errorf("id %q title %q", p.ID, p.Title)
	}
	if len(p.Reviews) != len(reviews) {
		t.Errorf("%d reviews after removing the repeated list, want %d", len(p.Reviews), len(reviews))
	}
	if p.ScoredReviews != 2 || !prNear(p.MeanRecommendation, 3) {
		t.Errorf("mean %v over %d, want 3 over 2 (4 and 2)", p.MeanRecommendation, p.ScoredReviews)
	}
	if !p.Reviews[2].Meta || !p.Reviews[5].CommitteeDecision {
		t.Errorf("meta/committee not marked: %+v / %+v", p.Reviews[2], p.Reviews[5])
	}
	if p.Reviews[1].Scores["clarity"] != 4 || len(p.Reviews[1].Scores) != 1 {
		t.Errorf("scores of review 2 = %v, want clarity only", p.Reviews[1].Scores)
	}
	warns := strings.Join(p.Warnings, "\n")
	for _, want := range []string{"empty id", "6 duplicated review entries", "IMPACT \"high\" is not a number", "recommendation 9 outside"} {
		if !strings.Contains(warns, want) {
			t.Errorf("warnings lack %q:\n%s", want, warns)
		}
	}
	if strings.Contains(warns, "SUBSTANCE") {
		t.Errorf("an empty score is absent, not bad:\n%s", warns)
	}

	// A file whose id differs from its name keeps the name's id, and says so.
	prWritePaper(t, dir, "iclr_2017", "test", "8", `{"id": "800", "title": "T", "accepted": false, "reviews": []}`)
	p, err = LoadPaper(dir, "iclr_2017", "test", "8")
	if err != nil {
		t.Fatal(err)
	}
	if p.ID != "8" || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], `"800"`) {
		t.Errorf("id %q, warnings %v", p.ID, p.Warnings)
	}
	if _, _, ok := p.ExpectedDecision(); !ok {
		t.Error("a paper with a decision but no reviews still has an expected decision")
	}
}

func TestPeerReadErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadPaper(dir, "iclr_2017", "test", "404")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "iclr_2017", "test", "reviews", "404.json")) ||
		!strings.Contains(err.Error(), EnvPeerReadDir) {
		t.Errorf("missing file: %v", err)
	}
	for _, el := range [][3]string{{"..", "test", "1"}, {"iclr_2017", "a/b", "1"}, {"iclr_2017", "test", ""}, {"x", "y", `..\z`}} {
		if _, err := LoadPaper(dir, el[0], el[1], el[2]); err == nil || !strings.Contains(err.Error(), "one path element") {
			t.Errorf("LoadPaper(%q): %v", el, err)
		}
	}
	prWritePaper(t, dir, "iclr_2017", "test", "9", `{"title": "broken", "reviews": [`)
	if _, err := LoadPaper(dir, "iclr_2017", "test", "9"); err == nil || !strings.Contains(err.Error(), "9.json") {
		t.Errorf("truncated file: %v", err)
	}
	prWritePaper(t, dir, "iclr_2017", "test", "10", `["not", "a", "paper"]`)
	if _, err := LoadPaper(dir, "iclr_2017", "test", "10"); err == nil || !strings.Contains(err.Error(), "not a PeerRead paper") {
		t.Errorf("array file: %v", err)
	}
}

func TestPeerReadDefaultDir(t *testing.T) {
	want := peerReadTestDir(t)

	t.Setenv(EnvPeerReadDir, "")
	got, err := DefaultPeerReadDir()
	if err != nil {
		t.Fatalf("from the module root: %v", err)
	}
	if g, _ := filepath.EvalSymlinks(got); g != prEvalSymlinks(t, want) {
		t.Errorf("DefaultPeerReadDir() = %s, want %s", got, want)
	}

	other := t.TempDir()
	t.Setenv(EnvPeerReadDir, other)
	if got, err := DefaultPeerReadDir(); err != nil || got != other {
		t.Errorf("with $%s: %q, %v", EnvPeerReadDir, got, err)
	}

	t.Setenv(EnvPeerReadDir, filepath.Join(other, "nope"))
	if _, err := DefaultPeerReadDir(); err == nil || !strings.Contains(err.Error(), EnvPeerReadDir) {
		t.Errorf("a variable naming nothing must fail, not fall back: %v", err)
	}
}

func prEvalSymlinks(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func prWritePaper(t *testing.T, dir, venue, split, id, body string) {
	t.Helper()
	p := PeerReadPath(dir, venue, split, id)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}
