package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/retry"
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

// NoRetry returns a strategy that never retries: a held lock gives
// [ErrNotObtained] after one attempt. It is the default.
func NoRetry() RetryStrategy { return retry.None() }

// LinearBackoff returns a strategy that always waits backoff between
// attempts, until the context's deadline (or, without one, the TTL) ends the
// wait. A backoff of zero or less means no retry.
func LinearBackoff(backoff time.Duration) RetryStrategy { return retry.Linear(backoff) }

// ExponentialBackoff returns a strategy whose n-th backoff (n = 1, 2, …) is
// 2^(n+1) milliseconds, raised to at least min and lowered to at most max;
// max zero means no upper bound. With (10ms, 300ms) the waits are 10, 10,
// 16, 32, 64, 128, 256, 300, 300, … ms. A negative max, as with
// bsm/redislock, makes every backoff that min does not raise negative:
// no retry.
func ExponentialBackoff(min, max time.Duration) RetryStrategy { return retry.Exponential(min, max) }

// LimitRetry returns a strategy that follows s for at most max retries
// (max+1 attempts in all) and then gives up. max zero or less means no retry.
// Around [WaitForRelease] the wait stays event-driven; each wake-up, or
// block that ends without one, counts an attempt.
func LimitRetry(s RetryStrategy, max int) RetryStrategy { return retry.Limit(s, max) }

// Jitter returns a strategy that follows s but spreads each backoff
// uniformly over ±fraction of it: with fraction 0.25 a backoff of 100ms
// becomes one between 75ms and 125ms. Waiters that started together then
// stop retrying in lockstep. fraction is clamped to [0, 1]; a backoff of zero
// or less (give up) is passed on as it is, and a positive one never becomes
// zero. A nil s never retries.
//
// Like the other strategies of this package, the value is safe for
// concurrent use and each Obtain or Refresh call starts its own copy of s.
// The randomness comes from math/rand/v2 (not for secrets). Around
// [WaitForRelease] the wait stays event-driven, with its fallback jittered.
func Jitter(s RetryStrategy, fraction float64) RetryStrategy { return retry.Jitter(s, fraction) }

// FullJitter returns a strategy that follows s but waits a uniformly random
// time between zero and each of its backoffs ("full jitter"): with
// [ExponentialBackoff] the waits stay short on average while their spread
// grows with the backoff, which keeps many waiters from retrying together.
// A backoff of zero or less (give up) is passed on as it is; a positive one
// becomes one in (0, backoff]. A nil s never retries.
//
// Like the other strategies of this package, the value is safe for
// concurrent use and each call starts its own copy of s. Around
// [WaitForRelease] the wait stays event-driven, with its fallback jittered.
func FullJitter(s RetryStrategy) RetryStrategy { return retry.FullJitter(s) }

// DecorrelatedJitter returns an exponential strategy with "decorrelated
// jitter": each backoff is drawn uniformly between min and three times the
// previous one (min for the first), and capped at max (0: no cap). The
// waits grow like [ExponentialBackoff]'s on average, but each waiter's
// sequence is its own. min below one millisecond counts as one millisecond.
//
// Like the other strategies of this package, the value is safe for
// concurrent use (calling NextBackoff directly advances a shared state),
// and each Obtain or Refresh call starts its own from min.
func DecorrelatedJitter(min, max time.Duration) RetryStrategy { return retry.Decorrelated(min, max) }

// startRetry returns the per-call copy of s.
func startRetry(s RetryStrategy) RetryStrategy { return retry.Start(s) }

// planOf returns the event-driven plan of s ([WaitForRelease], alone or
// in this package's wrappers), if s has one.
func planOf(s RetryStrategy) (retry.Plan, bool) { return retry.PlanOf(s) }

// attemptFunc makes one attempt of a retried operation. It returns done when
// there is nothing more to try (err is then the result); otherwise err is
// the transient error that made it fail, or nil when the lock is held by
// another.
type attemptFunc func(ctx context.Context) (done bool, err error)

// withRetry runs attempt until it is done, the strategy gives up, or the
// context ends (see internal/retry's Loop). Without a deadline on ctx,
// waiting ends at now+ttl. It runs on the caller's goroutine and starts its
// own copy of strategy on the first retry, so a shared strategy value keeps
// no state across calls. It returns the attempt's result, or the loop's
// error as [loopErr] words it.
func withRetry(ctx context.Context, ttl time.Duration, strategy RetryStrategy, attempt attemptFunc) error {
	l := retry.Begin(ctx, ttl, strategy, script.Transient)
	defer l.Stop()
	for {
		done, err := attempt(l.Context())
		if done {
			return err
		}
		if !l.Again(err) {
			return loopErr(l.Err())
		}
	}
}

// loopErr is the error of a retry loop that ended with err:
// [ErrNotObtained] (or the last transient error) when the strategy gave
// up; when the context ended, an error that matches both ErrNotObtained
// and the context's error; any other error as it is.
func loopErr(err error) error {
	var ended *retry.EndedError
	switch {
	case errors.As(err, &ended):
		return fmt.Errorf("%w: %w", ErrNotObtained, ended.Err)
	case errors.Is(err, retry.ErrGaveUp):
		return ErrNotObtained
	}
	return err
}
