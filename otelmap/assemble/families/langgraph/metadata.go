package langgraph

import (
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/internal/jsonenc"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// The run metadata this family reads, wherever an exporter puts it. Each
// exporter copies a LangChain run's metadata dict onto the run's span in a
// shape of its own:
//
//   - OpenInference (openinference-instrumentation-langchain, Python
//     0.1.80 and JS 4.1.1): one attribute, metadata, the dict as JSON.
//   - LangSmith's OpenTelemetry export (langsmith[otel] 0.15.1,
//     langsmith/_internal/otel/_otel_exporter.py): one attribute per key,
//     langsmith.metadata.<key>, the value as it is (a string) or as JSON.
//   - Langfuse's LangChain CallbackHandler (Python langfuse 5.0.4,
//     langfuse/_client/attributes.py _flatten_and_serialize_metadata; JS
//     @langfuse/langchain and @langfuse/tracing 5.11.1
//     _flattenAndSerializeMetadata): one attribute per key,
//     langfuse.observation.metadata.<key>; the Python SDK v5 JSON-encodes
//     every value, strings included ("\"supervisor\""), the JS SDK writes a
//     string as it is.
//
// All three are read into one runMeta; the rules (pass.go) never ask where
// it came from.

// The keys of the run metadata that place a run in a graph or name the
// LangChain agent it runs in.
const (
	mdNode  = "langgraph_node"          // the graph node the run is part of
	mdNS    = "langgraph_checkpoint_ns" // the node's checkpoint namespace: "|" in it, a subgraph's
	mdAgent = "lc_agent_name"           // LangChain v1 create_agent's name, on every run inside it
)

// Exporters, in the order their copies are compared.
const (
	srcOpenInference = iota
	srcLangSmith
	srcLangfuse
	numSources
)

// Flat-key prefixes of the exporters that write one attribute per key.
const (
	langsmithPrefix = "langsmith.metadata."
	langfusePrefix  = "langfuse.observation.metadata."
)

// runMeta is what one exporter's copy of a run's metadata says.
type runMeta struct {
	node, ns, agent string
	any             bool // the exporter wrote run metadata on the span at all
}

// field returns one of runMeta's fields by key.
func (m *runMeta) field(key string) *string {
	switch key {
	case mdNode:
		return &m.node
	case mdNS:
		return &m.ns
	case mdAgent:
		return &m.agent
	}
	return nil
}

// flatValue reads a flat metadata attribute's value: a string as it is,
// or a JSON-encoded string (Langfuse's Python SDK v5) unquoted.
func flatValue(kv *attribute.KeyValue) string {
	v := recognize.Quiet(kv)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		var s string
		if json.Unmarshal([]byte(v), &s) == nil {
			return s
		}
	}
	return v
}

// readFlat reads one attribute of a flat exporter (prefix its prefix) into
// m: any key makes the span one with run metadata; the three keys above
// are kept.
func readFlat(m *runMeta, kv *attribute.KeyValue, prefix string) {
	key := string(kv.Key)
	if len(key) <= len(prefix) {
		return
	}
	m.any = true
	if f := m.field(key[len(prefix):]); f != nil {
		*f = flatValue(kv)
	}
}

// readJSON reads OpenInference's metadata attribute into m. Only a value
// that mentions one of the keys is parsed (most runs' metadata is parsed
// only when the pass needs it, so a span pays for a scan, not a decode).
func readJSON(m *runMeta, v string) {
	m.any = v != ""
	if !strings.Contains(v, `"`+mdNode+`"`) && !strings.Contains(v, `"`+mdAgent+`"`) {
		return
	}
	// As json.Unmarshal into a struct of the three, without reflection.
	var vals [3]string
	if !jsonenc.StringFields(v, metadataKeys[:], vals[:]) {
		return
	}
	m.node, m.ns, m.agent = vals[0], vals[1], vals[2]
}

// metadataKeys are the keys readJSON reads, in runMeta's order.
var metadataKeys = [...]string{mdNode, mdNS, mdAgent}

// merged is the one reading of a span's run metadata from every exporter
// that wrote a copy. A key the copies disagree on is read from none of
// them (conflict names the first such key): two exporters that saw one
// run record the same metadata, so a disagreement means one of them is not
// what it claims, and neither is believed.
func merged(srcs *[numSources]runMeta) (m runMeta, conflict string) {
	for _, key := range [...]string{mdNode, mdNS, mdAgent} {
		var val string
		clash := false
		for k := range srcs {
			switch v := *srcs[k].field(key); {
			case v == "" || v == val:
			case val == "":
				val = v
			default:
				clash = true
			}
		}
		if clash {
			val = ""
			if conflict == "" {
				conflict = key
			}
		}
		*m.field(key) = val
	}
	for k := range srcs {
		m.any = m.any || srcs[k].any
	}
	return m, conflict
}

// topLevel reports a checkpoint namespace of a node of the outermost graph
// (no "|": a subgraph's nodes have their parent's namespace before it).
func topLevel(ns string) bool { return !strings.Contains(ns, "|") }

// under reports whether namespace ns is one level or more inside parent:
// a node of the graph run in parent's node.
func under(ns, parent string) bool {
	return len(ns) > len(parent) && ns[len(parent)] == '|' && ns[:len(parent)] == parent
}
