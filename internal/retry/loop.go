package retry

import (
	"context"
	"errors"
	"time"
)

// ErrGaveUp is the error of a [Loop] whose strategy gave up after an
// attempt that found the keys held.
var ErrGaveUp = errors.New("retry: gave up")

// EndedError is the error of a [Loop] whose context ended (or whose
// TTL-long wait ran out) first. Err is the context's error.
type EndedError struct{ Err error }

func (e *EndedError) Error() string { return "retry: wait ended: " + e.Err.Error() }

// Unwrap returns the context's error.
func (e *EndedError) Unwrap() error { return e.Err }

// Loop is the retries of one call, driven by the caller's own loop:
//
//	l := retry.Begin(ctx, time.Now(), ttl, strategy, transient)
//	defer l.Stop()
//	for {
//		done, err := attempt(l.Context())
//		if done {
//			return err
//		}
//		if !l.Again(err) {
//			return l.Err()
//		}
//	}
//
// It runs on the caller's goroutine. Without a deadline on ctx, waiting
// ends at now+ttl: a caller's deadline wins. Its zero value is not usable.
type Loop struct {
	ctx       context.Context
	cancel    context.CancelFunc
	start     time.Time
	ttl       time.Duration
	strategy  Strategy
	started   bool
	transient func(error) bool
	timer     *time.Timer
	err       error
}

// Begin returns the loop of one call that began at start and retries as
// strategy says (its own copy of it, made on the first retry); transient
// says which errors are worth another attempt.
func Begin(ctx context.Context, start time.Time, ttl time.Duration, strategy Strategy, transient func(error) bool) Loop {
	return Loop{ctx: ctx, start: start, ttl: ttl, strategy: strategy, transient: transient}
}

// Context returns the context the next attempt runs under: the call's,
// bounded by now+ttl from the first retry on when it has no deadline.
func (l *Loop) Context() context.Context { return l.ctx }

// Again is called after an attempt that was not done, with its transient
// error, or nil when the keys were held. It waits the strategy's next
// backoff and reports true, or reports false, with the call's error in
// Err: the error itself when it is not transient; ErrGaveUp, or the last
// transient error, when the strategy gave up; an [*EndedError] when the
// context ended (also when the attempt saw something else).
func (l *Loop) Again(err error) bool {
	// Checked before the error itself: a wait cut short by the context
	// must always say so, whatever the attempt saw.
	if l.ctx.Err() != nil {
		l.err = &EndedError{l.ctx.Err()}
		return false
	}
	if err != nil && !l.transient(err) {
		l.err = err
		return false
	}
	if !l.started {
		l.strategy, l.started = Start(l.strategy), true
	}
	backoff := l.strategy.NextBackoff()
	if backoff <= 0 {
		l.err = err
		if err == nil {
			l.err = ErrGaveUp
		}
		return false
	}
	if l.cancel == nil {
		l.ctx, l.cancel = Bound(l.ctx, l.start.Add(l.ttl))
	}
	if l.timer == nil {
		l.timer = time.NewTimer(backoff)
	} else {
		l.timer.Reset(backoff)
	}
	select {
	case <-l.ctx.Done():
		l.err = &EndedError{l.ctx.Err()}
		return false
	case <-l.timer.C:
		return true
	}
}

// Err returns why Again returned false.
func (l *Loop) Err() error { return l.err }

// Stop releases the loop's timer and context.
func (l *Loop) Stop() {
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.cancel != nil {
		l.cancel()
	}
}

// Bound returns ctx limited to deadline when ctx has no deadline of its
// own: a caller's deadline wins, which is how to wait longer than the TTL.
func Bound(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, deadline)
}
