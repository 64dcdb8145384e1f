// Package doctest runs the shell blocks of the repository's Markdown
// documents (README.md, docs/*.md, any other *.md) so that a document
// cannot drift from the code: every command a reader is told to type is
// typed, in order, by the package's test (docs_test.go), on loopback.
//
// Every fenced block whose language is a shell's (sh, bash, shell, console)
// carries a marker on the line before its opening fence (blank lines
// between are allowed), one of
//
//	<!-- doctest: run -->
//	<!-- doctest: run check=NAME -->                the test also runs its check NAME afterwards
//	<!-- doctest: run except="make test" (why) -->  run every line but that one
//	<!-- doctest: skip (why it cannot run here) -->
//
// so a new block cannot escape silently: an unmarked shell block, a skip
// without a reason, a marker on no shell block, or an unlabelled block that
// starts like a command line are each an error (Lint).
//
// An sh, bash or shell block runs as one script. A console block is a
// transcript: lines starting "$ " are commands (a line ending in a backslash
// continues on the next), the lines after a command are its expected
// output, which must appear in the output, in order, other lines between
// allowed; "..." within an expected line stands for any text, and a line
// of "..." alone for any lines.
//
// The runnable blocks of one document run in one bash session (Session), as
// a reader types them into one terminal: the directory, variables and
// background jobs (`&`) of one block are there in the next; a failing
// command (set -e, pipefail) fails its block. The session is killed with
// its whole process group when the document ends. The test rewrites what
// would only cost time or collide on a shared machine (Rewrite): `go run
// ./cmd/NAME` becomes the binary it built once, `make demo` and `make
// build` what their Makefile recipes run, and every documented port
// (9009, 9010, 4318, ...) a free one, the same one throughout a document.
//
// Blocks are read line by line (CommonMark fences: three or more backticks
// or tildes at the start of a line, indented at most three spaces), not by
// internal/textutil's Fences, which reads language models' replies and
// keeps no line numbers.
package doctest
