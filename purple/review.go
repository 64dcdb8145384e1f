package purple

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// The built-in roles and the deterministic rule they answer by when no LLM
// is configured. The rule is a baseline, not a good reviewer: on the 20
// PeerRead papers of the ground truth (groundtruth/ground_truth.json) it agrees with the venue about
// as often as a coin would. Its point is that the same paper always gets
// the same answer, so that tests and the benchmark can rely on it.

// Aspects scored by ReviewByRule, as the coordination scenario's answer
// form names them.
var Aspects = []string{"originality", "clarity", "soundness", "substance"}

// AcceptThreshold is the recommendation (1–5) at or above which a review accepts.
const AcceptThreshold = 3.5

// ruleCues are the cue phrases of each aspect, positive then negative.
// Phrases are matched as whole words, case-insensitively.
var ruleCues = map[string][2][]string{
	"originality": {
		{"novel", "original", "new", "first", "creative", "innovative"},
		{"incremental", "known", "not novel", "straightforward", "trivial", "derivative"},
	},
	"clarity": {
		{"clear", "clearly", "well written", "well-written", "easy to follow", "well organized", "readable"},
		{"unclear", "confusing", "hard to follow", "not clear", "unreadable", "typos", "vague"},
	},
	"soundness": {
		{"convincing", "rigorous", "thorough", "solid", "sound", "careful", "well designed"},
		{"unconvincing", "not convincing", "flawed", "missing", "lacks", "lack", "questionable", "weak", "concern", "concerns"},
	},
	"substance": {
		{"significant", "important", "impressive", "state-of-the-art", "state of the art", "strong", "interesting", "useful", "promising"},
		{"limited", "marginal", "small", "minor", "insufficient", "preliminary", "unfortunately"},
	},
}

// cueREs holds one compiled pattern per aspect and polarity.
var cueREs = func() map[string][2]*regexp.Regexp {
	out := map[string][2]*regexp.Regexp{}
	for aspect, cues := range ruleCues {
		var res [2]*regexp.Regexp
		for i, list := range cues {
			quoted := make([]string, len(list))
			for j, c := range list {
				quoted[j] = regexp.QuoteMeta(c)
			}
			// Longer phrases first, so "not convincing" is not also
			// counted as "convincing".
			slices.SortFunc(quoted, func(a, b string) int { return len(b) - len(a) })
			res[i] = regexp.MustCompile(`(?i)\b(?:` + strings.Join(quoted, "|") + `)\b`)
		}
		out[aspect] = res
	}
	return out
}()

// ReviewByRule reviews text (a paper's title, abstract and the reviewers'
// comments) by a fixed rule:
//
//   - for each aspect (originality, clarity, soundness, substance) count
//     p positive and n negative cue phrases (ruleCues), whole words, case
//     ignored, a phrase inside a longer matching phrase not counted again;
//   - the aspect's score is round(3 + 2(p − n)/(p + n + 2)), within 1..5;
//   - the recommendation is the mean of the four scores, and the decision
//     is accept when it is at least AcceptThreshold (3.5), else reject.
func ReviewByRule(text string) *Review {
	r := &Review{Scores: map[string]int{}}
	sum := 0
	var why []string
	for _, aspect := range Aspects {
		res := cueREs[aspect]
		p := len(res[0].FindAllStringIndex(text, -1))
		n := len(res[1].FindAllStringIndex(text, -1))
		// A negative phrase that contains a positive one ("not
		// convincing") counted for both: take it off the positives.
		for _, m := range res[1].FindAllString(text, -1) {
			if res[0].MatchString(m) {
				p--
			}
		}
		p = max(p, 0)
		score := int(math.Round(3 + 2*float64(p-n)/float64(p+n+2)))
		score = max(1, min(5, score))
		r.Scores[aspect] = score
		sum += score
		why = append(why, fmt.Sprintf("%s %d (%d+/%d-)", aspect, score, p, n))
	}
	r.Recommendation = roundTo(float64(sum)/float64(len(Aspects)), 2)
	r.Decision = decide(r.Recommendation)
	r.Rationale = "rule-based reading: " + strings.Join(why, ", ")
	return r
}

func decide(rec float64) string {
	if rec >= AcceptThreshold {
		return DecisionAccept
	}
	return DecisionReject
}

func roundTo(x float64, n int) float64 {
	p := math.Pow(10, float64(n))
	return math.Round(x*p) / p
}

// paperText is what a role reads: the paper of a review request, else the
// message text.
func paperText(req *Request) string {
	if req.Paper != nil {
		return req.Paper.Text()
	}
	return req.Text
}

// readPaper is the agent's own review: the LLM's when one is configured and
// answers usably, else the rule's, inside a step span either way.
func readPaper(ctx context.Context, env *Env, req *Request, opinions []string) (*Review, error) {
	if llm := env.LLM(); llm != nil {
		user := req.Text
		if req.Paper != nil && !strings.Contains(user, req.Paper.Title) {
			user = req.Paper.Text() + "\n\n" + user
		}
		if len(opinions) > 0 {
			user += "\n\nWhat your peers answered:\n" + strings.Join(opinions, "\n")
		}
		out, err := llm.Chat(ctx, reviewerSystemPrompt, user)
		if err == nil {
			var r *Review
			if r, err = ParseReviewText(out); err == nil {
				return r, nil
			}
		}
		env.Logger.Warn("purple: the LLM gave no usable review; the rule answers", "agent", env.Name, "err", err)
	}
	var r *Review
	err := env.Tool(ctx, "review_rule", map[string]any{"aspects": strings.Join(Aspects, ",")}, func(context.Context) (string, error) {
		r = ReviewByRule(paperText(req))
		return r.Rationale, nil
	})
	return r, err
}

