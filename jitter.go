package redislock

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

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
func Jitter(s RetryStrategy, fraction float64) RetryStrategy {
	return &jitter{s: s, fraction: min(max(fraction, 0), 1)}
}

type jitter struct {
	s        RetryStrategy
	fraction float64
}

func (j *jitter) NextBackoff() time.Duration {
	if j.s == nil {
		return 0
	}
	d := j.s.NextBackoff()
	if d <= 0 || j.fraction == 0 {
		return d
	}
	f := 1 + j.fraction*(2*rand.Float64()-1) // in [1-fraction, 1+fraction)
	return max(time.Duration(float64(d)*f), 1)
}

func (j *jitter) restart() RetryStrategy {
	return &jitter{s: startRetry(j.s), fraction: j.fraction}
}

// waitPlan keeps s's event-driven waiting; its fallback is jittered.
func (j *jitter) waitPlan() (waitPlan, bool) {
	p, ok := planOf(j.s)
	if ok {
		p.fallback = &jitter{s: p.fallback, fraction: j.fraction}
	}
	return p, ok
}

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
func FullJitter(s RetryStrategy) RetryStrategy {
	return &fullJitter{s: s}
}

type fullJitter struct{ s RetryStrategy }

func (j *fullJitter) NextBackoff() time.Duration {
	if j.s == nil {
		return 0
	}
	d := j.s.NextBackoff()
	if d <= 0 {
		return d
	}
	return 1 + rand.N(d)
}

func (j *fullJitter) restart() RetryStrategy {
	return &fullJitter{s: startRetry(j.s)}
}

// waitPlan keeps s's event-driven waiting; its fallback is jittered.
func (j *fullJitter) waitPlan() (waitPlan, bool) {
	p, ok := planOf(j.s)
	if ok {
		p.fallback = &fullJitter{s: p.fallback}
	}
	return p, ok
}

// DecorrelatedJitter returns an exponential strategy with "decorrelated
// jitter": each backoff is drawn uniformly between min and three times the
// previous one (min for the first), and capped at max (0: no cap). The
// waits grow like [ExponentialBackoff]'s on average, but each waiter's
// sequence is its own. min below one millisecond counts as one millisecond.
//
// Like the other strategies of this package, the value is safe for
// concurrent use (calling NextBackoff directly advances a shared state),
// and each Obtain or Refresh call starts its own from min.
func DecorrelatedJitter(min, max time.Duration) RetryStrategy {
	if min < time.Millisecond {
		min = time.Millisecond
	}
	return &decorrelatedJitter{min: min, max: max}
}

type decorrelatedJitter struct {
	min, max time.Duration
	prev     atomic.Int64 // the previous backoff, 0 before the first
}

func (j *decorrelatedJitter) NextBackoff() time.Duration {
	prev := time.Duration(j.prev.Load())
	d := j.min
	if prev > 0 {
		// Uniform in [min, 3*prev], without overflow for huge backoffs.
		hi := prev
		if hi < (1<<62)/3 {
			hi = 3 * prev
		}
		if hi > j.min {
			d = j.min + rand.N(hi-j.min+1)
		}
	}
	if j.max > 0 && d > j.max {
		d = j.max
	}
	j.prev.Store(int64(d))
	return d
}

func (j *decorrelatedJitter) restart() RetryStrategy {
	return &decorrelatedJitter{min: j.min, max: j.max}
}
