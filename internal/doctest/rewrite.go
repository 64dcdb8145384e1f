package doctest

import (
	"regexp"
	"slices"
	"strconv"
)

// Rewriter holds the substitutions made to a step before it runs (and to
// its expected output): what would only cost time (compiling again) or
// collide on a shared machine (fixed ports).
type Rewriter struct {
	rules []rule
}

type rule struct {
	re   *regexp.Regexp
	repl func(m []string) string
}

// Literal replaces every match of the regular expression pattern with
// repl, taken as it is.
func (r *Rewriter) Literal(pattern, repl string) {
	r.rules = append(r.rules, rule{regexp.MustCompile(pattern), func([]string) string { return repl }})
}

// Func replaces every match of pattern with what repl makes of the match
// and its groups.
func (r *Rewriter) Func(pattern string, repl func(m []string) string) {
	r.rules = append(r.rules, rule{regexp.MustCompile(pattern), repl})
}

// Port replaces the port number from, as a whole number, with to.
func (r *Rewriter) Port(from, to int) {
	r.Literal(`\b`+strconv.Itoa(from)+`\b`, strconv.Itoa(to))
}

// Apply makes every substitution, in the order they were added.
func (r *Rewriter) Apply(s string) string {
	for _, ru := range r.rules {
		s = ru.re.ReplaceAllStringFunc(s, func(match string) string {
			return ru.repl(ru.re.FindStringSubmatch(match))
		})
	}
	return s
}

// GoRun matches `go run ./cmd/NAME`; group 1 is NAME.
const GoRun = `\bgo run \./cmd/([A-Za-z0-9_-]+)`

var (
	goRun     = regexp.MustCompile(GoRun)
	portForms = []*regexp.Regexp{
		regexp.MustCompile(`\b(?:127\.0\.0\.1|localhost|0\.0\.0\.0):(\d{4,5})\b`),
		regexp.MustCompile(`--[a-z-]*port[ =](\d{4,5})\b`),
		regexp.MustCompile(`_PORT=(\d{4,5})\b`),
	}
)

// Commands returns the NAMEs of `go run ./cmd/NAME` in text, sorted, once
// each.
func Commands(text string) []string {
	var names []string
	for _, m := range goRun.FindAllStringSubmatch(text, -1) {
		names = append(names, m[1])
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Ports returns the port numbers text names (host:port on loopback or
// every interface, --port and --*-port flags, *_PORT variables), sorted,
// once each.
func Ports(text string) []int {
	var ports []int
	for _, re := range portForms {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			if p, err := strconv.Atoi(m[1]); err == nil && p > 0 && p < 65536 {
				ports = append(ports, p)
			}
		}
	}
	slices.Sort(ports)
	return slices.Compact(ports)
}
