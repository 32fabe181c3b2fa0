package redislock

import (
	"context"
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/script"
)

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
