package a2aserve

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

func TestExtensionRequested(t *testing.T) {
	const uri = "https://example.org/ext/v1"
	for _, tc := range []struct {
		name   string
		params map[string][]string
		want   bool
	}{
		{"none", nil, false},
		{"alone", map[string][]string{"A2A-Extensions": {uri}}, true},
		{"in a list, spaced", map[string][]string{"A2A-Extensions": {"urn:other , " + uri + " ,x"}}, true},
		{"second value", map[string][]string{"A2A-Extensions": {"urn:other", uri}}, true},
		{"lower-case key", map[string][]string{"a2a-extensions": {uri}}, true},
		{"a prefix only", map[string][]string{"A2A-Extensions": {uri + "/more"}}, false},
		{"another parameter", map[string][]string{"X-Other": {uri}}, false},
	} {
		ec := &a2asrv.ExecutorContext{}
		if tc.params != nil {
			ec.ServiceParams = a2asrv.NewServiceParams(tc.params)
		}
		if got := ExtensionRequested(ec, uri); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if ExtensionRequested(nil, uri) {
		t.Error("a nil context requested an extension")
	}
}
