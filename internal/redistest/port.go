package redistest

import (
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
)

// maxPort is the highest port handed out, so that a Cluster bus port
// (port+10000) is still a valid port.
const maxPort = 65535 - 10000

// ports remembers every port handed out by this process, so that two servers
// never race for the same one and a cluster bus port never equals another
// server's port.
var ports struct {
	mu   sync.Mutex
	used map[int]bool
}

// freePort returns a port of 127.0.0.1 that is free now (it listens on
// 127.0.0.1:0 and closes), never 6379 and never above [maxPort]. With bus,
// port+10000 is checked free too and both are reserved. The caller must still
// handle "Address already in use" when the server binds: another process may
// take the port in between.
func freePort(bus bool) (int, error) {
	ports.mu.Lock()
	defer ports.mu.Unlock()
	if ports.used == nil {
		ports.used = make(map[int]bool)
	}
	for range 1000 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if port == 6379 || port > maxPort || ports.used[port] {
			continue
		}
		if bus {
			if ports.used[port+10000] || !portFree(port+10000) {
				continue
			}
			ports.used[port+10000] = true
		}
		ports.used[port] = true
		return port, nil
	}
	return 0, fmt.Errorf("redistest: no free port of 127.0.0.1 at or below %d after 1000 tries", maxPort)
}

// portFree reports whether port of 127.0.0.1 can be listened on now.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// DeadAddr returns an address of 127.0.0.1 where nothing listens: dialing it
// is refused at once. The port was free when DeadAddr picked it and the
// harness never hands it to a server, but another process of the machine
// could still take it, so use it for what a refused dial shows, not to
// prove that nothing was ever sent. It fails the test if no port is free.
func DeadAddr(t testing.TB) string {
	t.Helper()
	return FreeAddr(t)
}

// FreeAddr returns an address of 127.0.0.1 whose port was free when it was
// picked and that the harness never hands to a server of this process: for
// a listener of the test's own (a proxy, a fake server). A listener on
// 127.0.0.1:0 instead could take a port that the harness has just handed
// to a server that has not bound it yet, and answer in its place; one that
// closes and listens again on its port could lose it to a server started
// in between. Another process could still take it: the caller handles a
// failed listen. It fails the test if no port is free.
func FreeAddr(t testing.TB) string {
	t.Helper()
	port, err := freePort(false)
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

// ServeTCP listens on a free port of 127.0.0.1 and returns its address;
// each connection it accepts is passed to handle, one at a time, on the
// listener's goroutine (handle must not block for long). It stands in for
// what is not a Redis server: one that hangs ([SilentAddr]), or that
// answers something else. Cleanup closes the listener, waits for its
// goroutine and closes every accepted connection. It fails the test if it
// cannot listen.
func ServeTCP(t testing.TB, handle func(c net.Conn)) string {
	t.Helper()
	var l net.Listener
	var err error
	for range 10 { // a port another process took meanwhile: another
		if l, err = net.Listen("tcp", FreeAddr(t)); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn // touched by the goroutine until done is closed
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			handle(c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close() // a second Close of a connection handle closed is harmless
		}
	})
	return l.Addr().String()
}

// SilentAddr returns an address of 127.0.0.1 that accepts connections and
// never answers, like a server that hangs: a dial succeeds, every command
// waits for its timeout. See [ServeTCP].
func SilentAddr(t testing.TB) string {
	t.Helper()
	return ServeTCP(t, func(net.Conn) {})
}
