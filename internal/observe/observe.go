// Package observe calls a list of hooks around an operation, safely, and
// keeps the bookkeeping of an obtain call's attempts that the hooks'
// events report. It knows nothing of the events themselves: the hooks are
// of any type H, and the caller builds each event.
package observe

import (
	"context"
	"sync/atomic"
	"time"
)

// Each calls f with every hook of hooks, in order. A panic in f is
// recovered and dropped, so that no hook can break an operation or leave
// a lease held that its caller never received.
func Each[H any](hooks []H, f func(H)) {
	for _, h := range hooks {
		call(h, f)
	}
}

func call[H any](h H, f func(H)) {
	defer func() { _ = recover() }()
	f(h)
}

// Starting is Each for the hooks that start an operation: f returns the
// context the operation then runs under. It returns the last context a
// hook returned (ctx itself for a hook that returned nil or panicked),
// each hook getting the one before.
func Starting[H any](ctx context.Context, hooks []H, f func(H, context.Context) context.Context) context.Context {
	Each(hooks, func(h H) {
		if next := f(h, ctx); next != nil {
			ctx = next
		}
	})
	return ctx
}

// Attempts is the bookkeeping of one obtain call's attempts. Only the
// obtain call's goroutine uses it, before the call returns.
type Attempts struct {
	n          int32 // with the flags, one word in the observation
	blocked    bool  // some attempt followed a block on Redis
	nextBlock  bool  // the next attempt follows a block
	nextGrant  bool  // that block moved a grant
	handedOver bool  // obtained with a grant
}

// An Attempt is what Attempts.Next records of one attempt.
type Attempt struct {
	N          int  // its number, from 1
	Blocked    bool // it followed a block on Redis
	HandedOver bool // it obtained with a grant
}

// Block records that the next attempt follows a block on Redis; grant:
// that block moved a grant to the caller.
func (a *Attempts) Block(grant bool) { a.nextBlock, a.nextGrant = true, grant }

// Next records an attempt, which obtained or not, and returns it.
func (a *Attempts) Next(obtained bool) Attempt {
	a.n++
	e := Attempt{N: int(a.n), Blocked: a.nextBlock}
	if obtained {
		e.HandedOver, a.handedOver = a.nextGrant, a.nextGrant
	}
	a.blocked = a.blocked || a.nextBlock
	a.nextBlock, a.nextGrant = false, false
	return e
}

// N returns the number of attempts recorded.
func (a *Attempts) N() int { return int(a.n) }

// HandedOver reports whether the call obtained with a grant.
func (a *Attempts) HandedOver() bool { return a.handedOver }

// A Wait is how an obtain call waited between its attempts.
type Wait uint8

// The ways of waiting: not at all (one attempt), by polling, or by
// blocking on Redis for events.
const (
	None Wait = iota
	Polled
	Events
)

// Wait returns how the call waited.
func (a *Attempts) Wait() Wait {
	switch {
	case a.blocked:
		return Events
	case a.n > 1:
		return Polled
	}
	return None
}

// Hold times an obtain call, then the hold it obtained: Start is the
// call's start until Begin, then the hold's. Its methods are safe for
// concurrent use with one another, except Begin, which the obtain call
// runs before it returns the handle.
type Hold struct {
	Start   time.Time
	holding atomic.Bool // begun, and not yet ended
}

// Begin records the start of the hold at now.
func (h *Hold) Begin(now time.Time) {
	h.Start = now
	h.holding.Store(true)
}

// End ends the hold at now, once: ends is true for the first End after
// Begin, which returns how long it was held.
func (h *Hold) End(now time.Time) (held time.Duration, ends bool) {
	if h.holding.CompareAndSwap(true, false) {
		return now.Sub(h.Start), true
	}
	return 0, false
}

// A Result is an attempt's outcome: obtained, not obtained (held by
// another), or failed with an error.
type Result uint8

// The results of an attempt.
const (
	Obtained Result = iota + 1
	NotObtained
	Failed
)

// ResultOf returns the Result of an attempt that obtained or not, or
// failed with err (when not nil).
func ResultOf(obtained bool, err error) Result {
	switch {
	case err != nil:
		return Failed
	case obtained:
		return Obtained
	}
	return NotObtained
}
