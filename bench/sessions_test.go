package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redislock/redislock/internal/redistest"
)

// TestSessionRows runs workload 10 briefly, on 200 locks: every mode holds
// them all for the window, the session from two goroutines, and the table
// renders with its ratios.
func TestSessionRows(t *testing.T) {
	server := redistest.NewServer(t, redistest.Redis)
	s := &sessSuite{addr: server.Addr(), counts: []int{200}, window: 1200 * time.Millisecond, keepAlive: 200, unmerged: 200, log: t.Logf}
	rows, err := s.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 {
		t.Fatalf("%d rows, want KeepAlive, Session and the ablation", len(rows))
	}
	for _, r := range rows {
		if r.Lost != 0 || r.Refreshes == 0 {
			t.Errorf("%s: %d lost, %.0f refreshes/s; want none lost, some refreshed", r.Mode, r.Lost, r.Refreshes)
		}
		if r.Mode != sessKeepAlive && r.Goroutines > 2 {
			t.Errorf("%s: %d goroutines, want the loop and one sender", r.Mode, r.Goroutines)
		}
	}
	var md strings.Builder
	writeSessions(&md, rows, s.window)
	for _, want := range []string{"session ÷ KeepAlive", "refresh_many.lua ÷"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("table without %q:\n%s", want, md.String())
		}
	}
	t.Logf("\n%s", md.String())
}
