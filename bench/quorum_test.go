package main

import (
	"context"
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/redislock/redislock/internal/redistest"
)

// TestQuorumSuite runs workload 9 briefly on five masters of its own
// (with AOF, so that they take locks at once) and checks its counts:
// every row two rounds (Obtain, then Release) to every master, the
// fenced one included once its fence counters exist, and the section
// with its targets.
func TestQuorumSuite(t *testing.T) {
	var addrs []string
	for range quorumSizes[len(quorumSizes)-1] {
		addrs = append(addrs, redistest.NewServer(t, redistest.Redis, "--appendonly", "yes").Addr())
	}
	// Allocations are counted in a short testing.Benchmark run.
	prev := flag.Lookup("test.benchtime").Value.String()
	if err := flag.Set("test.benchtime", "100x"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = flag.Set("test.benchtime", prev) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rows, err := (&quorumSuite{addrs: addrs, total: 200 * time.Millisecond, log: t.Logf}).run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := len(quorumSizes) * len(quorumLibs()); len(rows) != want {
		t.Fatalf("%d rows, want %d", len(rows), want)
	}
	for _, r := range rows {
		if r.Rounds != 2 || r.Commands != float64(2*r.N) || r.NsPerOp <= 0 || r.AllocsPerOp <= 0 {
			t.Errorf("%s on %d masters: %.2f round trips, %.2f commands, %.0f ns/op, %.1f allocs/op; want 2 round trips, %d commands, a time and allocations",
				r.Name, r.N, r.Rounds, r.Commands, r.NsPerOp, r.AllocsPerOp, 2*r.N)
		}
	}
	var md strings.Builder
	writeQuorum(&md, rows, 200*time.Millisecond)
	for _, want := range []string{
		"## 9. Quorum: Obtain+Release on independent masters (issue 35)",
		"| 3 | redsync (Redlock) |", "| 5 | **redislock Quorum, FenceKey** |",
		"| 5 masters: fenced within one extra round trip of redsync's | met | 2 vs 2 round trips |",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("section lacks %q:\n%s", want, md.String())
		}
	}
}
