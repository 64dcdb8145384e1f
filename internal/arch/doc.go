// Package arch holds the test that keeps the module's layout honest: every
// package imports only the packages its layer allows (docs/architecture.md
// explains each rule), no package but the loopback harness, e2e and
// cmd/purple imports the purple agent, and the import graph drawn in
// docs/architecture.md is the real one. It has no code of its own.
package arch
