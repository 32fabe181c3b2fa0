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
// order (see [LeaderEventKind]'s values): first the current state, then
// each new leader, each value it proclaims and each end of a leadership,
// including the expiry of a leader that crashed.
//
// Observe starts one goroutine, which holds a pub/sub connection of the
// Redis client and ends when ctx ends, closing the channel; an event waits
// until it is received or ctx ends. Changes reach observers at once, or
// within about one second of a lost notification (a dropped connection, a
// failover, a client without Subscribe, a campaigner's wrapped cluster
// client: docs/election.md); what began and ended entirely within such a
// gap is not reported, but the last event is the current state. Redis
// errors are retried every 100 ms. With bad input (see [Client.Election])
// or a nil ctx, the channel is closed at once.
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
