// Package textutil holds the small text helpers several packages share:
// cutting text to a bound with a visible marker (at its end, or in its
// middle so an error's cause survives), folding it onto one line
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

// ClipMiddle returns s cut to about n runes by dropping its middle: the
// first third and the last two thirds are kept, TruncationMarker between
// them. An error's cause comes last ("dial tcp ...: connection refused"),
// so a bounded error text keeps it. n <= 0 gives "".
func ClipMiddle(s string, n int) string {
	if n <= 0 {
		return ""
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	head := n / 3
	return string(r[:head]) + TruncationMarker + string(r[len(r)-(n-head):])
}

// OneLine folds every run of white space, newlines included, into one space.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
