package quorum

import (
	"context"
	"errors"
	"time"
)

// The calls below are the engine's, in the form a caller that holds a
// lease as the single-server scripts would needs them: a lock held by
// others is no failure, and a failure says nothing the reply does not.

// Take is [Engine.Obtain] for a caller that retries: held reports a lock
// held by others (or recovering) on too many nodes, whatever the failed
// ones would have said, and err is then nil. Any other failure (nodes
// that failed and could have made the difference) is Obtain's error.
func (e *Engine) Take(ctx context.Context, r Request) (g Grant, held bool, err error) {
	g, err = e.Obtain(ctx, r)
	var f *Failure
	if errors.As(err, &f) && (len(f.Errs) == 0 || f.Counts.Taken+f.Counts.Failed < Majority(f.Counts.Nodes)) {
		return Grant{}, true, nil
	}
	return g, false, err
}

// Renew is [Engine.Refresh] reporting whether a majority holds the keys
// now: false with a nil error where Refresh fails with [ErrNotHeld].
func (e *Engine) Renew(ctx context.Context, h Hold, ttl time.Duration) (bool, error) {
	_, err := e.Refresh(ctx, h, ttl)
	if errors.Is(err, ErrNotHeld) {
		return false, nil
	}
	return err == nil, err
}

// Released is [Engine.Release] reporting whether a majority released the
// keys (then with a nil error), or else Release's error.
func (e *Engine) Released(ctx context.Context, keys []string, token, tag string) (bool, error) {
	n, err := e.Release(ctx, keys, token, tag)
	if n >= Majority(len(e.nodes)) {
		return true, nil
	}
	return false, err
}

// HeldTTL is [Engine.TTL], with 0 and no error where a failure matches
// [ErrNotHeld].
func (e *Engine) HeldTTL(ctx context.Context, keys []string, token, tag string) (time.Duration, error) {
	d, err := e.TTL(ctx, keys, token, tag)
	if err != nil && !errors.Is(err, ErrNotHeld) {
		return 0, err
	}
	return d, nil
}
