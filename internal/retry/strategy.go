// Package retry holds the retry strategies' state and the retry loop of
// every obtain and refresh. The root package's constructors (NoRetry,
// LinearBackoff, …) document them and return these values: a Strategy is
// the root's RetryStrategy.
//
// Every strategy here is a value safe for concurrent use; each call of the
// loop runs its own copy, from the start ([Start]), so that one value
// shared by many calls shares no budget. A strategy that waits for events
// (the root's WaitForRelease), alone or inside the wrappers of this
// package, has a [Plan] ([PlanOf]).
package retry

import (
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Strategy says how long to wait before the next attempt; zero or less
// gives up.
type Strategy interface {
	NextBackoff() time.Duration
}

// restarter is implemented by the strategies of this package: restart
// returns the same strategy in its initial state, for one call's
// exclusive use.
type restarter interface {
	restart() Strategy
}

// Start returns the per-call copy of s: s itself for a strategy that is
// not of this package (its state, if any, is its owner's).
func Start(s Strategy) Strategy {
	if r, ok := s.(restarter); ok {
		return r.restart()
	}
	return s
}

// Plan is how a call waits for events: the strategy for the waits that
// cannot use them, and a bound on the attempts (0: none).
type Plan struct {
	Fallback Strategy
	Attempts int
}

// planner is implemented by Events and by the wrappers of this package,
// which report the plan of the strategy they wrap with their own limits.
type planner interface {
	plan() (Plan, bool)
}

// PlanOf returns the event-driven plan of s, if s has one.
func PlanOf(s Strategy) (Plan, bool) {
	if p, ok := s.(planner); ok {
		return p.plan()
	}
	return Plan{}, false
}

// None never retries.
func None() Strategy { return none{} }

type none struct{}

func (none) NextBackoff() time.Duration { return 0 }

// IsNone reports whether s is None's.
func IsNone(s Strategy) bool { _, ok := s.(none); return ok }

// Linear always waits d.
func Linear(d time.Duration) Strategy { return linear(d) }

type linear time.Duration

func (r linear) NextBackoff() time.Duration { return time.Duration(r) }

// Exponential returns a strategy whose n-th backoff is 2^(n+1) ms within
// [min, max] (max 0: no upper bound).
func Exponential(min, max time.Duration) Strategy { return &exponential{min: min, max: max} }

type exponential struct {
	min, max time.Duration
	n        atomic.Int64
}

func (r *exponential) NextBackoff() time.Duration {
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

func (r *exponential) restart() Strategy { return &exponential{min: r.min, max: r.max} }

// Limit follows s for at most max retries (max+1 attempts in all).
func Limit(s Strategy, max int) Strategy { return &limited{s: s, max: int64(max)} }

type limited struct {
	s   Strategy
	max int64
	n   atomic.Int64
}

func (r *limited) NextBackoff() time.Duration {
	if r.n.Add(1) > r.max || r.s == nil {
		return 0
	}
	return r.s.NextBackoff()
}

func (r *limited) restart() Strategy { return &limited{s: Start(r.s), max: r.max} }

// plan keeps s's event-driven waiting, for at most max+1 attempts.
func (r *limited) plan() (Plan, bool) {
	p, ok := PlanOf(r.s)
	if !ok {
		return Plan{}, false
	}
	limit := int(max(r.max, 0)) + 1
	if p.Attempts == 0 || limit < p.Attempts {
		p.Attempts = limit
	}
	return p, true
}

// Jitter spreads each backoff of s over ±fraction of it (fraction in
// [0, 1]); a positive backoff never becomes zero.
func Jitter(s Strategy, fraction float64) Strategy {
	return &jitter{s: s, fraction: min(max(fraction, 0), 1)}
}

type jitter struct {
	s        Strategy
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
	f := 1 + j.fraction*(2*rand.Float64()-1) //nolint:gosec // G404: spreads retries, not a secret; in [1-fraction, 1+fraction)
	return max(time.Duration(float64(d)*f), 1)
}

func (j *jitter) restart() Strategy { return &jitter{s: Start(j.s), fraction: j.fraction} }

func (j *jitter) plan() (Plan, bool) {
	p, ok := PlanOf(j.s)
	if ok {
		p.Fallback = &jitter{s: p.Fallback, fraction: j.fraction}
	}
	return p, ok
}

// FullJitter waits a uniformly random time in (0, d] for each backoff d
// of s.
func FullJitter(s Strategy) Strategy { return &fullJitter{s: s} }

type fullJitter struct{ s Strategy }

func (j *fullJitter) NextBackoff() time.Duration {
	if j.s == nil {
		return 0
	}
	d := j.s.NextBackoff()
	if d <= 0 {
		return d
	}
	return 1 + rand.N(d) //nolint:gosec // G404: spreads retries, not a secret
}

func (j *fullJitter) restart() Strategy { return &fullJitter{s: Start(j.s)} }

func (j *fullJitter) plan() (Plan, bool) {
	p, ok := PlanOf(j.s)
	if ok {
		p.Fallback = &fullJitter{s: p.Fallback}
	}
	return p, ok
}

// Decorrelated draws each backoff uniformly between min and three times
// the previous one (min for the first), capped at max (0: no cap); min
// below a millisecond counts as one.
func Decorrelated(min, max time.Duration) Strategy {
	return &decorrelated{min: max1ms(min), max: max}
}

func max1ms(d time.Duration) time.Duration { return max(d, time.Millisecond) }

type decorrelated struct {
	min, max time.Duration
	prev     atomic.Int64 // the previous backoff, 0 before the first
}

func (j *decorrelated) NextBackoff() time.Duration {
	prev := time.Duration(j.prev.Load())
	d := j.min
	if prev > 0 {
		// Uniform in [min, 3*prev], without overflow for huge backoffs.
		hi := prev
		if hi < (1<<62)/3 {
			hi = 3 * prev
		}
		if hi > j.min {
			d = j.min + rand.N(hi-j.min+1) //nolint:gosec // G404: spreads retries, not a secret
		}
	}
	if j.max > 0 && d > j.max {
		d = j.max
	}
	j.prev.Store(int64(d))
	return d
}

func (j *decorrelated) restart() Strategy { return &decorrelated{min: j.min, max: j.max} }

// Events waits for events; where it cannot, it follows fallback, whose
// backoffs it returns.
func Events(fallback Strategy) Strategy { return &events{fallback: fallback} }

type events struct{ fallback Strategy }

func (w *events) NextBackoff() time.Duration { return w.fallback.NextBackoff() }

// restart returns fallback afresh: where a call retries without events
// (Refresh), it follows fallback.
func (w *events) restart() Strategy { return Start(w.fallback) }

func (w *events) plan() (Plan, bool) { return Plan{Fallback: w.fallback}, true }
