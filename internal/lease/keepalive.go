package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// StopWait bounds how long [KeepAlive.Stop] (and so [Lease.Released])
// waits for a refresh in flight to return after its context was cancelled.
// A refresh that honours its context returns within microseconds; one that
// does not (go-redis waiting for a reply, without ContextTimeoutEnabled) is
// left to finish in its own goroutine, and its outcome is ignored.
const StopWait = 100 * time.Millisecond

// Reason says why a keep-alive ended.
type Reason int

// The ways a keep-alive ends.
const (
	// Stopped: [KeepAlive.Stop] or [Lease.Released] ended it.
	Stopped Reason = iota + 1
	// NotHeld: a refresh returned [ErrNotHeld], or the lease was marked
	// lost by a refresh of the holder's own ([Lease.Lost]).
	NotHeld
	// Expired: the lease ran out on the local clock without a successful
	// refresh.
	Expired
	// Failed: a refresh failed with an error that is not transient.
	Failed
	// MaxHoldReached: [Config.MaxHold] passed.
	MaxHoldReached
	// SessionLost: the lease was kept by a session (internal/session)
	// that ended because another of its leases expired, or its client
	// failed: it can no longer be refreshed. Err and InFlight are those of
	// the lease that expired.
	SessionLost
)

// End is how a keep-alive ended, as given to [Config.Ended]. As an error
// (the default of Ended) it says so and unwraps to Err.
type End struct {
	Reason   Reason
	Err      error         // Failed: the refresh's error; Expired: the last refresh error, if any; NotHeld: the refresh's, if a refresh of the keep-alive found it
	InFlight bool          // Expired: a refresh was still waiting for its reply
	MaxHold  time.Duration // MaxHoldReached: the Config's MaxHold
}

// Error describes e.
func (e End) Error() string {
	switch e.Reason {
	case Stopped:
		return "lease: keep-alive stopped"
	case NotHeld:
		return "lease: a refresh found the keys gone or taken"
	case Expired:
		return "lease: ran out without a successful refresh"
	case Failed:
		return fmt.Sprintf("lease: a refresh failed: %v", e.Err)
	case MaxHoldReached:
		return fmt.Sprintf("lease: held for MaxHold (%v)", e.MaxHold)
	case SessionLost:
		return "lease: its session ended"
	}
	return "lease: keep-alive ended"
}

// Unwrap returns e.Err.
func (e End) Unwrap() error { return e.Err }

// KeepAlive refreshes one [Lease] in a goroutine of its own, started by
// [Lease.KeepAlive], until it is stopped or the lease is lost. Each refresh
// runs in a goroutine of its own too, owned by the keep-alive, so that a
// refresh that hangs cannot delay the loss signal; they run one at a time.
// Every outcome is recorded in the Lease, and the keep-alive follows what
// others record there: a lease renewed or shortened by a refresh of the
// holder's own moves its timers (it refreshes sooner after a shorter one),
// and a lease marked lost ends it at once. Its methods are safe for
// concurrent use.
//
// The first refresh is due Interval after the lease's send time (sooner
// when that lease is shorter than Config.TTL). A refresh that fails with a
// transient error is retried, after backoffs of a 32nd of the interval
// doubling up to a quarter, while the lease lasts. The keep-alive ends,
// closing Done, when a refresh returns [ErrNotHeld] or the lease is marked
// lost ([NotHeld]), when the lease's ValidUntil passes without a successful
// refresh ([Expired]; a timer of its own, whatever the refresh does), when
// a refresh fails otherwise ([Failed]), when MaxHold passes
// ([MaxHoldReached]), or when it is stopped ([Stopped]).
type KeepAlive struct {
	lease   *Lease
	cfg     Config
	refresh func(context.Context) error
	wake    chan struct{} // the lease changed (Changed)
	started time.Time

	ctx    context.Context // ends with the keep-alive: parent of every refresh
	cancel context.CancelFunc
	exited chan struct{} // closed when its goroutine has returned
	sig    Signal        // Done, Err, Context
}

// newKeepAlive returns a keep-alive of l that is not running yet: start
// runs it.
func newKeepAlive(l *Lease, cfg Config, refresh func(context.Context) error) *KeepAlive {
	ctx, cancel := context.WithCancel(context.Background())
	return &KeepAlive{
		lease:   l,
		cfg:     cfg,
		refresh: refresh,
		wake:    make(chan struct{}, 1),
		started: time.Now(),
		ctx:     ctx,
		cancel:  cancel,
		exited:  make(chan struct{}),
	}
}

// start runs k's goroutine on a lease sent at sent and valid until
// validUntil.
func (k *KeepAlive) start(sent, validUntil time.Time) { go k.run(sent, validUntil) }

