// Package judge is the LLM judge evaluator and its rule-based fallback
// (docs/judge.md): it asks an OpenAI-compatible model to read a trace the
// way a reviewer would, with the graph and latency evaluators' numbers,
// and to say whether the team coordinated well, naming failures in the
// MAST taxonomy. Every path that does not end in a valid answer hands over
// to the rule-based judge (rules.go), a documented, deterministic score,
// and says so in the result: a score is never silently made up. It is the
// one package of the assessor that speaks to an LLM; evals never imports
// it (the caller builds it with New and hands it to evals.NewRegistry as
// evals.Options.Judge).
package judge
