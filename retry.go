package redislock

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redislock/redislock/internal/script"
)

// RetryStrategy tells [Client.Obtain] and [Lock.Refresh] how long to wait
// before the next attempt. NextBackoff returns the wait; zero or less means
// "give up now".
//
// The strategies of this package are values that are safe for concurrent
// use, and every Obtain or Refresh call runs its own copy from the start, so
// one [Options] value can be shared by many calls without sharing a retry
// budget. Calling NextBackoff directly on them advances a shared counter
// (atomically), which is how they count outside a call.
//
// A strategy written by the caller (any type with NextBackoff) works too: it
// is used as it is, so if it keeps state, that state is the caller's to reset.
// Such a strategy polls, even when it wraps [WaitForRelease]: only this
// package's wrappers ([LimitRetry], [Jitter], [FullJitter]) keep its
// event-driven waiting.
type RetryStrategy interface {
	NextBackoff() time.Duration
}

// restarter is implemented by the strategies of this package: restart returns
// the same strategy in its initial state, for one call's exclusive use.
type restarter interface {
	restart() RetryStrategy
}

// startRetry returns the per-call copy of s.
func startRetry(s RetryStrategy) RetryStrategy {
	if r, ok := s.(restarter); ok {
		return r.restart()
	}
	return s
}

// NoRetry returns a strategy that never retries: a held lock gives
// [ErrNotObtained] after one attempt. It is the default.
func NoRetry() RetryStrategy { return noRetry{} }

type noRetry struct{}

func (noRetry) NextBackoff() time.Duration { return 0 }

// LinearBackoff returns a strategy that always waits backoff between
// attempts, until the context's deadline (or, without one, the TTL) ends the
// wait. A backoff of zero or less means no retry.
func LinearBackoff(backoff time.Duration) RetryStrategy { return linearBackoff(backoff) }

type linearBackoff time.Duration

func (r linearBackoff) NextBackoff() time.Duration { return time.Duration(r) }

// ExponentialBackoff returns a strategy whose n-th backoff (n = 1, 2, …) is
// 2^(n+1) milliseconds, raised to at least min and lowered to at most max;
// max zero means no upper bound. With (10ms, 300ms) the waits are 10, 10,
// 16, 32, 64, 128, 256, 300, 300, … ms. A negative max, as with
// bsm/redislock, makes every backoff that min does not raise negative:
// no retry.
func ExponentialBackoff(min, max time.Duration) RetryStrategy {
	return &exponentialBackoff{min: min, max: max}
}

type exponentialBackoff struct {
	min, max time.Duration
	n        atomic.Int64
}

func (r *exponentialBackoff) NextBackoff() time.Duration {
	n := r.n.Add(1)
	// 2^(n+1) ms; past 2^40 ms (35 years) the value is no longer useful and
	// a larger shift would overflow time.Duration.
	d := time.Duration(1<<41) * time.Millisecond
	if n < 40 {
		d = time.Duration(int64(1)<<(n+1)) * time.Millisecond
	}
	if d < r.min {
		return r.min
	}
	if r.max != 0 && d > r.max {
		return r.max
	}
	return d
}

func (r *exponentialBackoff) restart() RetryStrategy {
	return &exponentialBackoff{min: r.min, max: r.max}
}

// LimitRetry returns a strategy that follows s for at most max retries
// (max+1 attempts in all) and then gives up. max zero or less means no retry.
// Around [WaitForRelease] the wait stays event-driven; each wake-up, or
// block that ends without one, counts an attempt.
func LimitRetry(s RetryStrategy, max int) RetryStrategy {
	return &limitedRetry{s: s, max: int64(max)}
}

type limitedRetry struct {
	s   RetryStrategy
	max int64
	n   atomic.Int64
}

func (r *limitedRetry) NextBackoff() time.Duration {
	if r.n.Add(1) > r.max || r.s == nil {
		return 0
	}
	return r.s.NextBackoff()
}

func (r *limitedRetry) restart() RetryStrategy {
	return &limitedRetry{s: startRetry(r.s), max: r.max}
}

// waitPlan keeps s's event-driven waiting, for at most max+1 attempts.
func (r *limitedRetry) waitPlan() (waitPlan, bool) {
	p, ok := planOf(r.s)
	if !ok {
		return waitPlan{}, false
	}
	limit := int(max(r.max, 0)) + 1
	if p.attempts == 0 || limit < p.attempts {
		p.attempts = limit
	}
	return p, true
}

// attemptFunc makes one attempt of a retried operation. It returns done when
// there is nothing more to try (err is then the result); otherwise err is
// the transient error that made it fail, or nil when the lock is held by
// another.
type attemptFunc func(ctx context.Context) (done bool, err error)

// retry runs attempt until it is done, the strategy gives up, or the context
// ends. Without a deadline on ctx, waiting ends at now+ttl. It runs on the
// caller's goroutine and starts its own copy of strategy on the first retry,
// so a shared strategy value keeps no state across calls.
//
// It returns the attempt's result; [ErrNotObtained] (or the last transient
// error) when the strategy gives up; and, when the context ends, an error
// that matches both [ErrNotObtained] and the context's error.
func retry(ctx context.Context, ttl time.Duration, strategy RetryStrategy, attempt attemptFunc) error {
	var (
		start  = time.Now()
		timer  *time.Timer
		cancel context.CancelFunc
	)
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		if cancel != nil {
			cancel()
		}
	}()
	for started := false; ; {
		done, err := attempt(ctx)
		if done {
			return err
		}
		// Checked before the error itself: a wait cut short by the context
		// must always say both things, whatever the attempt saw.
		if ctx.Err() != nil {
			return notObtained(ctx)
		}
		if err != nil && !script.Transient(err) {
			return err
		}
		if !started {
			strategy, started = startRetry(strategy), true
		}
		backoff := strategy.NextBackoff()
		if backoff <= 0 {
			if err != nil {
				return err
			}
			return ErrNotObtained
		}
		if cancel == nil {
			ctx, cancel = boundWait(ctx, start.Add(ttl))
		}
		if timer == nil {
			timer = time.NewTimer(backoff)
		} else {
			timer.Reset(backoff)
		}
		select {
		case <-ctx.Done():
			return notObtained(ctx)
		case <-timer.C:
		}
	}
}

// notObtained is the error for a wait that the context ended: it matches
// [ErrNotObtained] and the context's error.
func notObtained(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrNotObtained, ctx.Err())
}

// boundWait returns ctx limited to deadline when ctx has no deadline of its
// own: a caller's deadline wins, which is how to wait longer than the TTL.
func boundWait(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, deadline)
}
