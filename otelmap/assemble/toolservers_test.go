package assemble_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble"
	"github.com/coordbench/coordbench/otelmap/tracestore"
	"github.com/coordbench/coordbench/tracedata"
)

// mcpAttrs are the MCP conventions' attributes of one request.
func mcpAttrs(method, tool, session, id string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("mcp.method.name", method), attribute.String("mcp.session.id", session),
		attribute.String("network.transport", "tcp")}
	if id != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", id))
	}
	if tool != "" {
		attrs = append(attrs, attribute.String("gen_ai.tool.name", tool), attribute.String("gen_ai.operation.name", "execute_tool"))
	}
	return attrs
}

// mcpRequest records one MCP request as the conventions have it: a CLIENT
// span in from, a SERVER span in srv under it (the context through
// params._meta), with server.address and server.port on both sides.
func mcpRequest(ctx context.Context, c *clock, from, srv *simProc, method, tool, id string, fail bool) {
	addr := []attribute.KeyValue{attribute.String("server.address", "10.0.0.7"), attribute.Int("server.port", 8931)}
	name := method
	if tool != "" {
		name += " " + tool
	}
	cctx, cl := from.start(ctx, c, name, trace.SpanKindClient, append(mcpAttrs(method, tool, "s1", id), addr...)...)
	if srv != nil {
		_, sv := srv.start(propagate(cctx), c, name, trace.SpanKindServer, append(mcpAttrs(method, tool, "s1", id), addr...)...)
		if fail {
			sv.SetAttributes(attribute.String("error.type", "tool_error"))
			sv.SetStatus(codes.Error, "the tool reported an error")
		}
		end(c, sv)
	}
	if fail {
		cl.SetAttributes(attribute.String("error.type", "tool_error"))
		cl.SetStatus(codes.Error, "the tool reported an error")
	}
	end(c, cl)
}

// TestMCPToolServer: an agent's MCP requests, recorded by both sides as the
// OpenTelemetry MCP conventions say, make a tool-server node (role
// tool_server, named by its address) and one call per tools/call, with
// the failed one counted as an error; initialize and tools/list are read
// but are neither steps nor calls; nothing is unread, and the server's
// process (service.name) is not an agent. A client span nobody answered
// still reaches the tool server, seen from the client only.
func TestMCPToolServer(t *testing.T) {
	store := tracestore.NewStore(tracestore.Limits{})
	agent := newSimProc(t, store, "planner-svc")
	server := newSimProc(t, store, "files-mcp")
	c := newClock()
	ctx, root := agent.start(context.Background(), c, otelmap.SpanInvokeAgentPrefix+"planner", trace.SpanKindInternal, invokeAttrs("planner")...)
	mcpRequest(ctx, c, agent, server, "initialize", "", "0", false)
	mcpRequest(ctx, c, agent, server, "notifications/initialized", "", "", false)
	mcpRequest(ctx, c, agent, server, "tools/list", "", "1", false)
	mcpRequest(ctx, c, agent, server, "tools/call", "read_file", "2", false)
	mcpRequest(ctx, c, agent, server, "tools/call", "read_file", "3", true)
	mcpRequest(ctx, c, agent, nil, "tools/call", "write_file", "4", false)
	end(c, root)

	td := assemble.Trace(root.SpanContext().TraceID(), store.Spans(root.SpanContext().TraceID()))
	var tool *tracedata.Agent
	for i := range td.Agents {
		a := &td.Agents[i]
		switch a.Name {
		case "mcp://10.0.0.7:8931":
			tool = a
		case "files-mcp", "planner-svc":
			t.Errorf("the service %s is a node: %+v", a.Name, a)
		}
	}
	if tool == nil || tool.Role != tracedata.RoleToolServer || tool.Measured() {
		t.Fatalf("tool server node %+v; agents %s", tool, mustJSON(t, td))
	}
	in := findInteraction(td, "planner", "mcp://10.0.0.7:8931")
	if in == nil || in.Count != 3 || in.Errors != 1 || in.BothSides != 2 || in.ClientOnly != 1 || len(in.LatenciesMS) != 3 {
		t.Fatalf("planner -> tool server: %+v; edges %v", in, edges(td))
	}
	if len(td.Interactions) != 1 {
		t.Errorf("interactions %v, want the tool calls only", edges(td))
	}
	tools := 0
	for _, s := range td.Steps {
		if s.CallType == tracedata.CallTool {
			tools++
		}
	}
	// Three client spans and two server spans of tools/call.
	if tools != 5 {
		t.Errorf("%d tool steps, want 5", tools)
	}
	if td.Coverage.Unrecognized != 0 || len(td.Coverage.UnreadNamespaces) != 0 || td.Coverage.Recognized["mcp"] != 11 {
		t.Errorf("coverage: recognized %v, unrecognized %d, unread %v", td.Coverage.Recognized, td.Coverage.Unrecognized, td.Coverage.UnreadNamespaces)
	}
	assertPermutationStable(t, root.SpanContext().TraceID(), store.Spans(root.SpanContext().TraceID()), 5)
}

// TestToolStepChildInAnotherProcess: a span whose parent is a tool step of
// another process (the context carried by OpenInference's MCP
// instrumentation, which makes no span) is the tool server's side of a
// call; a cross-process child that is an agent's span is no tool server's.
func TestToolStepChildInAnotherProcess(t *testing.T) {
	store := tracestore.NewStore(tracestore.Limits{})
	agent := newSimProc(t, store, "agent-svc")
	server := newSimProc(t, store, "search-mcp")
	remote := newSimProc(t, store, "remote-agent-svc")
	c := newClock()
	oiTool := func(name string) []attribute.KeyValue {
		return []attribute.KeyValue{attribute.String("openinference.span.kind", "TOOL"), attribute.String("tool.name", name)}
	}
	ctx, root := agent.start(context.Background(), c, "searcher", trace.SpanKindInternal,
		attribute.String("openinference.span.kind", "AGENT"), attribute.String("agent.name", "searcher"))
	tctx, tl := agent.start(ctx, c, "search", trace.SpanKindInternal, oiTool("search")...)
	_, sv := server.start(propagate(tctx), c, "search", trace.SpanKindInternal, oiTool("search")...)
	end(c, sv)
	end(c, tl)
	// A tool that runs an agent elsewhere: that is an agent call.
	tctx, tl = agent.start(ctx, c, "ask_expert", trace.SpanKindInternal, oiTool("ask_expert")...)
	_, ex := remote.start(propagate(tctx), c, otelmap.SpanInvokeAgentPrefix+"expert", trace.SpanKindInternal, invokeAttrs("expert")...)
	end(c, ex)
	end(c, tl)
	end(c, root)

	td := assemble.Trace(root.SpanContext().TraceID(), store.Spans(root.SpanContext().TraceID()))
	if in := findInteraction(td, "searcher", "search-mcp"); in == nil || in.Count != 1 || in.BothSides != 1 {
		t.Errorf("searcher -> search-mcp: %+v; edges %v", in, edges(td))
	}
	for _, a := range td.Agents {
		want := ""
		if a.Name == "search-mcp" {
			want = tracedata.RoleToolServer
		}
		if a.Role != want {
			t.Errorf("%s has role %q, want %q", a.Name, a.Role, want)
		}
	}
	if findInteraction(td, "searcher", "remote-agent-svc") != nil {
		t.Errorf("the remote agent's process is read as a tool server: %v", edges(td))
	}
}
