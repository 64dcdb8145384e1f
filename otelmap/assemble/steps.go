package assemble

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/internal/jsonenc"
	"github.com/coordbench/coordbench/otelmap"
	"github.com/coordbench/coordbench/otelmap/assemble/internal/genaimsg"
	"github.com/coordbench/coordbench/otelmap/assemble/recognize"
	"github.com/coordbench/coordbench/tracedata"
)

// This file writes the steps: one per span that is an agent call, an LLM
// or tool call, or a HOST span, in start order, with the attributes only
// steps need (messages, model, tokens, cost, parameters, error).

// buildSteps writes td.Steps, ordered by start time then step id, and
// counts each agent's steps and errors.
func (a *assembler) buildSteps(td *tracedata.TraceData, nSteps int) {
	keys := make([]startKey, 0, nSteps)
	for i := range a.nodes {
		if n := &a.nodes[i]; n.flags&fStep != 0 {
			keys = append(keys, startKey{t: n.start, id: n.id, ix: int32(i)})
		}
	}
	slices.SortFunc(keys, compareStart)
	// All step ids live in one string, so a step costs no allocation for
	// its id or its parent's.
	buf := make([]byte, 16*len(keys))
	var idb [8]byte
	for k, key := range keys {
		a.nodes[key.ix].stepIx = int32(k)
		binary.BigEndian.PutUint64(idb[:], key.id)
		hex.Encode(buf[16*k:], idb[:])
	}
	ids := string(buf)
	traceHex := td.TraceID
	td.Steps = make([]tracedata.Step, len(keys))
	// Nodes are visited in input order, which reads the spans in memory
	// order; the writes go to the steps' sorted places.
	for i := range a.nodes {
		n := &a.nodes[i]
		if n.flags&fStep == 0 {
			continue
		}
		k := n.stepIx
		st := &td.Steps[k]
		st.StepID = ids[16*k : 16*k+16]
		st.TraceID = traceHex
		if len(a.joined) > 0 && a.spans[n.sp].TraceID != a.traceID {
			st.TraceID = a.spans[n.sp].TraceID.String()
		}
		if p := n.stepAnc; p >= 0 {
			j := a.nodes[p].stepIx
			st.ParentStepID = ids[16*j : 16*j+16]
		}
		st.CallType = n.callType.Tracedata()
		st.Name = a.spans[n.sp].Name
		if n.start != 0 {
			st.StartTime = time.Unix(0, n.start).UTC()
		}
		if n.end != 0 {
			st.EndTime = time.Unix(0, n.end).UTC()
		}
		if n.start != 0 && n.end >= n.start {
			st.LatencyMS = float64(n.end-n.start) / float64(time.Millisecond)
			st.Latency = int64(math.Round(st.LatencyMS))
		}
		agent, caller := a.stepAgents(n)
		st.Agent = a.idents[agent].name
		if caller >= 0 {
			st.Caller = a.idents[caller].name
		}
		a.stepDetails(int32(i), st)
		x := &a.idents[agent]
		x.used = true
		x.steps++
		if st.Error != "" {
			x.errors++
		}
	}
}

// markStepAgents marks the agents that did a step as used, as buildSteps
// does, without building the steps (Options.WithoutSteps).
func (a *assembler) markStepAgents() {
	for i := range a.nodes {
		if n := &a.nodes[i]; n.flags&fStep != 0 {
			agent, _ := a.stepAgents(n)
			a.idents[agent].used = true
		}
	}
}

// stepAgents returns the agent a step is attributed to and, for an agent
// call, its caller (-1 if none). A client agent span names the callee of
// its call; an agent span that receives or is a call has that call's
// caller; an agent span doing the work of a received call has the caller
// of that call.
func (a *assembler) stepAgents(n *node) (agent, caller int32) {
	agent, caller = a.stepAgent(n), -1
	if n.flags&fAgent == 0 {
		return agent, caller
	}
	c := n.call
	switch {
	case n.role == recognize.RoleClient:
		c = a.chains[a.nodes[n.topClient].chain].call
		if c >= 0 {
			agent = a.calls[c].callee
		} else if n.selfIdent >= 0 {
			agent = n.selfIdent
		}
	case c < 0:
		if r := &a.nodes[n.segRoot]; r.flags&fEntry != 0 && r.call >= 0 && a.calls[r.call].callee == agent {
			c = r.call
		}
	}
	if c >= 0 {
		caller = a.calls[c].caller
	}
	return agent, caller
}

