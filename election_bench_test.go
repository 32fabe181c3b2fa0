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
//
// The "hand-built" sub-benchmark is the election many teams build on a
// lock: campaigners poll Obtain every 10 ms (LinearBackoff), and the
// leader's Release deletes the key; the next is elected at its next poll.
func BenchmarkElectionHandover(b *testing.B) {
	b.Run("campaign", benchCampaignHandover)
	b.Run("hand-built-poll-10ms", benchPollHandover)
}

func benchPollHandover(b *testing.B) {
	ctx := context.Background()
	rdbA, rdbB := redistest.Standalone(b), redistest.Standalone(b)
	key := redistest.Key(b, "lock")
	clients := []*redislock.Client{redislock.New(rdbA), redislock.New(rdbB)}
	opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)}
	lock, err := clients[0].Obtain(ctx, key, 10*time.Second, opt)
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	n := 0
	for b.Loop() {
		next := make(chan *redislock.Lock, 1)
		go func() {
			l, err := clients[(n+1)%2].Obtain(ctx, key, 10*time.Second, opt)
			if err != nil {
				b.Error(err)
			}
			next <- l
		}()
		// The poller's first attempt has failed by then (a wall-clock
		// window, in a benchmark only); its next poll is at a random phase.
		time.Sleep(time.Duration(12+n%10) * time.Millisecond)
		start := time.Now()
		if err := lock.Release(ctx); err != nil {
			b.Fatal(err)
		}
		lock = <-next
		total += time.Since(start)
		n++
		if lock == nil {
			b.FailNow()
		}
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(n), "ns/handover")
	_ = lock.Release(ctx)
}

func benchCampaignHandover(b *testing.B) {
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
