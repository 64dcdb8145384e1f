// Package coordination is the coordination scenario (docs/design.md#scenarios):
// each task is a PeerRead paper named in groundtruth/ground_truth.json. The
// green agent asks the participant's entry agent for a review decision in a
// stated JSON form; the purple system coordinates as it likes; the answer is
// compared with the venue's decision and the reviewers' mean recommendation. The
// ground truth also names the purple topology of each task and the coordination
// label the graph evaluator must recover from the spans; the scenario checks
// those entries against the data set but leaves their use to the tests and the
// demo.
package coordination
