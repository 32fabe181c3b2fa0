package redislock

import (
	"context"
	"strconv"

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
	if k >= LeaderElected && k <= NoLeader {
		return [...]string{"elected", "proclaimed", "no leader"}[k-LeaderElected]
	}
	return "LeaderEventKind(" + strconv.Itoa(int(k)) + ")"
}

// LeaderEvent is one change of an election, as [Election.Observe] reports it.
type LeaderEvent struct {
	Kind  LeaderEventKind
	Term  int64  // the term of the leadership the event is about
	Value string // the leader's value (empty for NoLeader)
}

// Observe reports every change of the election on the returned channel, in
// order: first the current state (LeaderElected, or NoLeader), then each new
// leader, each value it proclaims and each end of a leadership (NoLeader),
// including the expiry of a leader that crashed. A leadership that ends
// because the next one began is reported as NoLeader for its term just
// before the LeaderElected of the next.
//
// Observe starts one goroutine, which owns a notification connection (a
// pub/sub subscription of the Redis client) and ends when ctx ends: it then
// closes the channel. It does not block on the reader beyond ctx: an event
// waits until it is received or ctx ends. Changes made by the election's
// scripts (Campaign, Proclaim, Resign) reach observers at once, the expiry
// of a crashed leader at the moment its key expires. A lost notification
// (a dropped connection, a failover) is made good by a re-read within one
// second; what began and ended entirely within such a gap (a whole term,
// or an intermediate value) is not reported, but the events still come in
// order, and the last one reported is the current state. A client without
// Subscribe, and on a Redis Cluster a campaigner's wrapped cluster client,
// are seen by these re-reads only (see docs/election.md). Redis errors are
// retried every 100 ms until ctx ends. With bad input (see
// [Client.Election]) or a nil ctx, the channel is closed at once.
func (e *Election) Observe(ctx context.Context) <-chan LeaderEvent {
	ch := make(chan LeaderEvent)
	if e.check(ctx) != nil {
		close(ch)
		return ch
	}
	go election.Observe(ctx, e.client.client, e.channel, e.sharded, e.read, ch, func(x election.Event) LeaderEvent {
		// election.Change has the values of LeaderEventKind.
		return LeaderEvent{Kind: LeaderEventKind(x.Change), Term: x.Term, Value: x.Value}
	})
	return ch
}
