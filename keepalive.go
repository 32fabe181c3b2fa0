package redislock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redislock/redislock/internal/lease"
	"github.com/redislock/redislock/internal/script"
)

// KeepAliveOptions tunes [Lock.KeepAlive]. A nil *KeepAliveOptions means all
// defaults, and so does a zero field. KeepAlive reads the value once and
// keeps no reference to it, so one value may be shared by any number of
// keep-alives.
type KeepAliveOptions struct {
	// Interval is the time from the sending of one successful refresh to
	// the sending of the next, less a random jitter of up to a tenth of it.
	// It must be shorter than ttl-Margin, the time each lease is known to
	// last; the rest of that time is spent retrying refreshes that failed.
	// Default: ttl/3, which leaves about two thirds of each lease for
	// retries.
	Interval time.Duration

	// Margin is taken off each lease to get the time until which the lock is
	// certainly held ([KeepAlive.ValidUntil]), so that loss is signalled
	// before the key can expire by the server's clock. It cannot be turned
	// off, and it does not cover a clock that jumps nor a process paused
	// while the lease runs out (docs/keepalive.md says what it covers).
	// Default: ttl/50 + 2ms (22 ms for a 1 s TTL, 602 ms for 30 s), computed
	// for each lease from its own TTL.
	Margin time.Duration

	// MaxHold caps how long the keep-alive keeps the lock, counted from the
	// call to KeepAlive, so that a stuck job does not hold it forever. When
	// it is reached the keep-alive stops refreshing and ends with an error
	// matching both [ErrLockLost] and [ErrMaxHoldReached]. It does not
	// release the lock: the lock stays held until its current lease runs
	// out ([KeepAlive.ValidUntil]), which gives the work up to one TTL to
	// wind down while still protected, and then expires, unless released
	// earlier with [Lock.Release].
	// Default: 0, no limit.
	MaxHold time.Duration
}

// KeepAlive keeps a lock held in the background, from goroutines of its
// own that [Lock.KeepAlive] starts (docs/keepalive.md). It says when the
// lock is lost: [KeepAlive.Done] is closed and [KeepAlive.Err] says why.
// Stop it with [KeepAlive.Stop] or [Lock.Release].
//
// The keep-alive knows until when the lock is certainly held
// ([KeepAlive.ValidUntil]): the time the last successful refresh (or the
// obtain) was sent, plus its TTL, less [KeepAliveOptions.Margin], on the
// monotonic clock. A refresh that fails with a transient error (a lost
// connection, LOADING, READONLY, …) is retried after short backoffs while
// that time lasts. The keep-alive ends, closing Done, with Err matching
// [ErrLockLost], as soon as:
//   - a refresh, its own or a [Lock.Refresh], finds a key gone or held by
//     another token (the error also matches [ErrNotObtained]);
//   - the validity runs out without a successful refresh, because Redis
//     fails, is unreachable or hangs: a timer of the keep-alive's own fires
//     then, whatever the client's timeouts, and that is before the key can
//     expire on the server (see [KeepAliveOptions.Margin]);
//   - a refresh fails with an error that is not transient (NOPERM, a closed
//     client; the error also matches it);
//   - [KeepAliveOptions.MaxHold] is reached (the error also matches
//     [ErrMaxHoldReached]).
//
// Each refresh runs with a context of the keep-alive's own (no values) that
// ends with the keep-alive or when the validity runs out. Bind the work to
// the lock with [KeepAlive.Context]. The keep-alive never releases the
// lock: defer [Lock.Release] as usual.
//
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

// keepLease starts a keep-alive of ls to ttl (whole milliseconds) as opt
// says, with refresh (nil, [lease.ErrNotHeld] or the Redis error), calling
// ended, if not nil, once it has ended (the hooks' Lost).
func keepLease(ls *lease.Lease, ttl time.Duration, opt *KeepAliveOptions, refresh func(ctx context.Context) error, ended func(lease.End, error)) (*KeepAlive, error) {
	cfg := opt.config(ttl)
	cfg.After = ended
	k, err := ls.KeepAlive(cfg, refresh)
	if err != nil {
		return nil, keepErr(err)
	}
	return &KeepAlive{k: k}, nil
}

// keepErr returns the error of [Lock.KeepAlive] for an error of
// internal/lease's.
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

// config returns the engine's settings for refreshes to ttl, which it
// defaults and checks when it starts.
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

// Done returns a channel that is closed when the keep-alive ends: the lock
// was lost (or MaxHold reached), or the keep-alive was stopped. [KeepAlive.Err]
// then says which. It does not block; a nil KeepAlive returns a closed
// channel.
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
// the keep-alive ends, with [KeepAlive.Err] as its cause
// ([context.Cause]): run the work protected by the lock under it, and it
// stops the moment the lock is lost. The context is cancelled before Done
// is closed, by the goroutine that ends the keep-alive (at once, when it
// has already ended); Stop and Release cancel it too, with
// [ErrKeepAliveStopped]. As with [context.WithCancel], call the
// returned CancelFunc when the work is done; parent must not be nil. A nil
// KeepAlive returns a context already cancelled with ErrKeepAliveStopped.
// It is safe for concurrent use.
func (k *KeepAlive) Context(parent context.Context) (context.Context, context.CancelFunc) {
	if k == nil {
		ctx, cancel := context.WithCancelCause(parent)
		cancel(ErrKeepAliveStopped)
		return ctx, func() {}
	}
	return k.k.Context(parent)
}

// ValidUntil returns the time until which the lock is certainly held, as
// far as the handle knows: when the last successful refresh (or the obtain)
// was sent, plus its TTL, less the margin. It carries a monotonic clock
// reading: compare it with [time.Now] or pass it to [time.Until]. It moves
// on with each successful refresh, the keep-alive's or a [Lock.Refresh].
// After a loss by expiry it is in the past; it is the zero Time once the
// lock is known to be gone (a refresh found it not held, or [Lock.Release]
// ran). After [KeepAlive.Stop] and MaxHold the lock stays held until then.
// A nil KeepAlive returns the zero Time. It does not block on Redis.
func (k *KeepAlive) ValidUntil() time.Time {
	if k == nil {
		return time.Time{}
	}
	return k.k.ValidUntil()
}

// Stop ends the keep-alive and waits for its goroutine to exit: no refresh
// starts after Stop returns. If the keep-alive had not ended, Err then
// returns [ErrKeepAliveStopped], and Done is closed (after the contexts of
// [KeepAlive.Context] were cancelled). It does not release the lock: the
// lock stays held until [KeepAlive.ValidUntil] or a [Lock.Release].
//
// Stop blocks for 100 ms at most: it cancels the refresh in flight, if
// any, waits that long for its reply, then leaves it to finish in its own
// goroutine and ignores its outcome (docs/keepalive.md). The loss signal
// never waits for a refresh: Done is closed on time by a timer.
//
// Stop is idempotent and safe for concurrent use; on a nil KeepAlive it
// does nothing.
func (k *KeepAlive) Stop() {
	if k == nil {
		return
	}
	k.k.Stop()
}
