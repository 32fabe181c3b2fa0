package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redislock/redislock/internal/redistest"
)

// TestSemaphoreRows runs the semaphore rows briefly (REDISLOCK_SEM_BENCH=1
// for the full durations) and logs the table. It asserts what must hold
// whatever the machine's load: the limit is respected, each run acquires,
// and no worker of WaitForRelease is starved.
func TestSemaphoreRows(t *testing.T) {
	server := redistest.NewServer(t, redistest.Redis)
	stats := server.Client(t)
	ctx := context.Background()
	costFor, hotFor, warm := 300*time.Millisecond, time.Second, 200*time.Millisecond
	if os.Getenv("REDISLOCK_SEM_BENCH") == "1" {
		costFor, hotFor, warm = 6*time.Second, 3*time.Second, 500*time.Millisecond
	}
	cost, err := semCost(ctx, server.Addr(), costFor, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	const limit, workers, hold = 4, 64, time.Millisecond
	var hot []semHotRun
	for _, s := range semStrategies() {
		r, err := semHot(ctx, server.Addr(), stats, s.name, s.s, s.clients, limit, workers, hold, warm, hotFor)
		if err != nil {
			t.Fatal(err)
		}
		if r.mostHeld > limit {
			t.Errorf("%s: %d holders at once, limit %d", s.name, r.mostHeld, limit)
		}
		switch {
		case r.minW == 0 && strings.HasPrefix(s.name, "WaitForRelease"):
			// Served in turn: every worker is served many times a second.
			t.Errorf("%s: a worker was starved (0 acquisitions in %v)", s.name, hotFor)
		case r.minW == 0:
			t.Logf("%s: a worker was starved (0 acquisitions in %v)", s.name, hotFor)
		}
		hot = append(hot, r)
	}
	t.Logf("\n%s", semTable(cost, hot, limit, workers, hold))
}
