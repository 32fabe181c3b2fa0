package redislock

import (
	"testing"
	"time"

	"github.com/redislock/redislock/internal/retry"
)

func TestJitterBounds(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name   string
		s      RetryStrategy
		lo, hi []time.Duration // bounds of the n-th backoff, inclusive
	}{
		{"Jitter(Linear(100ms), 0.25)", Jitter(LinearBackoff(100*ms), 0.25),
			[]time.Duration{75 * ms, 75 * ms, 75 * ms}, []time.Duration{125 * ms, 125 * ms, 125 * ms}},
		{"Jitter(Linear(100ms), 0)", Jitter(LinearBackoff(100*ms), 0),
			[]time.Duration{100 * ms, 100 * ms}, []time.Duration{100 * ms, 100 * ms}},
		{"Jitter(Linear(100ms), 7) clamps to 1", Jitter(LinearBackoff(100*ms), 7),
			[]time.Duration{1, 1}, []time.Duration{200 * ms, 200 * ms}},
		{"Jitter(Linear(100ms), -1) clamps to 0", Jitter(LinearBackoff(100*ms), -1),
			[]time.Duration{100 * ms}, []time.Duration{100 * ms}},
		{"Jitter(Exponential(10ms, 300ms), 0.5)", Jitter(ExponentialBackoff(10*ms, 300*ms), 0.5),
			[]time.Duration{5 * ms, 5 * ms, 8 * ms, 16 * ms, 32 * ms}, []time.Duration{15 * ms, 15 * ms, 24 * ms, 48 * ms, 96 * ms}},
		{"Jitter(NoRetry, 0.5) gives up", Jitter(NoRetry(), 0.5),
			[]time.Duration{0}, []time.Duration{0}},
		{"Jitter(LimitRetry(Linear(10ms), 1), 0.5)", Jitter(LimitRetry(LinearBackoff(10*ms), 1), 0.5),
			[]time.Duration{5 * ms, 0, 0}, []time.Duration{15 * ms, 0, 0}},
		{"Jitter(nil, 0.5)", Jitter(nil, 0.5), []time.Duration{0}, []time.Duration{0}},
		{"FullJitter(Exponential(10ms, 300ms))", FullJitter(ExponentialBackoff(10*ms, 300*ms)),
			[]time.Duration{1, 1, 1, 1, 1, 1, 1, 1}, []time.Duration{10 * ms, 10 * ms, 16 * ms, 32 * ms, 64 * ms, 128 * ms, 256 * ms, 300 * ms}},
		{"FullJitter(NoRetry) gives up", FullJitter(NoRetry()), []time.Duration{0}, []time.Duration{0}},
		{"FullJitter(nil)", FullJitter(nil), []time.Duration{0}, []time.Duration{0}},
		{"DecorrelatedJitter(10ms, 300ms)", DecorrelatedJitter(10*ms, 300*ms),
			// The first is min; each next is in [min, 3×previous] ≤ max.
			[]time.Duration{10 * ms, 10 * ms, 10 * ms, 10 * ms}, []time.Duration{10 * ms, 30 * ms, 90 * ms, 270 * ms}},
		{"DecorrelatedJitter(0, 2ms) starts at 1ms", DecorrelatedJitter(0, 2*ms),
			[]time.Duration{ms, ms, ms}, []time.Duration{ms, 2 * ms, 2 * ms}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Each run starts the strategy afresh, as a call does.
			for range 200 {
				s := retry.Start(tc.s)
				for i := range tc.lo {
					d := s.NextBackoff()
					if d < tc.lo[i] || d > tc.hi[i] {
						t.Fatalf("backoff %d = %v, want in [%v, %v]", i+1, d, tc.lo[i], tc.hi[i])
					}
				}
			}
		})
	}
}

func TestJitterSpreads(t *testing.T) {
	// Over many draws, ±50% jitter of 100ms covers most of [50ms, 150ms]
	// and full jitter most of (0, 100ms]: not a constant in disguise.
	for _, tc := range []struct {
		name   string
		s      RetryStrategy
		lo, hi time.Duration
	}{
		{"Jitter", Jitter(LinearBackoff(100*time.Millisecond), 0.5), 60 * time.Millisecond, 140 * time.Millisecond},
		{"FullJitter", FullJitter(LinearBackoff(100 * time.Millisecond)), 10 * time.Millisecond, 90 * time.Millisecond},
	} {
		least, most := time.Hour, time.Duration(0)
		for range 1000 {
			d := tc.s.NextBackoff()
			least, most = min(least, d), max(most, d)
		}
		if least > tc.lo || most < tc.hi {
			t.Errorf("%s: 1000 backoffs in [%v, %v], want a spread beyond [%v, %v]", tc.name, least, most, tc.lo, tc.hi)
		}
	}
}