// stepDetails reads the attributes only steps need.
func (a *assembler) stepDetails(i int32, st *tracedata.Step) {
	sp := a.span(i)
	var errType, taskState, reqModel, respModel, famModel string
	var inTok, outTok int64
	var haveTotal, haveTok bool
	// Token counts in the previous shapes: gen_ai.usage.prompt_tokens and
	// completion_tokens (GenAI before input/output), and the families'
	// (recognize.Spec.StepKeys).
	var prevIn, prevOut, prevTotal int64
	var havePrev, havePrevTotal bool
	var toolArgs string
	for k := range sp.Attrs {
		kv := &sp.Attrs[k]
		key := string(kv.Key)
		switch {
		case strings.HasPrefix(key, "gen_ai."):
			switch kv.Key {
			case otelmap.AttrGenAIInputMessages:
				st.Input = messagesText(kv.Value)
			case otelmap.AttrGenAIOutputMessages:
				st.Output = messagesText(kv.Value)
			case otelmap.AttrGenAIRequestModel:
				reqModel = a.str(i, kv)
			case otelmap.AttrGenAIResponseModel:
				respModel = a.str(i, kv)
			case otelmap.AttrGenAIInputTokens:
				inTok, haveTok = a.integer(i, kv), true
			case otelmap.AttrGenAIOutputTokens:
				outTok, haveTok = a.integer(i, kv), true
			case "gen_ai.usage.prompt_tokens":
				prevIn, havePrev = quietInt(kv), true
			case "gen_ai.usage.completion_tokens":
				prevOut, havePrev = quietInt(kv), true
			case otelmap.AttrGenAIToolCallArgs:
				if kv.Value.Type() == attribute.STRING {
					toolArgs = kv.Value.AsString()
				}
			}
		case strings.HasPrefix(key, "coordbench."):
			switch {
			case kv.Key == otelmap.AttrTotalTokens:
				st.TotalTokens, haveTotal = a.integer(i, kv), true
			case kv.Key == otelmap.AttrCost:
				st.Cost = a.float(i, kv)
			case kv.Key == otelmap.AttrStepType:
				st.StepType = a.str(i, kv)
			case strings.HasPrefix(key, otelmap.AttrParametersPrefix):
				st.Parameters = putAttr(st.Parameters, key[len(otelmap.AttrParametersPrefix):], kv.Value)
			case strings.HasPrefix(key, otelmap.AttrRequestsPrefix):
				st.Requests = putAttr(st.Requests, key[len(otelmap.AttrRequestsPrefix):], kv.Value)
			case strings.HasPrefix(key, otelmap.AttrExtraPrefix):
				st.AdditionalAttributes = putAttr(st.AdditionalAttributes, key[len(otelmap.AttrExtraPrefix):], kv.Value)
			}
		case kv.Key == otelmap.AttrErrorType:
			if kv.Value.Type() == attribute.STRING {
				errType = kv.Value.AsString()
			}
		case kv.Key == otelmap.AttrA2ATaskState:
			if kv.Value.Type() == attribute.STRING {
				taskState = kv.Value.AsString()
			}
		default:
			switch a.reg.StepDetail(key) {
			case recognize.StepModel:
				famModel = quietString(kv)
			case recognize.StepInputTokens:
				prevIn, havePrev = quietInt(kv), true
			case recognize.StepOutputTokens:
				prevOut, havePrev = quietInt(kv), true
			case recognize.StepTotalTokens:
				prevTotal, havePrevTotal = quietInt(kv), true
			}
		}
	}
	st.Model = cmp.Or(reqModel, respModel, famModel)
	switch {
	case haveTotal:
	case haveTok:
		st.TotalTokens = inTok + outTok
	case havePrevTotal:
		st.TotalTokens = prevTotal
	case havePrev:
		st.TotalTokens = prevIn + prevOut
	}
	if st.Parameters == nil && toolArgs != "" {
		// A tool call's arguments, as GenAI records them, are the
		// extension's parameters.
		// jsonenc.ParseObject is json.Unmarshal's map without reflection:
		// the arguments of every tool call of every trace are parsed.
		if args, ok := jsonenc.ParseObject(toolArgs); ok {
			st.Parameters = args
		}
	}
	switch {
	case a.nodes[i].flags&fControlFlow != 0:
		// Control flow, not a failure (convmap.Map.ControlFlow).
	case sp.StatusError:
		st.Error = cmp.Or(sp.StatusMessage, errType, "error")
	case errType != "":
		st.Error = errType
	case recognize.A2AFailed(taskState):
		st.Error = "a2a task " + taskState
	}
	if st.StepType == "" {
		n := &a.nodes[i]
		switch {
		case n.callType == recognize.CallAgent:
			st.StepType = "agent_call"
		case n.callType == recognize.CallHost:
			st.StepType = "host"
		case n.op == recognize.OpLLM:
			st.StepType = "llm_call"
		default:
			st.StepType = "tool_call"
		}
	}
}

