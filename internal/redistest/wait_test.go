package redistest

import (
	"net"
	"strings"
	"testing"
	"time"
)

func TestWaitFor(t *testing.T) {
	t.Parallel()
	calls := 0
	WaitFor(t, "three calls", time.Minute, func() bool { calls++; return calls == 3 })
	if calls != 3 {
		t.Errorf("cond called %d times, want 3", calls)
	}

	ft := &fakeTB{TB: t}
	start := time.Now()
	ft.run(func() { WaitFor(ft, "the impossible", 50*time.Millisecond, func() bool { return false }) })
	if !ft.failed || !strings.Contains(ft.fatal, "waiting for the impossible") {
		t.Errorf("WaitFor that never holds: failed=%v, Fatal(%q); want a failure naming what it waited for", ft.failed, ft.fatal)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("WaitFor gave up after %v, before its timeout", d)
	}
}

func TestDeadAddr(t *testing.T) {
	t.Parallel()
	addr := DeadAddr(t)
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("DeadAddr() = %q, want 127.0.0.1:PORT", addr)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		_ = c.Close()
		t.Errorf("dial %s succeeded, want refused", addr)
	}
	if again := DeadAddr(t); again == addr {
		t.Errorf("DeadAddr returned %s twice", addr)
	}
}
