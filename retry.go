package redislock

import (
	"context"
	"time"

	"github.com/redislock/redislock/internal/retry"
	"github.com/redislock/redislock/internal/script"
)

// RetryStrategy tells [Client.Obtain] and [Lock.Refresh] how long to wait
// before the next attempt. NextBackoff returns the wait; zero or less means
// "give up now".
//
// The strategies of this package are safe for concurrent use, and every
// call runs its own copy from the start, so one [Options] value can be
// shared by many calls without sharing a retry budget (see
// docs/waiting.md). A strategy written by the caller is used as it is: its
// state is the caller's to reset, and it polls, even around
// [WaitForRelease], which only [LimitRetry], [Jitter] and [FullJitter]
// keep event-driven.
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
// max zero means no upper bound. A negative max, as with bsm/redislock,
// makes every backoff that min does not raise negative: no retry.
func ExponentialBackoff(min, max time.Duration) RetryStrategy { return retry.Exponential(min, max) }

// LimitRetry returns a strategy that follows s for at most max retries
// (max+1 attempts in all) and then gives up. max zero or less means no retry.
// Around [WaitForRelease] the wait stays event-driven; each wake-up, or
// block that ends without one, counts an attempt.
func LimitRetry(s RetryStrategy, max int) RetryStrategy { return retry.Limit(s, max) }

// Jitter returns a strategy that follows s but spreads each backoff
// uniformly over ±fraction of it: with fraction 0.25 a backoff of 100ms
// becomes one between 75ms and 125ms. fraction is clamped to [0, 1]; a
// backoff of zero or less (give up) is passed on as it is, and a positive
// one never becomes zero. A nil s never retries. Each call starts its own
// copy of s. Around [WaitForRelease] the wait stays event-driven, with its
// fallback jittered.
func Jitter(s RetryStrategy, fraction float64) RetryStrategy { return retry.Jitter(s, fraction) }

// FullJitter returns a strategy that follows s but waits a uniformly random
// time between zero and each of its backoffs ("full jitter"). A backoff of
// zero or less (give up) is passed on as it is; a positive one becomes one
// in (0, backoff]. A nil s never retries. Each call starts its own copy of
// s. Around [WaitForRelease] the wait stays event-driven, with its
// fallback jittered.
func FullJitter(s RetryStrategy) RetryStrategy { return retry.FullJitter(s) }

// DecorrelatedJitter returns an exponential strategy with "decorrelated
// jitter": each backoff is drawn uniformly between min and three times the
// previous one (min for the first), and capped at max (0: no cap). min
// below one millisecond counts as one millisecond. Each call starts its
// own from min.
func DecorrelatedJitter(min, max time.Duration) RetryStrategy { return retry.Decorrelated(min, max) }

// startRetry returns the per-call copy of s.
func startRetry(s RetryStrategy) RetryStrategy { return retry.Start(s) }

// planOf returns the event-driven plan of s ([WaitForRelease], alone or
// in this package's wrappers), if s has one.
func planOf(s RetryStrategy) (retry.Plan, bool) { return retry.PlanOf(s) }

// withRetry runs attempt until it is done, the strategy gives up, or the
// context ends (see internal/retry's Run); without a deadline on ctx,
// waiting ends at now+ttl. An attempt returns done when there is nothing
// more to try (err is then the result); otherwise err is the transient
// error that made it fail, or nil when the lock is held by another.
// withRetry returns the attempt's result, or the loop's error as [loopErr]
// words it.
func withRetry(ctx context.Context, ttl time.Duration, strategy RetryStrategy,
	attempt func(ctx context.Context) (done bool, err error)) error {
	return retry.Run(ctx, ttl, strategy, script.Transient, attempt, loopErr)
}

// loopErr is the error of a retry loop that ended with err:
// [ErrNotObtained] (or the last transient error) when the strategy gave
// up; when the context ended, an error that matches both ErrNotObtained
// and the context's error; any other error as it is.
func loopErr(err error) error { return retry.Words(err, ErrNotObtained) }
