// Package soak holds the soak test of the green agent (issue 15): many
// assessments against one long-running green agent and purple team on
// loopback (internal/loopback), with the process's resident memory
// (/proc/self/status VmRSS), live heap and goroutine count sampled as they
// run. It passes when they level off: the last quarter's mean live heap and
// RSS within a tolerance of the second quarter's, and no goroutine growth.
//
// The test is behind the build tag soak, out of CI's default run:
//
//	make soak                                   # 1,000 sequential, then 10 workers x 20
//	go test -tags soak -run TestSoak -v ./internal/soak/ -soak.sequential 200
//
// docs/operations.md gives the figures of a run and the limits that make
// memory level off.
package soak
