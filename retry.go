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
// The strategies of this package are safe for concurrent use, and each call
// starts its own copy, so calls that share an [Options] value share no
// retry budget. A strategy written by the caller is used as it is: its
// state is the caller's to reset, and it polls, even around
// [WaitForRelease], which says how this package's wrappers compose with it.
type RetryStrategy interface {
	NextBackoff() time.Duration
}

// NoRetry returns a strategy that never retries: a held lock gives
// [ErrNotObtained] after one attempt. It is the default.
func NoRetry() RetryStrategy { return retry.None() }

// LinearBackoff returns a strategy that always waits backoff between
// attempts. A backoff of zero or less means no retry.
func LinearBackoff(backoff time.Duration) RetryStrategy { return retry.Linear(backoff) }

// ExponentialBackoff returns a strategy whose n-th backoff (n = 1, 2, …) is
// 2^(n+1) milliseconds, raised to at least min and lowered to at most max;
// max zero means no upper bound. A negative max, as with bsm/redislock,
// makes every backoff that min does not raise negative: no retry.
func ExponentialBackoff(min, max time.Duration) RetryStrategy { return retry.Exponential(min, max) }

// LimitRetry returns a strategy that follows s for at most max retries
// (max+1 attempts in all) and then gives up. max zero or less means no retry.
func LimitRetry(s RetryStrategy, max int) RetryStrategy { return retry.Limit(s, max) }

// Jitter returns a strategy that follows s but spreads each backoff
// uniformly over ±fraction of it: with fraction 0.25 a backoff of 100ms
// becomes one between 75ms and 125ms. fraction is clamped to [0, 1]; a
// backoff of zero or less (give up) is passed on as it is, and a positive
// one never becomes zero. A nil s never retries.
func Jitter(s RetryStrategy, fraction float64) RetryStrategy { return retry.Jitter(s, fraction) }

// FullJitter returns a strategy that follows s but waits a uniformly random
// time between zero and each of its backoffs ("full jitter"). A backoff of
// zero or less (give up) is passed on as it is; a positive one becomes one
// in (0, backoff]. A nil s never retries.
func FullJitter(s RetryStrategy) RetryStrategy { return retry.FullJitter(s) }

// DecorrelatedJitter returns an exponential strategy with "decorrelated
// jitter": each backoff is drawn uniformly between min and three times the
// previous one (min for the first), and capped at max (0: no cap). min
// below one millisecond counts as one millisecond.
func DecorrelatedJitter(min, max time.Duration) RetryStrategy { return retry.Decorrelated(min, max) }

// withRetry runs attempt until it is done (its err is then the result), the
// strategy gives up, or ctx ends (without a deadline, at now+ttl); a failed
// attempt's err is the transient error, or nil when another holds the lock.
func withRetry(ctx context.Context, ttl time.Duration, strategy RetryStrategy,
	attempt func(ctx context.Context) (done bool, err error)) error {
	return retry.Run(ctx, ttl, strategy, script.Transient, attempt, loopErr)
}

// loopErr is the error of a retry loop that ended with err (retry.Words).
func loopErr(err error) error { return retry.Words(err, ErrNotObtained) }
