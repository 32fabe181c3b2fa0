package redislock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/redislock/redislock"
)

func backoffs(s redislock.RetryStrategy, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = s.NextBackoff()
	}
	return out
}

func TestRetryStrategies(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		s    redislock.RetryStrategy
		want []time.Duration
	}{
		{"NoRetry", redislock.NoRetry(), []time.Duration{0, 0, 0}},
		{"LinearBackoff", redislock.LinearBackoff(7 * ms), []time.Duration{7 * ms, 7 * ms, 7 * ms}},
		{"ExponentialBackoff(10ms,300ms)", redislock.ExponentialBackoff(10*ms, 300*ms),
			[]time.Duration{10 * ms, 10 * ms, 16 * ms, 32 * ms, 64 * ms, 128 * ms, 256 * ms, 300 * ms, 300 * ms}},
		{"ExponentialBackoff no cap", redislock.ExponentialBackoff(0, 0),
			[]time.Duration{4 * ms, 8 * ms, 16 * ms, 32 * ms, 64 * ms}},
		{"LimitRetry(Linear, 3)", redislock.LimitRetry(redislock.LinearBackoff(ms), 3), []time.Duration{ms, ms, ms, 0, 0}},
		{"LimitRetry(Exponential, 2)", redislock.LimitRetry(redislock.ExponentialBackoff(ms, 0), 2), []time.Duration{4 * ms, 8 * ms, 0, 0}},
		{"LimitRetry(_, 0)", redislock.LimitRetry(redislock.LinearBackoff(ms), 0), []time.Duration{0}},
		{"LimitRetry(nil, 2)", redislock.LimitRetry(nil, 2), []time.Duration{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := backoffs(tc.s, len(tc.want))
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("backoffs = %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestExponentialBackoffDoesNotOverflow(t *testing.T) {
	s := redislock.ExponentialBackoff(time.Millisecond, 0)
	prev := time.Duration(0)
	for i := range 200 {
		d := s.NextBackoff()
		if d < prev {
			t.Fatalf("backoff %d = %v, below the previous %v", i+1, d, prev)
		}
		prev = d
	}
}

// A strategy value is shared by goroutines: its counter is atomic, so the
// LimitRetry budget is spent exactly once in all (run with -race).
func TestRetryStrategyConcurrentUse(t *testing.T) {
	s := redislock.LimitRetry(redislock.ExponentialBackoff(time.Millisecond, time.Second), 1000)
	var wg sync.WaitGroup
	var mu sync.Mutex
	retries := 0
	for range 8 {
		wg.Go(func() {
			n := 0
			for s.NextBackoff() > 0 {
				n++
			}
			mu.Lock()
			retries += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if retries != 1000 {
		t.Errorf("goroutines got %d retries in all from LimitRetry(_, 1000)", retries)
	}
}
