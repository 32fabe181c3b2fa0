package redistest

import (
	"errors"
	"io"
	"net"
	"os"
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

func TestSilentAddr(t *testing.T) {
	t.Parallel()
	c, err := net.Dial("tcp", SilentAddr(t))
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer func() { _ = c.Close() }()
	if _, err := c.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatalf("write: %v", err)
	}
	_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := c.Read(make([]byte, 1)); n != 0 || err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read = %d, %v; want a timeout (no answer)", n, err)
	}
}

func TestServeTCP(t *testing.T) {
	t.Parallel()
	addr := ServeTCP(t, func(c net.Conn) {
		_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
		_ = c.Close()
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer func() { _ = c.Close() }()
	b, err := io.ReadAll(c)
	if err != nil || !strings.HasPrefix(string(b), "HTTP/1.1 400") {
		t.Errorf("read %q, %v; want the handler's answer, then EOF", b, err)
	}
}
