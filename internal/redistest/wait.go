package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"
)

// Timeouts and polling intervals. They are generous so that a loaded 2-core
// machine does not make tests flaky; on an idle one everything is ready in a
// few seconds at most.
const (
	readyTimeout    = 30 * time.Second // a server answering PING; a topology ready
	failoverTimeout = 30 * time.Second // a promoted master seen by everyone
	createTimeout   = 60 * time.Second // redis-cli --cluster create
	pingInterval    = 10 * time.Millisecond
	pollInterval    = 50 * time.Millisecond
	commandTimeout  = 5 * time.Second // one admin command while polling
)

// errNotYet is wrapped by checks that found their condition not met yet.
var errNotYet = errors.New("not yet")

// waitFor calls check every interval until it returns nil, or until timeout,
// when it returns an error naming what it waited for and check's last error.
// Each call of check gets a context bounded by commandTimeout.
func waitFor(what string, timeout, interval time.Duration, check func(ctx context.Context) error) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
		err := check(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: %s: not done after %v: %w", what, timeout, err)
		}
		time.Sleep(interval)
	}
}

// waitPing blocks until the server at addr answers PING with PONG, the
// process p exits (an error wrapping errExited), or timeout passes. It speaks
// RESP over a raw connection, so nothing is logged while the server is still
// starting.
func waitPing(addr string, p *process, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		if p.exited() {
			if p.err == nil {
				return errExited
			}
			return fmt.Errorf("%w (%w)", errExited, p.err)
		}
		if last = ping(addr); last == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no PONG after %v: %w", timeout, last)
		}
		select {
		case <-p.done:
		case <-time.After(pingInterval):
		}
	}
}

// errExited means a server process exited while the harness waited for it.
var errExited = errors.New("server process exited")

func ping(addr string) error {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(time.Second))
	if _, err := conn.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return err
	}
	if line = strings.TrimSpace(line); line != "+PONG" {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}

// infoField returns the value of field in the text of an INFO or CLUSTER INFO
// reply, and whether it was there.
func infoField(info, field string) (string, bool) {
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && k == field {
			return v, true
		}
	}
	return "", false
}

// waitForInterval is the pause between two calls of WaitFor's condition.
const waitForInterval = 10 * time.Millisecond

// WaitFor calls cond until it returns true, pausing 10 ms between calls,
// and fails the test with what in the message if it has not returned true
// after timeout. It is a wait for a real server to reach a state (a
// replica in sync, a client blocked, a role changed), each call of cond
// typically one round trip; it is not for synchronising goroutines of the
// test, and no substitute for testing/synctest in timing logic. cond runs
// on the test's goroutine, so it may call t.Fatal.
func WaitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("redistest: timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(waitForInterval)
	}
}