// Changed tells the keep-alive that its lease changed ([Keeper]).
func (k *KeepAlive) Changed() {
	select {
	case k.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// Done returns a channel that is closed when the keep-alive ends; Err then
// says how. It does not block.
func (k *KeepAlive) Done() <-chan struct{} { return k.sig.Done() }

// Err returns nil while the keep-alive runs, and once Done is closed, for
// good, the error that [Config.Ended] returned for its [End].
func (k *KeepAlive) Err() error { return k.sig.Err() }

// ValidUntil returns the lease's ValidUntil with the keep-alive's margin:
// the zero Time once the lease is lost or released. It does not block.
func (k *KeepAlive) ValidUntil() time.Time { return k.lease.ValidUntil(k.cfg.Margin) }

// Context returns a context derived from parent that is also cancelled when
// the keep-alive ends, with Err as its cause, before Done is closed (at
// once when it has ended already). Call the CancelFunc when done with it.
func (k *KeepAlive) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return k.sig.Context(parent)
}

// Stop ends the keep-alive, with [Stopped] unless it had ended already, and
// waits for its goroutine to exit, which it does at most [StopWait] after
// the end: no refresh is sent after Stop returns. A refresh still waiting
// for its reply then is left to return in its own goroutine; its outcome
// is ignored. Stop is idempotent.
func (k *KeepAlive) Stop() {
	k.end(End{Reason: Stopped})
	<-k.exited
}

// result is the outcome of one refresh.
type result struct {
	sent time.Time
	err  error
}

// run is the keep-alive's goroutine. It owns the timers and records every
// outcome in the lease.
func (k *KeepAlive) run(sent, validUntil time.Time) {
	defer func() {
		// It returns after end was called, by itself or by Stop; exited
		// means done too.
		<-k.sig.Done()
		close(k.exited)
	}()
	var (
		ttl, margin = k.cfg.TTL, k.cfg.Margin
		results     = make(chan result, 1) // buffered: a refresh left behind never blocks
		inFlight    bool
		failures    int
		lastErr     error
	)
	defer func() {
		if !inFlight {
			return
		}
		// k.ctx is cancelled: a refresh that honours it returns now.
		t := time.NewTimer(StopWait)
		defer t.Stop()
		select {
		case <-results:
		case <-t.C:
		}
	}()

	expiry := time.NewTimer(time.Until(validUntil))
	defer expiry.Stop()
	next := time.NewTimer(time.Until(k.cfg.NextRefresh(sent, validUntil)))
	defer next.Stop()
	var maxHold <-chan time.Time
	if k.cfg.MaxHold > 0 {
		t := time.NewTimer(time.Until(k.started.Add(k.cfg.MaxHold)))
		defer t.Stop()
		maxHold = t.C
	}
	// follow re-reads the lease, which others may have changed: it reports
	// false when the keep-alive must end. leaseSent is the lease's send
	// time; ownSent that of the last lease this loop set (or started from).
	leaseSent, ownSent := sent, sent
	follow := func() bool {
		var st State
		st, validUntil, leaseSent = k.lease.Status(margin)
		switch st {
		case StateLost:
			k.end(End{Reason: NotHeld})
			return false
		case StateReleased:
			k.end(End{Reason: Stopped})
			return false
		}
		expiry.Reset(time.Until(validUntil))
		return true
	}

	for {
		select {
		case <-k.ctx.Done():
			return

		case <-k.wake:
			if !follow() {
				return
			}
			if !inFlight && !leaseSent.Equal(ownSent) {
				// A refresh of the holder's own set the lease: schedule
				// from it, as from one of ours (sooner, if it is short).
				ownSent, failures, lastErr = leaseSent, 0, nil
				next.Reset(time.Until(k.cfg.NextRefresh(leaseSent, validUntil)))
			}

		case <-expiry.C:
			// A Renewed of the holder's own may have moved the lease on.
			if !follow() {
				return
			}
			if !time.Now().Before(validUntil) {
				k.end(End{Reason: Expired, Err: lastErr, InFlight: inFlight})
				return
			}

		case <-maxHold:
			k.end(End{Reason: MaxHoldReached, MaxHold: k.cfg.MaxHold})
			return

		case <-next.C:
			sent := time.Now()
			k.lease.Sending(sent, ttl)
			if !follow() {
				return
			}
			ownSent = leaseSent
			ctx, cancel := context.WithDeadline(k.ctx, validUntil)
			inFlight = true
			go func() {
				err := k.refresh(ctx)
				cancel()
				results <- result{sent: sent, err: err}
			}()

		case r := <-results:
			inFlight = false
			switch {
			case r.err == nil:
				failures, lastErr = 0, nil
				k.lease.Renewed(r.sent, ttl)
				if !follow() {
					return
				}
				ownSent = leaseSent
				next.Reset(time.Until(k.cfg.NextRefresh(r.sent, validUntil)))
			case errors.Is(r.err, ErrNotHeld):
				k.lease.Lost(r.sent)
				k.end(End{Reason: NotHeld, Err: r.err})
				return
			case k.ctx.Err() != nil:
				return // stopped
			case errors.Is(r.err, context.DeadlineExceeded) && !time.Now().Before(validUntil):
				// The refresh's own deadline: the validity ran out before
				// it answered.
				k.end(End{Reason: Expired, Err: lastErr, InFlight: true})
				return
			case k.cfg.Transient != nil && k.cfg.Transient(r.err):
				failures++
				lastErr = r.err
				next.Reset(k.cfg.Backoff(failures))
			default:
				k.end(End{Reason: Failed, Err: r.err})
				return
			}
		}
	}
}

// end ends the keep-alive as e says, unless it has ended already: it
// cancels the derived contexts, then the refresh in flight, then closes
// done, then calls Config.After.
func (k *KeepAlive) end(e End) {
	if !k.sig.Begin() {
		return
	}
	var err error = e
	if k.cfg.Ended != nil {
		err = k.cfg.Ended(e)
	}
	k.sig.Cancel(err)
	k.cancel()
	k.sig.Close()
	if k.cfg.After != nil {
		defer func() { _ = recover() }() // see Config.After
		k.cfg.After(e, err)
	}
}

// Ended reports whether the keep-alive has ended ([Keeper]).
func (k *KeepAlive) Ended() bool { return k.sig.Closed() }

// Wait waits for the keep-alive's goroutine to exit ([Keeper]): at most
// [StopWait] after its end.
func (k *KeepAlive) Wait() { <-k.exited }

func (k *KeepAlive) hasEnded() bool { return k.Ended() }

func (k *KeepAlive) hasExited() bool {
	select {
	case <-k.exited:
		return true
	default:
		return false
	}
}
