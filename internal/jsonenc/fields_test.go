package jsonenc

import (
	"encoding/json"
	"strings"
	"testing"
)

// fieldsDoc is the struct StringFields stands for in the tests: three
// string fields, as LangGraph's run metadata is read.
type fieldsDoc struct {
	Node  string `json:"langgraph_node"`
	NS    string `json:"langgraph_checkpoint_ns"`
	Agent string `json:"lc_agent_name"`
}

var fieldNames = []string{"langgraph_node", "langgraph_checkpoint_ns", "lc_agent_name"}

// StringFields must give json.Unmarshal's fields, and fail where it fails:
// ParseObject's cases, and those of a struct's reading (keys matched by
// folding, a repeated key, null, a value of the wrong type, values never
// decoded).
var fieldsCases = append(slicesClone(objectCases),
	`{"langgraph_node":"agent","langgraph_checkpoint_ns":"supervisor:1|agent:2","ls_integration":"langgraph","langgraph_step":1,"langgraph_triggers":["branch:to:agent"]}`,
	`{"LANGGRAPH_NODE":"a"}`, `{"Langgraph_Node":"a","langgraph_node":"b"}`, `{"langgraph_node":"b","LANGGRAPH_NODE":"a"}`,
	"{\"langgraph_chec\u212apoint_ns\":\"kelvin\"}", "{\"lc_agent_name\u017f\":\"long s\"}", "{\"LC_AGENT_NAME\":\"x\",\"lc_agent_\xffname\":\"y\"}",
	`{"lc_\u0061gent_name":"escaped key"}`, `{"lc_agent_name":"a","lc_agent_name":null}`, `{"lc_agent_name":null,"lc_agent_name":"b"}`,
	`{"lc_agent_name":1}`, `{"lc_agent_name":true}`, `{"lc_agent_name":{}}`, `{"lc_agent_name":[]}`, `{"lc_agent_name":"a","x":1,}`,
	`{"lc_agent_name":nul}`, `{"lc_agent_name":nullx}`, `{"lc_agent_name":"\u00e9\ud800\ud83d\ude42"}`, "{\"lc_agent_name\":\"\xff\"}",
	`{"other":1e400}`, `{"other":-1e999,"langgraph_node":"n"}`, `{"other":[1e400,{"a":"\ud800"}]}`, `{"other":"\x"}`,
	`{"other":"\u12"}`, "{\"other\":\"\x1f\"}", `{"other":01}`, `{"other":[1,]}`, `{"other":{"a" 1}}`, `{"other":{"a":1,}}`,
	`{"langgraph_node":"a"} x`, `{"langgraph_node":"a"}}`, `[{"langgraph_node":"a"}]`, `"langgraph_node"`, `{"langgraph_node":"a"`,
	`  {  "langgraph_node"  :  "a"  ,  "lc_agent_name"  :  "b"  }  `, `{"":"","langgraph_node":""}`,
)

func slicesClone(s []string) []string { return append([]string(nil), s...) }

func TestStringFieldsMatchesEncodingJSON(t *testing.T) {
	for _, doc := range fieldsCases {
		checkFields(t, doc)
	}
	for _, depth := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		// An object holding depth-1 nested arrays (or objects): depth levels in all.
		checkFields(t, `{"a":`+strings.Repeat("[", depth-1)+strings.Repeat("]", depth-1)+`}`)
		checkFields(t, `{"a":`+strings.Repeat(`{"b":`, depth-1)+`1`+strings.Repeat("}", depth-1)+`}`)
	}
}

func FuzzStringFields(f *testing.F) {
	for _, doc := range fieldsCases {
		f.Add(doc)
	}
	f.Fuzz(checkFields)
}

func checkFields(t *testing.T, doc string) {
	var want fieldsDoc
	werr := json.Unmarshal([]byte(doc), &want)
	got := make([]string, len(fieldNames))
	ok := StringFields(doc, fieldNames, got)
	if ok != (werr == nil) {
		t.Fatalf("StringFields(%q) ok %v; json.Unmarshal's error %v", doc, ok, werr)
	}
	if ok && (got[0] != want.Node || got[1] != want.NS || got[2] != want.Agent) {
		t.Fatalf("StringFields(%q) = %q; json.Unmarshal %+v", doc, got, want)
	}
}
