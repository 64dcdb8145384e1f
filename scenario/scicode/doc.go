// Package scicode is the SciCode scenario (docs/scicode.md): each
// task is one SciCode problem. The green agent walks the participant through
// every sub-step in order, in one A2A context per problem; each answer's code
// runs in the sandbox (package sandbox), where it only computes: the test
// cases, rewritten by the judge, record the values their assertions compare.
// The judge, a Python process that never imports the solver's code, reads
// the targets and decides (judge.go, py/coordbench_judge.py). A failing step
// gets the test output back and may answer again, up to max_num_steps turns.
// Scores are SciCode's: the sub-step pass rate and whether the problem is
// solved (every sub-step passes).
//
// The package holds the data (the JSONL problems, the HDF5 targets), the
// protocol (prompts, feedback, the walk through the steps), the reading of
// answers, the test scripts, the verdicts (verdict.go) and the scores
// (score.go), and the Python code: the sandbox's harness and the
// scicode.compare.cmp helpers (py/lib), the judge (py/).
package scicode