// integer returns an integer attribute, noting a value of another type.
func (a *assembler) integer(i int32, kv *attribute.KeyValue) int64 {
	switch kv.Value.Type() {
	case attribute.INT64:
		return kv.Value.AsInt64()
	case attribute.FLOAT64:
		if f := kv.Value.AsFloat64(); f == math.Trunc(f) && math.Abs(f) < 1<<62 {
			return int64(f)
		}
	case attribute.STRING:
		if v, err := strconv.ParseInt(kv.Value.AsString(), 10, 64); err == nil {
			return v
		}
	}
	a.attrWarn(i, string(kv.Key), fmt.Sprintf("is %s %s, want an integer", kv.Value.Type(), kv.Value.String()))
	return 0
}

// float returns a number attribute, noting a value of another type.
func (a *assembler) float(i int32, kv *attribute.KeyValue) float64 {
	var f float64
	switch kv.Value.Type() {
	case attribute.INT64:
		return float64(kv.Value.AsInt64())
	case attribute.FLOAT64:
		f = kv.Value.AsFloat64()
	case attribute.STRING:
		v, err := strconv.ParseFloat(kv.Value.AsString(), 64)
		if err != nil {
			f = math.NaN()
		} else {
			f = v
		}
	default:
		f = math.NaN()
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		a.attrWarn(i, string(kv.Key), fmt.Sprintf("is %s %s, want a finite number", kv.Value.Type(), kv.Value.String()))
		return 0
	}
	return f
}

func putAttr(m map[string]any, key string, v attribute.Value) map[string]any {
	if m == nil {
		m = make(map[string]any)
	}
	m[key] = jsonValue(v)
	return m
}

// jsonValue converts an attribute value to a value encoding/json can
// always encode: non-finite floats become strings.
func jsonValue(v attribute.Value) any {
	switch v.Type() {
	case attribute.FLOAT64:
		return finite(v.AsFloat64())
	case attribute.FLOAT64SLICE:
		fs := v.AsFloat64Slice()
		out := make([]any, len(fs))
		for i, f := range fs {
			out[i] = finite(f)
		}
		return out
	case attribute.EMPTY:
		return nil
	default:
		return v.AsInterface()
	}
}

func finite(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	return f
}

// messagesText returns the text of GenAI messages (gen_ai.input.messages,
// gen_ai.output.messages), text parts joined with newlines; a value that is
// not such JSON, or holds no text, as it is (genaimsg.Text).
func messagesText(v attribute.Value) string {
	if v.Type() != attribute.STRING {
		return v.String()
	}
	return genaimsg.Text(v.AsString())
}

// str returns a string attribute's value on node i's span, noting a value
// of another type.
func (a *assembler) str(i int32, kv *attribute.KeyValue) string {
	if kv.Value.Type() != attribute.STRING {
		a.attrWarn(i, string(kv.Key), fmt.Sprintf("is %s, want string", kv.Value.Type()))
		return ""
	}
	return kv.Value.AsString()
}

func (a *assembler) attrWarn(i int32, key, what string) {
	a.attrWarnings = append(a.attrWarnings, recognize.Warning{Span: a.nodes[i].id, Key: key, Msg: what})
}

// quietInt returns an integer attribute of another convention, 0 for a
// value of another type (not policed with a warning).
func quietInt(kv *attribute.KeyValue) int64 {
	switch kv.Value.Type() {
	case attribute.INT64:
		return kv.Value.AsInt64()
	case attribute.FLOAT64:
		if f := kv.Value.AsFloat64(); f == math.Trunc(f) && math.Abs(f) < 1<<62 {
			return int64(f)
		}
	case attribute.STRING:
		if v, err := strconv.ParseInt(kv.Value.AsString(), 10, 64); err == nil {
			return v
		}
	}
	return 0
}

// quietString returns a string attribute of another convention, "" for a
// value of another type (not policed with a warning).
func quietString(kv *attribute.KeyValue) string {
	if kv.Value.Type() != attribute.STRING {
		return ""
	}
	return kv.Value.AsString()
}
