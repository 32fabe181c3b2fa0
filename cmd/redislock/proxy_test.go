package main

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// tcpProxy forwards the connections it accepts on a loopback port to
// upstream, until it is cut: a fault at the client's boundary, the network
// between redislock and Redis.
type tcpProxy struct {
	l        net.Listener
	upstream string
	mu       sync.Mutex
	conns    []net.Conn
	cut      bool
	wg       sync.WaitGroup
	dropping atomic.Bool // close each connection at once (see newDroppingProxy)
	dropped  func()      // called for each connection closed so
}

// newProxy starts a proxy to upstream listening on addr (from
// redistest.FreeAddr or DeadAddr, so that no server of the harness takes
// the port). The test's end cuts it.
func newProxy(t testing.TB, addr, upstream string) *tcpProxy {
	t.Helper()
	return startProxy(t, addr, upstream, nil)
}

// newDroppingProxy is newProxy with a proxy that closes every connection
// it accepts at once, calling dropped for each, until Forward: a server
// that comes up on an address where nothing answered, without the port
// ever being free for another socket to take.
func newDroppingProxy(t testing.TB, addr, upstream string, dropped func()) *tcpProxy {
	t.Helper()
	return startProxy(t, addr, upstream, dropped)
}

func startProxy(t testing.TB, addr, upstream string, dropped func()) *tcpProxy {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	p := &tcpProxy{l: l, upstream: upstream, dropped: dropped}
	p.dropping.Store(dropped != nil)
	p.wg.Go(p.accept)
	t.Cleanup(p.Cut)
	return p
}

// Forward makes a proxy of newDroppingProxy forward the connections it
// accepts from now on.
func (p *tcpProxy) Forward() { p.dropping.Store(false) }

// Addr returns the address the proxy listens on.
func (p *tcpProxy) Addr() string { return p.l.Addr().String() }

func (p *tcpProxy) accept() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if p.dropping.Load() {
			_ = c.Close()
			p.dropped()
			continue
		}
		u, err := net.Dial("tcp", p.upstream)
		if err != nil {
			_ = c.Close()
			continue
		}
		if !p.track(c, u) {
			return
		}
		p.wg.Go(func() { _, _ = io.Copy(u, c); _ = u.Close() })
		p.wg.Go(func() { _, _ = io.Copy(c, u); _ = c.Close() })
	}
}

// track records the two ends of a connection, or closes them if the proxy
// was cut meanwhile.
func (p *tcpProxy) track(c, u net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		_ = c.Close()
		_ = u.Close()
		return false
	}
	p.conns = append(p.conns, c, u)
	return true
}

// Cut closes the listener and every connection, and waits for the
// forwarding to stop: from then on, dials to the proxy's address are
// refused. It is idempotent.
func (p *tcpProxy) Cut() {
	p.mu.Lock()
	p.cut = true
	_ = p.l.Close()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
