// Package scicode is the SciCode scenario (DESIGN §5, docs/scicode.md): each
// task is one SciCode problem. The green agent walks the participant through
// every sub-step in order, in one A2A context per problem; each answer's code
// is tested in the sandbox (package sandbox) against the step's targets, and
// a failing step gets the test output back and may answer again, up to
// max_num_steps turns. Scores are SciCode's: the sub-step pass rate and
// whether the problem is solved (every sub-step passes).
//
// The package holds the data (the JSONL problems, the HDF5 targets), the
// protocol (prompts, feedback, the walk through the steps), the reading of
// answers, the test scripts and the scoring, and the Python helpers that
// SciCode's test cases import (scicode.compare.cmp).
package scicode
