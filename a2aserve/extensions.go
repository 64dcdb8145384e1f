package a2aserve

import (
	"strings"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
)

// ExtensionRequested reports whether the request an executor runs
// activated the extension uri: the A2A-Extensions service parameter (onto
// which a2av0 maps the 0.3 X-A2A-Extensions header), a comma-separated
// list of URIs, possibly given several times.
func ExtensionRequested(ec *a2asrv.ExecutorContext, uri string) bool {
	if ec == nil || ec.ServiceParams == nil {
		return false
	}
	vals, _ := ec.ServiceParams.Get(a2a.SvcParamExtensions)
	for _, v := range vals {
		for _, u := range strings.Split(v, ",") {
			if strings.TrimSpace(u) == uri {
				return true
			}
		}
	}
	return false
}
