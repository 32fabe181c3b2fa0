package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// BenchmarkElectionHandover measures how soon a campaigner that waits in
// line is elected after the leader resigns: from the start of Resign to the
// return of the waiting Campaign (ns/handover), on the shared redis-server,
// with the two campaigners on two clients. Each iteration the new leader
// resigns in turn to a fresh campaigner. The wait queue is polled only to
// know that the next campaigner waits before the clock starts.
func BenchmarkElectionHandover(b *testing.B) {
	ctx := context.Background()
	rdbA, rdbB := redistest.Standalone(b), redistest.Standalone(b)
	name := redistest.Key(b, "election")
	clients := []*redislock.Client{redislock.New(rdbA), redislock.New(rdbB)}
	lead, err := clients[0].Election(name).Campaign(ctx, "0", 10*time.Second)
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	n := 0
	for b.Loop() {
		next := make(chan *redislock.Leadership, 1)
		go func() {
			l, err := clients[(n+1)%2].Election(name).Campaign(ctx, "next", 10*time.Second)
			if err != nil {
				b.Error(err)
			}
			next <- l
		}()
		redistest.WaitFor(b, "a campaigner in line", 10*time.Second, func() bool {
			c, err := rdbA.ZCard(ctx, name+":redislock:waiters").Result()
			return err == nil && c > 0
		})
		start := time.Now()
		if err := lead.Resign(ctx); err != nil {
			b.Fatal(err)
		}
		lead = <-next
		total += time.Since(start)
		n++
		if lead == nil {
			b.FailNow()
		}
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(n), "ns/handover")
	_ = lead.Resign(ctx)
}
