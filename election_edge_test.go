package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// Issue 32, item 4: after the term counter is lost (here an admin deletes
// it with the election key, as a restart without persistence loses both),
// Observe reports that the leadership ended, although its read of the
// empty election carries term 0, and then the next leader.
func TestElectionObserveCounterLost(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := electionName(t)
		e := redislock.New(rdb).Election(name)
		octx, stop := context.WithCancel(ctx)
		defer stop()
		events := e.Observe(octx)
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.NoLeader})
		a, err := e.Campaign(ctx, "a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.LeaderElected, Term: a.Term(), Value: "a"})
		if err := rdb.Del(ctx, name, "{"+name+"}:redislock:term:untagged").Err(); err != nil {
			t.Fatal(err)
		}
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.NoLeader, Term: a.Term()})
		_ = a.Resign(ctx) // ErrLockNotHeld: the key is gone
		b, err := e.Campaign(ctx, "b", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = b.Resign(ctx) }()
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.LeaderElected, Term: b.Term(), Value: "b"})
	})
}

// Issue 32, item 6: a TTL too short for the leadership's keep-alive (1 to
// 3 ms) is refused before anything is sent, with ErrInvalidTTL: no key,
// no hook event.
func TestElectionCampaignTTLTooShort(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	rec := newRecorder()
	c := redislock.New(rdb)
	c.AddHook(rec)
	name := electionName(t)
	for _, ttl := range []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond} {
		if _, err := c.Election(name).Campaign(ctx, "v", ttl); !errors.Is(err, redislock.ErrInvalidTTL) {
			t.Errorf("Campaign with ttl %v: %v, want ErrInvalidTTL", ttl, err)
		}
	}
	if n := rdb.Exists(ctx, name, "{"+name+"}:redislock:term:untagged").Val(); n != 0 {
		t.Errorf("%d keys written", n)
	}
	checkLines(t, "?", rec.of("?"), nil)
	lead, err := c.Election(name).Campaign(ctx, "v", 4*time.Millisecond)
	if err != nil {
		t.Fatalf("Campaign with ttl 4ms: %v", err)
	}
	_ = lead.Resign(ctx)
}
