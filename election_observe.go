package redislock

import (
	"context"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/election"
)

// LeaderEventKind says what changed in an election.
type LeaderEventKind int

// The kinds of [LeaderEvent].
const (
	// LeaderElected: a leader with a new term leads (or, as the first event
	// of an observer, leads already).
	LeaderElected LeaderEventKind = iota + 1
	// LeaderProclaimed: the leader of the same term proclaimed a new value.
	LeaderProclaimed
	// NoLeader: the leadership of Term ended (resigned, expired, or
	// replaced by a later term the observer reports next), or, as the
	// first event, nobody leads (Term is then the last term issued, 0 if
	// none).
	NoLeader
)

// String returns the kind's name.
func (k LeaderEventKind) String() string {
	switch k {
	case LeaderElected:
		return "elected"
	case LeaderProclaimed:
		return "proclaimed"
	case NoLeader:
		return "no leader"
	}
	return "LeaderEventKind(" + strconv.Itoa(int(k)) + ")"
}

// LeaderEvent is one change of an election, as [Election.Observe] reports it.
type LeaderEvent struct {
	Kind  LeaderEventKind
	Term  int64  // the term of the leadership the event is about
	Value string // the leader's value (empty for NoLeader)
}

// subscriber and shardedSubscriber are the parts of go-redis clients that
// Observe uses for notifications.
type subscriber interface {
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

type shardedSubscriber interface {
	SSubscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// Observe reports every change of the election on the returned channel, in
// order: first the current state (LeaderElected, or NoLeader), then each new
// leader, each value it proclaims and each end of a leadership (NoLeader),
// including the expiry of a leader that crashed. A leadership that ends
// because the next one began is reported as NoLeader for its term just
// before the LeaderElected of the next.
//
// Observe starts one goroutine, which owns a notification connection (a
// pub/sub subscription of the Redis client; sharded, in the election's hash
// slot, on a Redis Cluster) and ends when ctx ends: it then closes the
// channel. It does not block on the reader beyond ctx: an event waits until
// it is received or ctx ends. Changes made by the election's scripts
// (Campaign, Proclaim, Resign) reach observers at once; the expiry of a
// crashed leader, which Redis does not notify, is read at the moment the
// leader's key expires. A notification that is lost (a dropped
// connection, a failover) is made good by a re-read within one second:
// every observer reads the election at least once a second, and at once
// after its subscription is made again. What began and ended entirely
// within such a gap (a whole term, or an intermediate value) is not
// reported; the events still come in order, and the last one reported is
// the current state.
//
// A client that has no Subscribe method (a [RedisClient] that only runs
// scripts) is read once a second, without notifications. On a Redis
// Cluster, notifications are sharded only between clients that [New] knows
// as *redis.ClusterClient: a campaigner whose cluster client is wrapped
// publishes with PUBLISH, which sharded observers do not hear; they see its
// changes by their re-reads. Redis errors are
// retried every 100 ms until ctx ends. With bad input (see [Client.Election])
// or a nil ctx, the channel is closed at once.
func (e *Election) Observe(ctx context.Context) <-chan LeaderEvent {
	ch := make(chan LeaderEvent)
	if e.check(ctx) != nil {
		close(ch)
		return ch
	}
	go e.observe(ctx, ch)
	return ch
}

func (e *Election) observe(ctx context.Context, ch chan<- LeaderEvent) {
	defer close(ch)
	var ps *redis.PubSub
	if s, ok := e.client.client.(shardedSubscriber); ok && e.sharded {
		ps = s.SSubscribe(ctx, e.channel)
	} else if s, ok := e.client.client.(subscriber); ok && !e.sharded {
		ps = s.Subscribe(ctx, e.channel)
	}
	election.Watch(ctx, ps, e.read, func(events []election.Event) bool {
		for _, x := range events {
			ev := LeaderEvent{Kind: NoLeader, Term: x.Term, Value: x.Value}
			switch x.Change {
			case election.Elected:
				ev.Kind = LeaderElected
			case election.Proclaimed:
				ev.Kind = LeaderProclaimed
			}
			select {
			case ch <- ev:
			case <-ctx.Done():
				return false
			}
		}
		return true
	})
}
