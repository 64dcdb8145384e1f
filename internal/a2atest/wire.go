package a2atest

import (
	"net"
)

// wireListener keeps the raw bytes of every connection, so tests can check
// header spelling on the wire.
type wireListener struct {
	net.Listener
	p *Agent
}

func (l *wireListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &wireConn{Conn: c, p: l.p}, nil
}

type wireConn struct {
	net.Conn
	p *Agent
}

func (c *wireConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.p.mu.Lock()
		if room := maxWireLog - c.p.wire.Len(); room > 0 {
			c.p.wire.Write(b[:min(n, room)])
		}
		c.p.mu.Unlock()
	}
	return n, err
}
