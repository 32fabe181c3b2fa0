package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/lease"
	"github.com/redislock/redislock/internal/script"
)

// KeepAliveOptions tunes [Lock.KeepAlive]. A nil *KeepAliveOptions, or a
// zero field, means the default. KeepAlive keeps no reference to it, so one
// value may be shared by any number of keep-alives.
type KeepAliveOptions struct {
	// Interval is the time from the sending of one successful refresh to
	// the sending of the next, less a random jitter of up to a tenth of it.
	// It must be shorter than ttl-Margin, the rest being left for retries.
	// Default: ttl/3.
	Interval time.Duration

	// Margin is taken off each lease to get [KeepAlive.ValidUntil], so that
	// loss is signalled before the key can expire; it cannot be turned off
	// (docs/keepalive.md says what it covers).
	// Default: ttl/50 + 2ms, of each lease's own TTL.
	Margin time.Duration

	// MaxHold caps how long the keep-alive keeps the lock, counted from the
	// call to KeepAlive: it then stops refreshing and ends with an error
	// matching both [ErrLockLost] and [ErrMaxHoldReached]. It does not
	// release the lock, which stays held until [KeepAlive.ValidUntil] (up to
	// one TTL for the work to wind down) or a [Lock.Release].
	// Default: 0, no limit.
	MaxHold time.Duration
}

// KeepAlive keeps a lock held in the background, from goroutines of its
// own that [Lock.KeepAlive] starts (docs/keepalive.md). It says when the
// lock is lost: [KeepAlive.Done] is closed and [KeepAlive.Err] says why.
// Bind the work to the lock with [KeepAlive.Context]. Stop it with
// [KeepAlive.Stop] or [Lock.Release]; it never releases the lock itself.
//
// A refresh that fails with a transient error (a lost connection, LOADING,
// READONLY, …) is retried while the lease is known valid
// ([KeepAlive.ValidUntil]). The keep-alive ends, closing Done, with Err
// matching [ErrLockLost], as soon as:
//   - a refresh, its own or a [Lock.Refresh], finds a key gone or held by
//     another token (the error also matches [ErrNotObtained]);
//   - ValidUntil passes without a successful refresh (Redis fails or hangs),
//     whatever the client's timeouts, which is before the key can expire;
//   - a refresh fails with an error that is not transient (NOPERM, a closed
//     client; the error also matches it);
//   - [KeepAliveOptions.MaxHold] is reached (the error also matches
//     [ErrMaxHoldReached]).
//
// Its refreshes run under a context of its own, without a caller's values.
// Its methods are safe for concurrent use, and accept a nil *KeepAlive,
// which behaves as a stopped one.
type KeepAlive struct {
	k keeper
}

// keeper is a *lease.KeepAlive or a session's *session.Entry.
type keeper interface {
	Done() <-chan struct{}
	Err() error
	Context(parent context.Context) (context.Context, context.CancelFunc)
	ValidUntil() time.Time
	Stop()
}

// keepLease starts a keep-alive of ls to ttl with refresh (nil,
// [lease.ErrNotHeld] or the Redis error); ended, if set, is the hooks' Lost.
func keepLease(ls *lease.Lease, ttl time.Duration, opt *KeepAliveOptions, refresh func(ctx context.Context) error, ended func(lease.End, error)) (*KeepAlive, error) {
	cfg := opt.config(ttl)
	cfg.After = ended
	k, err := ls.KeepAlive(cfg, refresh)
	if err != nil {
		return nil, keepErr(err)
	}
	return &KeepAlive{k: k}, nil
}

// keepErr translates an error of internal/lease's for [Lock.KeepAlive].
func keepErr(err error) error {
	var invalid *lease.ConfigError
	why, notHeld := lease.Unheld(err)
	switch {
	case errors.As(err, &invalid):
		return fmt.Errorf("%w: %s", ErrInvalidOption, invalid.Problem)
	case errors.Is(err, lease.ErrRunning):
		return ErrKeepAliveRunning
	case errors.Is(err, lease.ErrLost):
		return &lostError{msg: "its last refresh found it expired or held by another token", cause: ErrNotObtained}
	case notHeld:
		return fmt.Errorf("%w: %s", ErrLockNotHeld, why)
	}
	return err
}