const reviewerSystemPrompt = `You are a peer reviewer for a machine learning / NLP conference. Read the paper (and any reviews or opinions given) and answer with one JSON object only: {"decision": "accept" | "reject", "recommendation": <number 1-5>, "scores": {"originality": <1-5>, "clarity": <1-5>, "soundness": <1-5>, "substance": <1-5>}, "rationale": "<two sentences>"}.`

const coordinatorSystemPrompt = `You are the area chair of a machine learning / NLP conference. Given the paper and the reviews your reviewers wrote, decide. Answer with one JSON object only: {"decision": "accept" | "reject", "recommendation": <number 1-5>, "scores": {"originality": <1-5>, "clarity": <1-5>, "soundness": <1-5>, "substance": <1-5>}, "rationale": "<two sentences>"}.`

// review is the reviewer role: its own reading of the paper, averaged with
// the recommendations of the peers it consulted (if it has peers and the
// request lets it delegate).
func review(ctx context.Context, env *Env, req *Request) (*Answer, error) {
	peers := env.Delegate(ctx, req)
	var recs []float64
	var opinions, failed []string
	for _, pa := range peers {
		if pa.Err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", pa.Peer.Name, pa.Err))
			continue
		}
		recs = append(recs, pa.Review.Recommendation)
		opinions = append(opinions, fmt.Sprintf("%s: %s, recommendation %g", pa.Peer.Name, pa.Review.Decision, pa.Review.Recommendation))
	}
	own, err := readPaper(ctx, env, req, opinions)
	if err != nil {
		return nil, err
	}
	if len(recs) > 0 && env.LLM() == nil {
		all := append([]float64{own.Recommendation}, recs...)
		own.Recommendation = roundTo(mean(all), 2)
		own.Decision = decide(own.Recommendation)
		own.Rationale += fmt.Sprintf("; averaged with %s: %s", plural(len(recs), "peer"), strings.Join(opinions, "; "))
	}
	if len(failed) > 0 {
		own.Rationale += "; peers that did not answer: " + strings.Join(failed, "; ")
	}
	return own.answer(), nil
}

// coordinate is the coordinator role: it asks its peers (as its delegation
// mode says) and decides by the mean of their recommendations, or by the
// LLM given their reviews. Without peers to ask, or when consulted, it
// reads the paper itself. When it had peers to ask and none answered, the
// task fails: a coordinator that silently reviews alone would hide the
// failure from the assessment.
func coordinate(ctx context.Context, env *Env, req *Request) (*Answer, error) {
	if !env.delegates(req) {
		own, err := readPaper(ctx, env, req, nil)
		if err != nil {
			return nil, err
		}
		return own.answer(), nil
	}
	peers := env.Delegate(ctx, req)
	var reviews []*Review
	var lines, failed []string
	for _, pa := range peers {
		if pa.Err != nil {
			failed = append(failed, fmt.Sprintf("%s: %v", pa.Peer.Name, pa.Err))
			continue
		}
		reviews = append(reviews, pa.Review)
		lines = append(lines, fmt.Sprintf("%s: %s, recommendation %g", pa.Peer.Name, pa.Review.Decision, pa.Review.Recommendation))
	}
	if len(reviews) == 0 {
		return nil, fmt.Errorf("%s: none of %s answered: %s", env.Name, plural(len(peers), "peer"), strings.Join(failed, "; "))
	}
	if llm := env.LLM(); llm != nil {
		user := paperText(req) + "\n\nThe reviews:\n" + strings.Join(lines, "\n")
		out, err := llm.Chat(ctx, coordinatorSystemPrompt, user)
		if err == nil {
			var r *Review
			if r, err = ParseReviewText(out); err == nil {
				return r.answer(), nil
			}
		}
		env.Logger.Warn("purple: the LLM gave no usable decision; the mean of the reviews decides", "agent", env.Name, "err", err)
	}
	out := aggregate(reviews)
	out.Rationale = fmt.Sprintf("mean of %s (%s)", plural(len(reviews), "review"), strings.Join(lines, "; "))
	if len(failed) > 0 {
		out.Rationale += "; without " + strings.Join(failed, "; ")
	}
	return out.answer(), nil
}

// aggregate is the mean review: mean recommendation, decided by the
// threshold, and the mean of each aspect score the reviews give.
func aggregate(reviews []*Review) *Review {
	out := &Review{}
	recs := make([]float64, len(reviews))
	sums, counts := map[string]int{}, map[string]int{}
	for i, r := range reviews {
		recs[i] = r.Recommendation
		for k, v := range r.Scores {
			sums[k] += v
			counts[k]++
		}
	}
	out.Recommendation = roundTo(mean(recs), 2)
	out.Decision = decide(out.Recommendation)
	for k, s := range sums {
		if out.Scores == nil {
			out.Scores = map[string]int{}
		}
		out.Scores[k] = int(math.Round(float64(s) / float64(counts[k])))
	}
	return out
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// errNoReview is a peer's answer without a readable review.
var errNoReview = errors.New("answer holds no review")
