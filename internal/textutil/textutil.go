// Package textutil holds the small text helpers several packages share:
// cutting text to a bound with a visible marker, folding it onto one line
// for logs and summaries, and counts and numbers in words.
package textutil

import "strings"

// TruncationMarker ends every text Clip cut, so a reader knows it was cut.
const TruncationMarker = "…[truncated]"

// Clip returns s cut after n runes, with TruncationMarker appended when it
// was cut; n <= 0 gives "".
func Clip(s string, n int) string {
	if n <= 0 {
		return ""
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i] + TruncationMarker
		}
		count++
	}
	return s
}

// OneLine folds every run of white space, newlines included, into one space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
