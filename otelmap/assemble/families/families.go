// Package families is the registry of the built-in convention families:
// one package each under this folder, listed here in precedence order.
// A family is what one framework, instrumentation or standard writes on
// its spans and what that says a span is (recognize.Family); adding one is
// a folder beside these and a line in Builtin (see the example family,
// package example, and docs/trace-assembly.md, "Adding a family").
package families

import (
	"github.com/coordbench/coordbench/otelmap/assemble/families/autogen"
	"github.com/coordbench/coordbench/otelmap/assemble/families/ax"
	"github.com/coordbench/coordbench/otelmap/assemble/families/crewai"
	"github.com/coordbench/coordbench/otelmap/assemble/families/genai"
	"github.com/coordbench/coordbench/otelmap/assemble/families/genkit"
	"github.com/coordbench/coordbench/otelmap/assemble/families/langfuse"
	"github.com/coordbench/coordbench/otelmap/assemble/families/langgraph"
	"github.com/coordbench/coordbench/otelmap/assemble/families/llamaindex"
	"github.com/coordbench/coordbench/otelmap/assemble/families/openinference"
	"github.com/coordbench/coordbench/otelmap/assemble/families/openlit"
	"github.com/coordbench/coordbench/otelmap/assemble/families/openllmetry"
	"github.com/coordbench/coordbench/otelmap/assemble/families/vercelai"
	"github.com/coordbench/coordbench/otelmap/assemble/families/voltagent"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
)

// Builtin returns the built-in families in precedence order. What a span's
// operation is goes by the strongest word (recognize.Tier: a framework's
// own namespace before an instrumentation's kind before the GenAI
// standard...), and its agent's name by the best rule (recognize.NameTier);
// this order breaks the ties within a tier, and the families' passes over
// the tree run in it.
func Builtin() []recognize.Family {
	return []recognize.Family{
		genai.Family,         // the OpenTelemetry GenAI conventions, current and previous
		openinference.Family, // OpenInference's instrumentations
		langgraph.Family,     // LangGraph's graph node runs and LangChain's agents, from run metadata
		llamaindex.Family,    // LlamaIndex AgentWorkflow's agents, from its steps' events
		openllmetry.Family,   // OpenLLMetry (Traceloop)
		openlit.Family,       // OpenLIT: a team leader's run it records as a workflow
		vercelai.Family,      // the Vercel AI SDK's experimental_telemetry
		genkit.Family,        // Genkit
		voltagent.Family,     // VoltAgent
		langfuse.Family,      // Langfuse's observations
		ax.Family,            // Ax
		autogen.Family,       // AutoGen AgentChat's group chats: speaker turns
		crewai.Family,        // CrewAI's delegations to coworkers
	}
}

// defaultRegistry is the registry of the built-in families.
var defaultRegistry = must(recognize.NewRegistry(Builtin()...))

// Default returns the registry of the built-in families, made once.
func Default() *recognize.Registry { return defaultRegistry }

// With returns a registry of first (a user's convention map, whose word
// comes before every built-in family's) and the built-in families.
func With(first recognize.Family) (*recognize.Registry, error) {
	return recognize.NewRegistry(append([]recognize.Family{first}, Builtin()...)...)
}

// must panics on the error of a registry of the built-in families: a
// mistake in this file, which every test of assembly finds.
func must(reg *recognize.Registry, err error) *recognize.Registry {
	if err != nil {
		panic(err)
	}
	return reg
}
