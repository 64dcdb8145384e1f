package a2aserve

import (
	"net"
	"testing"
)

func TestBaseURL(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9009}, "http://127.0.0.1:9009"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 9009}, "http://127.0.0.1:9009"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 80}, "http://[::1]:80"},
		{&net.TCPAddr{IP: net.ParseIP("10.1.2.3"), Port: 1}, "http://10.1.2.3:1"},
	} {
		if got := BaseURL(tc.addr); got != tc.want {
			t.Errorf("BaseURL(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

func TestNewHandlerNeedsCardAndExecutor(t *testing.T) {
	if _, err := NewHandler(Options{}); err == nil {
		t.Fatal("NewHandler without a card and an executor must fail")
	}
}
