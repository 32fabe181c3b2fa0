// Package leaktest finds goroutines that a test left running: take a
// [Snapshot] before the code under test runs, and [Check] after it.
package leaktest

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// Snapshot is the set of goroutines running at one moment, by id (Go never
// reuses a goroutine's id).
type Snapshot map[uint64]bool

// Now returns the goroutines running now.
func Now() Snapshot {
	s := Snapshot{}
	for id := range stacks() {
		s[id] = true
	}
	return s
}

// Leaked returns the stacks of the goroutines that run now and did not in
// s, once they have had until wait to exit (nil when none is left).
func (s Snapshot) Leaked(wait time.Duration) []string {
	deadline := time.Now().Add(wait)
	for {
		var left []string
		for id, stack := range stacks() {
			if !s[id] {
				left = append(left, stack)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Check fails t when goroutines started since s are still running 5
// seconds later.
func Check(t testing.TB, s Snapshot) {
	t.Helper()
	if left := s.Leaked(5 * time.Second); left != nil {
		t.Errorf("%d goroutines left running:\n%s", len(left), bytes.Join(toBytes(left), []byte("\n\n")))
	}
}

// stacks returns every goroutine's stack, by id, but the caller's.
func stacks() map[uint64]string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[uint64]string{}
	for i, g := range bytes.Split(buf, []byte("\n\n")) {
		if i == 0 {
			continue // the caller's own
		}
		header, _, _ := bytes.Cut(g, []byte(" "))
		rest := g[len(header)+1:]
		idText, _, _ := bytes.Cut(rest, []byte(" "))
		if id, err := strconv.ParseUint(string(idText), 10, 64); err == nil && string(header) == "goroutine" {
			out[id] = string(g)
		}
	}
	return out
}

func toBytes(ss []string) [][]byte {
	out := make([][]byte, len(ss))
	for i, s := range ss {
		out[i] = []byte(s)
	}
	return out
}
