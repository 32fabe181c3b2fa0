package redistest

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Freeze stops the server's process with SIGSTOP: it keeps its connections
// open and answers nothing, as a server that hangs, until thawed. It
// returns the function that thaws it (SIGCONT), which Cleanup also calls,
// so that no test leaves a server stopped; thawing twice does nothing.
// Never freeze a shared server.
func (s *Server) Freeze(t testing.TB) (thaw func()) {
	t.Helper()
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p == nil || p.exited() {
		t.Fatalf("redistest: freeze %s: not running", s)
	}
	pid := p.cmd.Process.Pid
	var once sync.Once
	thaw = func() { once.Do(func() { _ = syscall.Kill(pid, syscall.SIGCONT) }) }
	t.Cleanup(thaw)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("redistest: SIGSTOP %s: %v", s, err)
	}
	return thaw
}

// MoveSlot moves slot, with its keys, from the master that serves it to
// the master to, as redis-cli --cluster reshard does: to imports it, the
// source migrates it, its keys go over with MIGRATE, then every master is
// told that to serves it. Clients that still send to the source get MOVED
// (ASK while it moves). It fails the test on any error.
func (c *Cluster) MoveSlot(t testing.TB, slot int, to *Server) {
	t.Helper()
	from := c.MasterForSlot(t, slot)
	if from == to {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	src := from.adminClient()
	id := func(s *Server) string {
		v, err := s.adminClient().Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			t.Fatalf("redistest: CLUSTER MYID on %s: %v", s, err)
		}
		return v
	}
	fromID, toID := id(from), id(to)
	do := func(s *Server, args ...any) {
		if err := s.adminClient().Do(ctx, args...).Err(); err != nil {
			t.Fatalf("redistest: %v on %s: %v", args, s, err)
		}
	}
	do(to, "CLUSTER", "SETSLOT", slot, "IMPORTING", fromID)
	do(from, "CLUSTER", "SETSLOT", slot, "MIGRATING", toID)
	host, port, _ := strings.Cut(to.Addr(), ":")
	for {
		keys, err := src.ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			t.Fatalf("redistest: CLUSTER GETKEYSINSLOT %d on %s: %v", slot, from, err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", host, port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		do(from, args...)
	}
	for _, n := range c.nodes {
		if n.running() {
			// A replica answers too: it learns the slot's owner from its
			// master either way.
			_ = n.adminClient().Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", toID).Err()
		}
	}
	// The cluster's view shows the new owner before the test goes on.
	err := waitFor("slot "+strconv.Itoa(slot)+" served by "+to.String(), failoverTimeout, pollInterval, func(ctx context.Context) error {
		view, err := c.view(ctx)
		if err != nil {
			return err
		}
		for _, e := range view {
			if e.addr == to.Addr() && e.serves(slot) {
				return nil
			}
		}
		return errNotYet
	})
	if err != nil {
		t.Fatal(err)
	}
}
