// Package tracestore holds the spans of every road, keyed by trace: the
// packed store (Store), span admission (reservations, quotas per source,
// ingest tokens), late spans of traces already assessed, the settle wait
// (when is a trace complete enough to assemble), and provenance (Vouch:
// which spans of a task's trace the assessor can vouch for).
package tracestore
