package redislock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// Issue 32 item 1: a waiter keeps its place in line for as long as it
// waits. W1 starts waiting before W2 (separate clients); the release comes
// only once W1's first block has ended and it blocked again, while W2 has
// been blocked on Redis longer than W1's current block: W1 is served
// first, on a lock, a permit, a write lock and a campaign, on every
// topology. Before, a handover went to the client blocked longest: W2.
func TestWaitForReleaseArrivalOrder(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		for _, kind := range []string{"lock", "permit", "write", "campaign"} {
			t.Run(kind, func(t *testing.T) {
				ctx := context.Background()
				name := redistest.Key(t, kind)
				release, err := primitiveWaiters[kind](redislock.New(env.admin), name).take(ctx)
				if err != nil {
					t.Fatalf("holder: %v", err)
				}
				var (
					mu    sync.Mutex
					order []int
					wg    sync.WaitGroup
				)
				counters := make([]*waitCounter, 2)
				for i := range 2 {
					cname := clientName(fmt.Sprintf("w%d", i+1))
					rdb := env.newClient(cname)
					counters[i] = &waitCounter{}
					rdb.AddHook(counters[i])
					w := primitiveWaiters[kind](redislock.New(rdb), name)
					wg.Go(func() {
						r, err := w.take(ctx)
						if err != nil {
							t.Errorf("W%d: %v", i+1, err)
							return
						}
						mu.Lock()
						order = append(order, i+1)
						mu.Unlock()
						if err := r(ctx); err != nil {
							t.Errorf("W%d: release: %v", i+1, err)
						}
					})
					waitUntil(t, fmt.Sprintf("W%d to block", i+1), func() bool { return blocked(t, env.admin, cname) })
				}
				// W1's first block (250 ms) ends and it blocks again: Redis
				// would now serve W2 first.
				waitUntil(t, "W1 to block a second time", func() bool { return counters[0].sent() >= 2 })
				if err := release(ctx); err != nil {
					t.Fatalf("holder's release: %v", err)
				}
				wg.Wait()
				if len(order) != 2 || order[0] != 1 {
					t.Errorf("served in the order %v, want [1 2]: W1 waited longest (W2 blocked %d times, W1 %d)", order, counters[1].sent(), counters[0].sent())
				}
			})
		}
	})
}
