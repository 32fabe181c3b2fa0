package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redislock/redislock/internal/redistest"
)

// TestRWMutexWorkload runs workload 7 briefly: every run acquires, reads
// and writes both happen, with each strategy, and the table names each
// run. The figures are make bench's.
func TestRWMutexWorkload(t *testing.T) {
	server := redistest.NewServer(t, redistest.Redis)
	s := &rwSuite{addr: server.Addr(), workers: 8, reads: 0.9, hold: time.Millisecond, duration: 300 * time.Millisecond, log: t.Logf}
	res, err := s.run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2*len(rwStrategies()) || len(res.Writers) != len(rwStrategies()) {
		t.Fatalf("%d runs and %d writer runs, want 2 and 1 per strategy", len(res.Rows), len(res.Writers))
	}
	for _, row := range append(res.Rows, res.Writers...) {
		if row.Acquisitions == 0 {
			t.Errorf("%s: no acquisition", row.Name)
		}
		if len(row.WriteWaits) == 0 {
			t.Errorf("%s: no write", row.Name)
		}
	}
	if res.Rows[0].Reads == 0 || res.Rows[2].Reads == 0 || res.Writers[0].Reads == 0 {
		t.Error("no read in the RWMutex runs")
	}
	var md strings.Builder
	res.writeMarkdown(&md)
	if !strings.Contains(md.String(), "| RWMutex (RLock / Lock) | WaitForRelease |") {
		t.Errorf("table without the RWMutex row:\n%s", md.String())
	}
}