// config returns the engine's settings for refreshes to ttl, unchecked.
func (o *KeepAliveOptions) config(ttl time.Duration) lease.Config {
	c := lease.Config{TTL: ttl, Transient: script.Transient, Ended: keepAliveError}
	if o != nil {
		c.Interval, c.Margin, c.MaxHold = o.Interval, o.Margin, o.MaxHold
	}
	return c
}

// keepAliveError is the error of a keep-alive that ended as e says.
func keepAliveError(e lease.End) error {
	msg, cause := e.Lost()
	switch e.Reason {
	case lease.Stopped:
		return ErrKeepAliveStopped
	case lease.NotHeld:
		cause = ErrNotObtained
	case lease.MaxHoldReached:
		cause = ErrMaxHoldReached
	}
	return &lostError{msg: msg, cause: cause}
}

// Done returns a channel that is closed when the keep-alive ends (lost, or
// stopped); [KeepAlive.Err] then says why. It does not block; a nil
// KeepAlive returns a closed channel.
func (k *KeepAlive) Done() <-chan struct{} {
	if k == nil {
		c := make(chan struct{}) // per call: no shared values
		close(c)
		return c
	}
	return k.k.Done()
}

// Err returns nil while the keep-alive runs. Once [KeepAlive.Done] is
// closed it returns, for good, an error matching [ErrLockLost] when the lock
// was lost (see [KeepAlive] for the causes it also matches), or
// [ErrKeepAliveStopped] when [KeepAlive.Stop] or [Lock.Release] ended it
// first. A nil KeepAlive returns ErrKeepAliveStopped.
func (k *KeepAlive) Err() error {
	if k == nil {
		return ErrKeepAliveStopped
	}
	return k.k.Err()
}

// Context returns a context derived from parent that is also cancelled when
// the keep-alive ends, with [KeepAlive.Err] as its cause ([context.Cause]):
// run the work protected by the lock under it. It is cancelled before Done
// is closed, or at once when the keep-alive has already ended; Stop and
// Release cancel it too. As with [context.WithCancel], call the returned
// CancelFunc when the work is done; parent must not be nil. A nil
// KeepAlive returns a context already cancelled with ErrKeepAliveStopped.
func (k *KeepAlive) Context(parent context.Context) (context.Context, context.CancelFunc) {
	if k == nil {
		ctx, cancel := context.WithCancelCause(parent)
		cancel(ErrKeepAliveStopped)
		return ctx, func() {}
	}
	return k.k.Context(parent)
}

// ValidUntil returns the time until which the lock is certainly held, as
// far as the handle knows: when the last successful refresh (its own, a
// [Lock.Refresh], or the obtain) was sent, plus its TTL, less
// [KeepAliveOptions.Margin]. It carries a monotonic clock reading: compare
// it with [time.Now] or pass it to [time.Until]. After a loss by expiry it
// is in the past; it is the zero Time once the lock is known to be gone (a
// refresh found it not held, or [Lock.Release] ran), and for a nil
// KeepAlive. It does not block.
func (k *KeepAlive) ValidUntil() time.Time {
	if k == nil {
		return time.Time{}
	}
	return k.k.ValidUntil()
}

// Stop ends the keep-alive, as stopped if it had not ended (see
// [KeepAlive.Err]), and waits for its goroutine to exit, 100 ms at most: no
// refresh starts after Stop returns, and the outcome of one still in flight
// then is ignored (docs/keepalive.md). It does not release the lock, which
// stays held until [KeepAlive.ValidUntil] or a [Lock.Release]. Stop is
// idempotent; on a nil KeepAlive it does nothing.
func (k *KeepAlive) Stop() {
	if k == nil {
		return
	}
	k.k.Stop()
}
