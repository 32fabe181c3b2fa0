package redislock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redislock/redislock/internal/script"
)

// KeepAliveOptions tunes [Lock.KeepAlive]. A nil *KeepAliveOptions means all
// defaults, and so does a zero field. KeepAlive reads the value once and
// keeps no reference to it, so one value may be shared by any number of
// keep-alives.
type KeepAliveOptions struct {
	// Interval is the time from the sending of one successful refresh to
	// the sending of the next, less a random jitter of up to a tenth of it
	// (so that keep-alives started together drift apart). It must be
	// shorter than ttl-Margin, the time each lease is known to last; the
	// rest of that time is spent retrying refreshes that failed.
	// Default: ttl/3, which leaves about two thirds of each lease for
	// retries.
	Interval time.Duration

	// Margin is taken off each lease to get the time until which the lock is
	// certainly held ([KeepAlive.ValidUntil]): the key cannot expire on the
	// server before the refresh was sent plus its TTL, but that is measured
	// by the server's clock, and loss must be signalled before the key can
	// expire. The margin covers the two clocks running at different rates
	// (the ttl/50 allows 2%, forty times the 500 ppm that NTP ever slews a
	// clock), Redis keeping expiry times in whole milliseconds (up to 1 ms
	// early), and the local timer firing a little late (the rest of the
	// 2 ms). It does not cover a clock that jumps, nor a process that is
	// paused (GC, a stopped VM) while the lease runs out: see the package
	// documentation on fencing. It cannot be turned off.
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

// KeepAlive refreshes one [Lock] in a goroutine of its own, started by
// [Lock.KeepAlive], and says when the lock is lost: [KeepAlive.Done] is
// closed and [KeepAlive.Err] says why. Stop it with [KeepAlive.Stop] or
// [Lock.Release]. Its methods are safe for concurrent use, and accept a nil
// *KeepAlive, which behaves as a stopped one.
type KeepAlive struct {
	cfg     keepAliveConfig
	refresh func(ctx context.Context) error // one refresh to cfg.ttl
	lock    *Lock                           // told of each lease; nil in tests
	started time.Time

	ctx    context.Context // ends with the keep-alive: parent of every refresh
	cancel context.CancelFunc
	done   chan struct{} // closed when the keep-alive ends
	exited chan struct{} // closed when its goroutine has returned

	mu         sync.Mutex
	err        error // set once, just before done is closed
	validUntil time.Time
	derived    map[*derivedContext]struct{} // contexts from Context, cancelled at the end
}

// derivedContext is a context returned by [KeepAlive.Context].
type derivedContext struct{ cancel context.CancelCauseFunc }

// keepAliveConfig is a keep-alive's settings, with defaults applied.
type keepAliveConfig struct {
	ttl         time.Duration // of each refresh, whole milliseconds
	ms          int64         // ttl in milliseconds, as sent
	interval    time.Duration
	margin      time.Duration // for a lease of ttl
	fixedMargin bool          // Margin was set: the same for every lease
	maxHold     time.Duration
	jitter      func(max time.Duration) time.Duration // in [0, max)
}

// KeepAlive starts refreshing the lock to ttl in a goroutine owned by the
// returned handle, so that the lock stays held while the work it protects
// runs. It sends nothing and does not wait for Redis (but see
// ErrKeepAliveRunning below for the one case where it waits). The first
// refresh is due Interval after the obtain (or the last successful
// [Lock.Refresh]) was sent, sooner if that lease was shorter than ttl. Stop
// it with [KeepAlive.Stop], or with [Lock.Release], which stops it first.
//
// The handle knows until when the lock is certainly held
// ([KeepAlive.ValidUntil]): the time the last successful refresh was sent,
// plus its TTL, less opt.Margin, on the monotonic clock. A refresh that
// fails with a transient error (a lost connection, LOADING, READONLY, …) is
// retried after short backoffs while that time lasts. The keep-alive ends,
// closing [KeepAlive.Done], with [KeepAlive.Err] matching [ErrLockLost], as
// soon as:
//   - a refresh finds a key gone or held by another token (the error also
//     matches [ErrNotObtained]);
//   - the validity runs out without a successful refresh, because Redis
//     fails, is unreachable or hangs: a timer of the handle's own fires
//     then, whatever the client's timeouts, and that is before the key can
//     expire on the server (see [KeepAliveOptions.Margin]);
//   - a refresh fails with an error that is not transient (NOPERM, a closed
//     client; the error also matches it);
//   - opt.MaxHold is reached (the error also matches [ErrMaxHoldReached]).
//
// Bind the work to the lock with [KeepAlive.Context]. The keep-alive never
// releases the lock: defer [Lock.Release] as usual.
//
// Refreshes run the script of [Lock.Refresh], one at a time, each with a
// context of the handle's own (no values) that ends with the handle or when
// the validity runs out. Other Refresh calls on the Lock meanwhile are
// harmless with the same ttl; with a shorter one they shorten the lease
// behind the keep-alive's back and make its signal late, so leave
// refreshing to it.
//
// Errors, with nothing started:
//   - [ErrInvalidTTL]: ttl below one millisecond.
//   - [ErrInvalidOption]: a negative option, a Margin not below ttl, or an
//     Interval not below ttl-Margin.
//   - [ErrNilClient]: the Lock has no Redis client.
//   - [ErrLockNotHeld]: a nil or released Lock, or one whose lease is not
//     known to be valid now: one from [Client.Attach] that was not
//     refreshed since, or whose lease has already run out on the local
//     clock. A successful [Lock.Refresh] makes its lease known again.
//   - [ErrKeepAliveRunning]: another keep-alive of the Lock is running. One
//     that has ended (lost or stopped) is replaced; if its goroutine is
//     still finishing a refresh, KeepAlive waits for it first (see
//     [KeepAlive.Stop]), so at most one keep-alive goroutine runs per Lock.
//
// It is safe for concurrent use.
func (l *Lock) KeepAlive(ttl time.Duration, opt *KeepAliveOptions) (*KeepAlive, error) {
	if l == nil {
		return nil, ErrLockNotHeld
	}
	if l.client == nil {
		return nil, ErrNilClient
	}
	ms, err := ttlMillis(ttl)
	if err != nil {
		return nil, err
	}
	cfg, err := opt.config(ms)
	if err != nil {
		return nil, err
	}

	l.mu.Lock()
	for old := l.keepAlive; old != nil && !old.hasExited(); old = l.keepAlive {
		if !old.hasEnded() {
			l.mu.Unlock()
			return nil, ErrKeepAliveRunning
		}
		// Its last refresh may still be in flight: wait, unlocked, since
		// a refresh that succeeds takes l.mu to record the lease.
		l.mu.Unlock()
		<-old.exited
		l.mu.Lock()
	}
	defer l.mu.Unlock()
	if l.released {
		return nil, fmt.Errorf("%w: the lock was released", ErrLockNotHeld)
	}
	if l.sent.IsZero() {
		return nil, fmt.Errorf("%w: no lease of this handle is known (refresh an attached lock first)", ErrLockNotHeld)
	}
	// Redis counts whole milliseconds: a TTL of 1.5 ms is a lease of 1 ms.
	leaseTTL := l.ttl.Truncate(time.Millisecond)
	validUntil := l.sent.Add(leaseTTL - cfg.marginFor(leaseTTL))
	if now := time.Now(); !now.Before(validUntil) {
		return nil, fmt.Errorf("%w: its lease ran out on the local clock %v ago (refresh it first)", ErrLockNotHeld, now.Sub(validUntil))
	}
	keys, token := l.keys, l.tokenArg
	k := startKeepAlive(cfg, l.sent, validUntil, func(ctx context.Context) error {
		ok, err := refreshScript.Run(ctx, l.client, keys, token, ms).Int64()
		switch {
		case err != nil:
			return err
		case ok != 1:
			return ErrNotObtained
		}
		return nil
	}, l)
	l.keepAlive = k
	return k, nil
}

// Done returns a channel that is closed when the keep-alive ends: the lock
// was lost (or MaxHold reached), or the keep-alive was stopped. [KeepAlive.Err]
// then says which. It does not block; a nil KeepAlive returns a closed
// channel.
func (k *KeepAlive) Done() <-chan struct{} {
	if k == nil {
		return closedChan
	}
	return k.done
}

// closedChan is the Done channel of a nil KeepAlive.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// Err returns nil while the keep-alive runs. Once [KeepAlive.Done] is
// closed it returns, for good, an error matching [ErrLockLost] when the lock
// was lost (see [Lock.KeepAlive] for the causes it also matches), or
// [ErrKeepAliveStopped] when [KeepAlive.Stop] or [Lock.Release] ended it
// first. A nil KeepAlive returns ErrKeepAliveStopped.
func (k *KeepAlive) Err() error {
	if k == nil {
		return ErrKeepAliveStopped
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
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
	ctx, cancel := context.WithCancelCause(parent)
	if k == nil {
		cancel(ErrKeepAliveStopped)
		return ctx, func() {}
	}
	d := &derivedContext{cancel: cancel}
	k.mu.Lock()
	if err := k.err; err != nil {
		k.mu.Unlock()
		cancel(err)
		return ctx, func() {}
	}
	if k.derived == nil {
		k.derived = make(map[*derivedContext]struct{})
	}
	k.derived[d] = struct{}{}
	k.mu.Unlock()
	return ctx, func() {
		k.mu.Lock()
		delete(k.derived, d)
		k.mu.Unlock()
		cancel(context.Canceled)
	}
}

// ValidUntil returns the time until which the lock is certainly held, as
// far as the handle knows: when the last successful refresh (or the obtain)
// was sent, plus its TTL, less the margin. It carries a monotonic clock
// reading: compare it with [time.Now] or pass it to [time.Until]. It moves
// on with each successful refresh. After a loss by expiry it is in the past;
// it is the zero Time once the lock is known to be gone (a refresh found it
// not held, or [Lock.Release] ran). After [KeepAlive.Stop] and MaxHold the
// lock stays held until then. A nil KeepAlive returns the zero Time. It
// does not block on Redis.
func (k *KeepAlive) ValidUntil() time.Time {
	if k == nil {
		return time.Time{}
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.validUntil
}

// Stop ends the keep-alive and returns once its goroutine has exited, so
// that no refresh runs after it returns. If the keep-alive had not ended,
// Err then returns [ErrKeepAliveStopped], and Done is closed (after the
// contexts of [KeepAlive.Context] were cancelled). It does not release the
// lock: the lock stays held until [KeepAlive.ValidUntil] or a
// [Lock.Release].
//
// Stop cancels the context of the refresh in flight, if any. go-redis
// notices that before sending and between its retries, but, unless the
// client has ContextTimeoutEnabled, not while it waits for a reply: against
// a Redis that hangs, Stop blocks until the client's ReadTimeout (3 s by
// default; forever if it is disabled) ends that wait. The loss signal
// itself never waits for this: Done is closed on time by a timer.
//
// Stop is idempotent and safe for concurrent use; on a nil KeepAlive it
// does nothing.
func (k *KeepAlive) Stop() {
	if k == nil {
		return
	}
	k.end(ErrKeepAliveStopped)
	<-k.exited
}

// startKeepAlive returns a running keep-alive for a lease known valid until
// validUntil, whose last successful refresh (or obtain) was sent at sent.
// lock, when not nil, is told of every lease.
func startKeepAlive(cfg keepAliveConfig, sent, validUntil time.Time, refresh func(context.Context) error, lock *Lock) *KeepAlive {
	ctx, cancel := context.WithCancel(context.Background())
	k := &KeepAlive{
		cfg:        cfg,
		refresh:    refresh,
		lock:       lock,
		started:    time.Now(),
		ctx:        ctx,
		cancel:     cancel,
		done:       make(chan struct{}),
		exited:     make(chan struct{}),
		validUntil: validUntil,
	}
	go k.run(sent, validUntil)
	return k
}

// refreshResult is the outcome of one refresh.
type refreshResult struct {
	sent time.Time
	err  error
}

// run is the keep-alive's goroutine. It owns the timers; each refresh runs
// in a goroutine of its own, so that a refresh that hangs (go-redis does not
// bound its reads by the context's deadline) cannot delay the loss signal.
// It returns once that goroutine has returned too.
func (k *KeepAlive) run(sent, validUntil time.Time) {
	defer close(k.exited)
	var (
		results  = make(chan refreshResult, 1)
		inFlight bool
		failures int
		lastErr  error
	)
	defer func() {
		if inFlight {
			// k.ctx is cancelled: the refresh returns as soon as the
			// client notices (see Stop).
			<-results
		}
	}()

	expiry := time.NewTimer(time.Until(validUntil))
	defer expiry.Stop()
	next := time.NewTimer(time.Until(k.cfg.nextRefresh(sent, validUntil)))
	defer next.Stop()
	var maxHold <-chan time.Time
	if k.cfg.maxHold > 0 {
		t := time.NewTimer(time.Until(k.started.Add(k.cfg.maxHold)))
		defer t.Stop()
		maxHold = t.C
	}

	for {
		select {
		case <-k.ctx.Done():
			return

		case <-expiry.C:
			k.end(expiredError(inFlight, lastErr))
			return

		case <-maxHold:
			k.end(&lostError{
				msg:   fmt.Sprintf("held for MaxHold (%v); it expires at the end of its lease unless released", k.cfg.maxHold),
				cause: ErrMaxHoldReached,
			})
			return

		case <-next.C:
			sent := time.Now()
			// If it runs, this refresh sets the keys to expire at sent+ttl
			// at the earliest, even when its reply is lost: sooner than the
			// lease known so far, if that was longer (an obtain with a
			// longer TTL).
			if v := sent.Add(k.cfg.ttl - k.cfg.margin); v.Before(validUntil) {
				validUntil = v
				k.setValidUntil(v)
				expiry.Reset(time.Until(v))
			}
			if k.lock != nil {
				k.lock.leaseSending(sent, k.cfg.ttl)
			}
			ctx, cancel := context.WithDeadline(k.ctx, validUntil)
			inFlight = true
			go func() {
				err := k.refresh(ctx)
				cancel()
				results <- refreshResult{sent: sent, err: err}
			}()

		case r := <-results:
			inFlight = false
			switch {
			case r.err == nil:
				failures, lastErr = 0, nil
				validUntil = r.sent.Add(k.cfg.ttl - k.cfg.margin)
				k.setValidUntil(validUntil)
				if k.lock != nil {
					k.lock.leaseRenewed(r.sent, k.cfg.ttl)
				}
				expiry.Reset(time.Until(validUntil))
				next.Reset(time.Until(k.cfg.nextRefresh(r.sent, validUntil)))
			case errors.Is(r.err, ErrNotObtained):
				k.setValidUntil(time.Time{})
				k.end(&lostError{msg: "a refresh found it expired or held by another token", cause: ErrNotObtained})
				return
			case k.ctx.Err() != nil:
				return // stopped
			case errors.Is(r.err, context.DeadlineExceeded) && !time.Now().Before(validUntil):
				// The refresh's own deadline: the validity ran out.
				k.end(expiredError(false, lastErr))
				return
			case script.Transient(r.err):
				failures++
				lastErr = r.err
				next.Reset(k.cfg.backoff(failures))
			default:
				k.end(&lostError{msg: "a refresh failed: " + r.err.Error(), cause: r.err})
				return
			}
		}
	}
}

// end ends the keep-alive with err, unless it has ended already: it cancels
// the derived contexts, then the refresh in flight, then closes done.
func (k *KeepAlive) end(err error) {
	k.mu.Lock()
	if k.err != nil {
		k.mu.Unlock()
		return
	}
	k.err = err
	derived := k.derived
	k.derived = nil
	k.mu.Unlock()
	for d := range derived {
		d.cancel(err)
	}
	k.cancel()
	close(k.done)
}

func (k *KeepAlive) setValidUntil(t time.Time) {
	k.mu.Lock()
	k.validUntil = t
	k.mu.Unlock()
}

func (k *KeepAlive) hasEnded() bool {
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

func (k *KeepAlive) hasExited() bool {
	select {
	case <-k.exited:
		return true
	default:
		return false
	}
}

// expiredError is the error of a keep-alive whose lease ran out on the local
// clock without a successful refresh.
func expiredError(inFlight bool, lastErr error) error {
	const msg = "its lease ran out without a successful refresh"
	switch {
	case lastErr != nil:
		return &lostError{msg: msg + "; last error: " + lastErr.Error(), cause: lastErr}
	case inFlight:
		return &lostError{msg: msg + " (Redis did not answer)"}
	}
	return &lostError{msg: msg}
}

// config applies the defaults to o for refreshes of ms milliseconds, and
// checks that the result can work.
func (o *KeepAliveOptions) config(ms int64) (keepAliveConfig, error) {
	ttl := time.Duration(ms) * time.Millisecond
	c := keepAliveConfig{
		ttl:      ttl,
		ms:       ms,
		interval: ttl / 3,
		margin:   defaultMargin(ttl),
		jitter:   randomJitter,
	}
	if o != nil {
		if o.Interval < 0 || o.Margin < 0 || o.MaxHold < 0 {
			return c, fmt.Errorf("%w: negative KeepAliveOptions (Interval %v, Margin %v, MaxHold %v)", ErrInvalidOption, o.Interval, o.Margin, o.MaxHold)
		}
		if o.Interval > 0 {
			c.interval = o.Interval
		}
		if o.Margin > 0 {
			c.margin, c.fixedMargin = o.Margin, true
		}
		c.maxHold = o.MaxHold
	}
	if c.margin >= ttl {
		return c, fmt.Errorf("%w: Margin %v leaves nothing of the ttl %v", ErrInvalidOption, c.margin, ttl)
	}
	if c.interval >= ttl-c.margin {
		return c, fmt.Errorf("%w: Interval %v is not shorter than ttl-Margin (%v): each lease would run out before its refresh", ErrInvalidOption, c.interval, ttl-c.margin)
	}
	return c, nil
}

// defaultMargin is the default [KeepAliveOptions.Margin] for a lease of
// ttl: 2% for clock rate differences, 2 ms for Redis's millisecond expiry
// times and a late timer.
func defaultMargin(ttl time.Duration) time.Duration {
	return ttl/50 + 2*time.Millisecond
}

// marginFor returns the margin for a lease of ttl.
func (c *keepAliveConfig) marginFor(ttl time.Duration) time.Duration {
	if c.fixedMargin {
		return c.margin
	}
	return defaultMargin(ttl)
}

// nextRefresh returns when to send the refresh after a successful one sent
// at sent, which made the lock valid until validUntil: an interval later,
// or earlier when that lease is shorter than one of ours (an obtain with a
// shorter TTL), so as to keep as much time for retries as a lease of ours
// would; less the jitter.
func (c *keepAliveConfig) nextRefresh(sent, validUntil time.Time) time.Time {
	due := sent.Add(c.interval)
	if latest := validUntil.Add(-(c.ttl - c.margin - c.interval)); latest.Before(due) {
		due = latest
	}
	return due.Add(-c.jitter(c.interval / 10))
}

// backoff returns the wait before retrying a refresh that failed failures
// times in a row: a 32nd of the interval (1 ms at least), doubling, at most
// a quarter of the interval.
func (c *keepAliveConfig) backoff(failures int) time.Duration {
	ceiling := max(c.interval/4, time.Millisecond)
	d := max(c.interval/32, time.Millisecond)
	for i := 1; i < failures && d < ceiling; i++ {
		d *= 2
	}
	return min(d, ceiling)
}

// randomJitter returns a random duration in [0, max), or 0.
func randomJitter(max time.Duration) time.Duration {
	if max <= 0 {
		return 0
	}
	return rand.N(max)
}

// leaseSending records that a refresh to ttl is being sent at sent. If it
// runs, even with its reply lost, the keys expire at sent+ttl at the
// earliest: the lease known so far shrinks to that when it was longer.
func (l *Lock) leaseSending(sent time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.sent.IsZero() && sent.Add(ttl).Before(l.sent.Add(l.ttl)) {
		l.sent, l.ttl = sent, ttl
	}
}

// leaseRenewed records a successful refresh to ttl sent at sent: the keys
// cannot expire before sent+ttl. It changes nothing once the lock was
// released.
func (l *Lock) leaseRenewed(sent time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.released && !sent.Before(l.sent) {
		l.sent, l.ttl = sent, ttl
	}
}

// stopKeepAlive marks the lock released, so that it gets no new lease nor
// keep-alive, then stops its keep-alive, if any, and waits for its goroutine
// to exit: no refresh runs after that.
func (l *Lock) stopKeepAlive() {
	l.mu.Lock()
	l.released = true
	k := l.keepAlive
	l.keepAlive = nil
	l.mu.Unlock()
	if k != nil {
		k.Stop()
		k.setValidUntil(time.Time{})
	}
}
