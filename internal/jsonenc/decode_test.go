package jsonenc

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// ParseObject must give json.Unmarshal's map, and fail where it fails.
var objectCases = []string{
	``, ` `, `null`, ` null `, `nul`, `null x`, `{}`, `[]`, `"s"`, `1`, `true`, `{"a":1}x`, `{"a":1}}`,
	` { "a" : [ 1 , 2.5e-3 , -0 , 1E+2 , null , true , false ] , "b" : { } , "c" : [ ] } `,
	`{"a":1,"a":{"x":2},"b":{"y":1},"b":{"z":2}}`, `{"a":1,}`, `{"a" 1}`, `{a:1}`, `{"a":[1,]}`, `{"a":[,1]}`,
	`{"n":01}`, `{"n":-}`, `{"n":1.}`, `{"n":.5}`, `{"n":1e}`, `{"n":1e+}`, `{"n":+1}`, `{"n":1e400}`, `{"n":-1e400}`,
	`{"n":1e-400}`, `{"n":123456789012345678901234567890}`, `{"n":NaN}`, `{"n":tru}`, `{"n":nulll}`,
	`{"s":"\"\\\/\b\f\n\r\t"}`, `{"s":"\u00e9\u4e2d\ud83d\ude42"}`, `{"s":"\ud800"}`, `{"s":"\udc00\ud800x"}`,
	`{"s":"\ud800\u0041"}`, `{"s":"\ud800\ud800\udc00"}`, `{"s":"\ud83d\u"}`, `{"s":"\uZZZZ"}`, `{"s":"\x"}`,
	"{\"s\":\"\xff\xfe \xed\xa0\x80 \xe2\x82\"}", "{\"s\":\"tab\there\"}", "{\"s\":\"\x00\"}", `{"s":"unterminated}`,
	`{"s":"\`, "{\"\xff\":1}", `{"":""}`, "\t\r\n{\"a\":\"é\"}\n",
}

func TestParseObjectMatchesEncodingJSON(t *testing.T) {
	for _, doc := range objectCases {
		checkObject(t, doc)
	}
	for _, depth := range []int{maxDepth - 1, maxDepth, maxDepth + 1} {
		// An object holding depth-1 nested arrays: depth levels in all.
		checkObject(t, `{"a":`+strings.Repeat("[", depth-1)+strings.Repeat("]", depth-1)+`}`)
	}
}

func FuzzParseObject(f *testing.F) {
	for _, doc := range objectCases {
		f.Add(doc)
	}
	f.Fuzz(checkObject)
}

func checkObject(t *testing.T, doc string) {
	var want map[string]any
	werr := json.Unmarshal([]byte(doc), &want)
	got, ok := ParseObject(doc)
	if ok != (werr == nil) {
		t.Fatalf("ParseObject(%q) ok %v; json.Unmarshal's error %v", doc, ok, werr)
	}
	if !ok {
		return
	}
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if !reflect.DeepEqual(got, want) || !bytes.Equal(gotJSON, wantJSON) {
		t.Fatalf("ParseObject(%q) = %#v (%s); json.Unmarshal %#v (%s)", doc, got, gotJSON, want, wantJSON)
	}
}
