"""The review rule the Python participants answer with: no model, no
randomness, so two assessments of the same team give the same answers and
the same scores (the AgentBeats test compares them).

A reviewer counts cue words in the request (the paper's abstract and its
reviewers' comments, as the green agent sends them) and scores
round(3 + 2(p - n)/(p + n + 2)), clipped to 1..5, shifted by its own lean;
a coordinator decides from its reviewers' recommendations.
"""

import json

POSITIVE = ("novel", "clear", "convincing", "strong", "interesting", "significant", "solid", "well written")
NEGATIVE = ("unclear", "weak", "limited", "incremental", "not convinced", "confusing", "missing", "lacks")
ACCEPT_AT = 3.5


def review(text: str, lean: int = 0) -> dict:
    """The answer of one reviewer, in the coordination scenario's form."""
    t = text.lower()
    p = sum(t.count(w) for w in POSITIVE)
    n = sum(t.count(w) for w in NEGATIVE)
    rec = max(1, min(5, round(3 + 2 * (p - n) / (p + n + 2)) + lean))
    return {
        "decision": "accept" if rec >= ACCEPT_AT else "reject",
        "recommendation": rec,
        "scores": {"originality": rec, "clarity": rec, "soundness": rec, "substance": rec},
        "rationale": f"{p} positive and {n} negative cues in the paper and its reviews.",
    }


def decide(answers: list[dict]) -> dict:
    """The coordinator's answer: the mean of its reviewers' recommendations."""
    recs = [float(a["recommendation"]) for a in answers if "recommendation" in a]
    if not recs:
        raise ValueError("no reviewer answered with a recommendation")
    mean = sum(recs) / len(recs)
    rec = max(1, min(5, round(mean)))
    return {
        "decision": "accept" if mean >= ACCEPT_AT else "reject",
        "recommendation": rec,
        "scores": {"originality": rec, "clarity": rec, "soundness": rec, "substance": rec},
        "rationale": f"mean recommendation {mean:.2f} of {len(recs)} reviewers.",
    }


def parse_answer(text: str) -> dict:
    """A reviewer's answer from its text: the first JSON object in it."""
    start = text.find("{")
    if start < 0:
        raise ValueError(f"no JSON object in {text[:80]!r}")
    obj, _ = json.JSONDecoder().raw_decode(text[start:])
    return obj
