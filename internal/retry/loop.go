package retry

import (
	"context"
	"errors"
	"time"
)

// ErrGaveUp is returned by [Run] when the strategy gave up after an
// attempt that found the keys held.
var ErrGaveUp = errors.New("retry: gave up")

// EndedError is returned by [Run] when the context ended (or the TTL-long
// wait ran out) first. Err is the context's error.
type EndedError struct{ Err error }

func (e *EndedError) Error() string { return "retry: wait ended: " + e.Err.Error() }

// Unwrap returns the context's error.
func (e *EndedError) Unwrap() error { return e.Err }

// Attempt makes one attempt of a retried operation. It returns done when
// there is nothing more to try (err is then the result); otherwise err is
// the transient error that made it fail, or nil when the keys are held by
// another.
type Attempt func(ctx context.Context) (done bool, err error)

// Run runs attempt until it is done, the strategy gives up, or the context
// ends. Without a deadline on ctx, waiting ends at now+ttl: a caller's
// deadline wins. An error that transient says is not worth a retry ends
// the call at once. It runs on the caller's goroutine and starts its own
// copy of strategy on the first retry.
//
// It returns the attempt's result; ErrGaveUp, or the last transient error,
// when the strategy gives up; and an [*EndedError] when the context ends
// while waiting, also when the attempt saw something else.
func Run(ctx context.Context, ttl time.Duration, strategy Strategy, transient func(error) bool, attempt Attempt) error {
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
		// must always say so, whatever the attempt saw.
		if ctx.Err() != nil {
			return &EndedError{ctx.Err()}
		}
		if err != nil && !transient(err) {
			return err
		}
		if !started {
			strategy, started = Start(strategy), true
		}
		backoff := strategy.NextBackoff()
		if backoff <= 0 {
			if err != nil {
				return err
			}
			return ErrGaveUp
		}
		if cancel == nil {
			ctx, cancel = Bound(ctx, start.Add(ttl))
		}
		if timer == nil {
			timer = time.NewTimer(backoff)
		} else {
			timer.Reset(backoff)
		}
		select {
		case <-ctx.Done():
			return &EndedError{ctx.Err()}
		case <-timer.C:
		}
	}
}

// Bound returns ctx limited to deadline when ctx has no deadline of its
// own: a caller's deadline wins, which is how to wait longer than the TTL.
func Bound(ctx context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, deadline)
}
