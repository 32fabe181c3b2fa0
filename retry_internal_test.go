package redislock

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// countingStrategy is a caller-written strategy: it is used as it is.
type countingStrategy struct{ calls int }

func (s *countingStrategy) NextBackoff() time.Duration { s.calls++; return 10 * time.Millisecond }

func TestRetryTimingWithoutDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		attempts := 0
		err := withRetry(context.Background(), 100*time.Millisecond, LinearBackoff(30*time.Millisecond), func(context.Context) (bool, error) {
			attempts++
			return false, nil
		})
		if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want ErrNotObtained and DeadlineExceeded", err)
		}
		if got := time.Since(start); got != 100*time.Millisecond {
			t.Errorf("gave up after %v, want the TTL of 100ms", got)
		}
		// At 0, 30, 60, 90 ms; the wait for 120 ms is cut by the TTL.
		if attempts != 4 {
			t.Errorf("%d attempts, want 4", attempts)
		}
	})
}

func TestRetryCallerDeadlineWins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		attempts := 0
		err := withRetry(ctx, 100*time.Millisecond, LinearBackoff(30*time.Millisecond), func(context.Context) (bool, error) {
			attempts++
			return false, nil
		})
		if !errors.Is(err, ErrNotObtained) || !errors.Is(err, ctx.Err()) {
			t.Errorf("got %v, want ErrNotObtained and %v", err, ctx.Err())
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("gave up after %v, want the caller's deadline of 1s", got)
		}
		if attempts != 34 {
			t.Errorf("%d attempts, want 34 (every 30ms in 1s)", attempts)
		}
	})
}

func TestRetryDeadlineOnBackoffTick(t *testing.T) {
	// The deadline and the timer fire at the same instant: whichever the
	// select picks, the error must name both ErrNotObtained and the context.
	for range 100 {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			err := withRetry(ctx, time.Hour, LinearBackoff(10*time.Millisecond), func(ctx context.Context) (bool, error) {
				if ctx.Err() != nil {
					return false, ctx.Err() // what go-redis returns for an ended context
				}
				return false, nil
			})
			if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want ErrNotObtained and DeadlineExceeded", err)
			}
		})
	}
}

func TestRetryStartsStrategyPerCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shared := LimitRetry(LinearBackoff(time.Millisecond), 2)
		for call := range 3 {
			attempts := 0
			err := withRetry(context.Background(), time.Minute, shared, func(context.Context) (bool, error) {
				attempts++
				return false, nil
			})
			if !errors.Is(err, ErrNotObtained) || attempts != 3 {
				t.Errorf("call %d: %d attempts, %v; want 3, ErrNotObtained", call, attempts, err)
			}
		}
		custom := &countingStrategy{}
		_ = withRetry(context.Background(), 25*time.Millisecond, custom, func(context.Context) (bool, error) { return false, nil })
		if custom.calls != 3 {
			t.Errorf("caller's strategy asked %d times, want 3 (10, 20, then cut at 25ms)", custom.calls)
		}
	})
}

func TestRetryStopsOnSuccessAndFinalErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		attempts := 0
		err := withRetry(context.Background(), time.Minute, LinearBackoff(time.Millisecond), func(context.Context) (bool, error) {
			attempts++
			return attempts == 3, nil
		})
		if err != nil || attempts != 3 {
			t.Errorf("success on attempt 3: %d attempts, %v", attempts, err)
		}
		final := errors.New("final")
		attempts = 0
		err = withRetry(context.Background(), time.Minute, LinearBackoff(time.Millisecond), func(context.Context) (bool, error) {
			attempts++
			return true, final
		})
		if err != final || attempts != 1 {
			t.Errorf("final error: %d attempts, %v", attempts, err)
		}
	})
}
