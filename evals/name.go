package evals

import "fmt"

// checkName refuses an evaluator name that cannot serve everywhere the
// name goes: the result's key under "evaluations", the request's
// evaluator switch, the span name and the "coordbench.<name>.<key>" span
// attributes. A name is a lower-case ASCII letter followed by lower-case
// letters, digits and underscores ("graph", "text_similarity").
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("evaluator with an empty name")
	}
	for i, r := range name {
		if r >= 'a' && r <= 'z' || i > 0 && (r >= '0' && r <= '9' || r == '_') {
			continue
		}
		return fmt.Errorf("evaluator name %q: want a lower-case letter followed by lower-case letters, digits and underscores", name)
	}
	return nil
}
