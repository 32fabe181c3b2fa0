package redistest

import (
	"net"
	"strconv"
	"testing"
)

func TestFreePort(t *testing.T) {
	t.Parallel()
	seen := make(map[int]bool)
	for range 50 {
		p, err := freePort(true)
		if err != nil {
			t.Fatal(err)
		}
		if p == 6379 || p > maxPort || seen[p] || seen[p+10000] {
			t.Fatalf("freePort = %d (seen before: %v)", p, seen[p])
		}
		seen[p], seen[p+10000] = true, true
	}
}

// A port that FreeAddr gave a listener of the test's own is never handed
// to a server, even while that listener is closed (a proxy between a
// disconnect and its reconnect).
func TestFreeAddrKeptFromServers(t *testing.T) {
	t.Parallel()
	addr := FreeAddr(t)
	_, portText, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	// freePort skips every port it has handed out, FreeAddr's among them.
	ports.mu.Lock()
	reserved := ports.used[port]
	ports.mu.Unlock()
	if !reserved {
		t.Errorf("the port of FreeAddr %s is not kept from the servers", addr)
	}
}
