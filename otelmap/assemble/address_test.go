package assemble

import (
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/coordbench/coordbench/otelmap"
)

// TestInternAddressIsServerAddress: internAddress names the identity
// intern(serverAddress(sp)) names, for every shape of server.address and
// server.port, whether the identity is new or seen before.
func TestInternAddressIsServerAddress(t *testing.T) {
	long := strings.Repeat("h", 80)
	cases := [][]attribute.KeyValue{
		{},
		{otelmap.AttrServerAddress.String("billing")},
		{otelmap.AttrServerAddress.String("billing"), otelmap.AttrServerPort.Int64(8080)},
		{otelmap.AttrServerAddress.String("billing"), otelmap.AttrServerPort.String("9000")},
		{otelmap.AttrServerAddress.String("billing"), otelmap.AttrServerPort.String("x9")},
		{otelmap.AttrServerAddress.String("billing"), otelmap.AttrServerPort.Int64(0)},
		{otelmap.AttrServerAddress.String("billing"), otelmap.AttrServerPort.Int64(-3)},
		{otelmap.AttrServerAddress.String("::1"), otelmap.AttrServerPort.Int64(443)},
		{otelmap.AttrServerAddress.String("[::1]"), otelmap.AttrServerPort.Int64(443)},
		{otelmap.AttrServerAddress.String(long), otelmap.AttrServerPort.Int64(1 << 40)},
		{otelmap.AttrServerPort.Int64(80)},
	}
	for round := range 2 { // new identities, then the same seen before
		a := &assembler{identIx: map[string]int32{}}
		for k, attrs := range cases {
			sp := &otelmap.Span{Attrs: attrs}
			if round == 1 {
				a.intern(serverAddress(sp))
			}
			got := a.internAddress(sp)
			if want := a.intern(serverAddress(sp)); got != want || a.idents[got].name != serverAddress(sp) {
				t.Errorf("round %d, case %d: internAddress = %d (%q); intern(serverAddress) = %d (%q)",
					round, k, got, a.idents[got].name, want, serverAddress(sp))
			}
		}
	}
}
