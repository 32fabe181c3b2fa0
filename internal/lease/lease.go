// Package lease is the one owner of a lease's clock and of the loop that
// keeps a lease alive. It knows nothing of Redis, scripts or the public API:
// the caller tells it what happened and gives it one callback to refresh.
//
// A lease is what a holder knows of its keys' expiry: a request sent at
// time sent set them to expire ttl later, so by the server's clock they
// cannot expire before sent+ttl, whether or not the reply came back. A
// [Lease] records those facts as they happen, on the monotonic clock:
//   - [Lease.Obtained]: the obtain sent at sent took the keys for ttl;
//   - [Lease.Sending]: a refresh to ttl is being sent (if it runs, the keys
//     expire at sent+ttl at the earliest, even with its reply lost);
//   - [Lease.Renewed]: a refresh sent at sent extended every key;
//   - [Lease.Lost]: a refresh sent at sent found the keys gone or taken;
//   - [Lease.Released]: the holder gave the lease up.
//
// From them it says until when the holder certainly holds its keys
// ([Lease.ValidUntil]): the end of the lease less a margin
// ([DefaultMargin]) for the two clocks' rates, Redis's whole milliseconds
// and a late timer.
//
// [Lease.KeepAlive] starts a [KeepAlive], the loop that refreshes the lease
// in the background until it is stopped or the lease is lost, and says so
// through Done, Err and Context. At most one runs per Lease.
//
// Any primitive that holds keys for a TTL (a lock, a semaphore permit, a
// read hold, a leadership) uses it the same way: it holds a Lease value (the
// zero value is a lease not known yet), calls Obtained with the send time
// and TTL of the attempt that took its keys, Sending/Renewed/Lost around
// each refresh it makes itself, and Released before it gives the keys
// back. To keep the keys alive it calls KeepAlive with a [Config] and one
// callback that runs its refresh script once: it returns nil when the script
// extended every key to Config.TTL, [ErrNotHeld] when the server says the
// holder no longer holds them, and any other error otherwise
// ([Config.Transient] says which of those are worth a retry). The keep-alive
// records every outcome in the Lease itself.
package lease

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Errors of [Lease.KeepAlive]. The caller maps them to its own vocabulary.
var (
	// ErrRunning: another keep-alive of the lease is running.
	ErrRunning = errors.New("lease: a keep-alive is running")
	// ErrReleased: [Lease.Released] was called.
	ErrReleased = errors.New("lease: released")
	// ErrUnknown: no lease is known (nothing obtained or renewed it yet).
	ErrUnknown = errors.New("lease: not known")
	// ErrLost: the last refresh found the keys gone or taken.
	ErrLost = errors.New("lease: lost")
	// ErrExpired: the lease has run out on the local clock (returned
	// wrapped, with how long ago).
	ErrExpired = errors.New("lease: ran out on the local clock")
)

// ErrNotHeld is what a refresh callback returns when the server says that
// the holder no longer holds its keys: the keep-alive then marks the lease
// lost and ends. It is never retried.
var ErrNotHeld = errors.New("lease: not held")

// ErrTaken is what a refresh returns, instead of [ErrNotHeld], when it
// found the keys held by another holder rather than gone. It matches
// ErrNotHeld, so that a keeper treats both alike; only hooks tell them
// apart.
var ErrTaken = fmt.Errorf("%w: held by another token", ErrNotHeld)

// State is where a lease stands.
type State int

// The states of a lease.
const (
	StateUnknown  State = iota // nothing obtained or renewed it yet
	StateHeld                  // sent and ttl say until when
	StateLost                  // a refresh found the keys gone or taken
	StateReleased              // the holder gave it up
)

// A Keeper keeps a [Lease] alive: a [KeepAlive], its own loop, or a lease
// of a session, which keeps many from one loop (internal/session). A
// Lease has at most one running at a time ([Lease.Keep]), tells it of
// every change, and stops it when it is released.
type Keeper interface {
	// Changed is called whenever the lease changes, with the Lease's
	// mutex held: it must not block nor call the Lease.
	Changed()
	// Stop ends the keeper, as stopped unless it had ended already, and
	// returns once no refresh of it can start; it waits at most
	// [StopWait] for a refresh in flight.
	Stop()
	// Ended reports whether the keeper has ended.
	Ended() bool
	// Wait returns once the keeper that has ended has no refresh left in
	// flight, or [StopWait] after its end.
	Wait()
}

// Lease is what a holder knows of its keys' expiry. The zero value is a
// lease not known yet (as for a handle attached to keys obtained
// elsewhere). Its methods are safe for concurrent use and never block on
// anything but its mutex, except [Lease.Released], which waits for the
// keep-alive as [KeepAlive.Stop] does. A Lease must not be copied.
type Lease struct {
	mu    sync.Mutex
	state State
	sent  time.Time     // send time of the request that set the lease
	ttl   time.Duration // its TTL, whole milliseconds
	k     Keeper        // the latest keeper: told of every change, stopped by Released
}

// whole truncates ttl to the milliseconds Redis counts: a TTL of 1.5 ms is
// a lease of 1 ms.
func whole(ttl time.Duration) time.Duration { return ttl.Truncate(time.Millisecond) }

// Obtained records that the obtain sent at sent (read before it was sent)
// took the keys for ttl. It starts the lease afresh, whatever was known
// before, unless the lease was released. Call it before the holder's handle
// is shared, with the send time of the attempt that succeeded.
func (l *Lease) Obtained(sent time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == StateReleased {
		return
	}
	l.state, l.sent, l.ttl = StateHeld, sent, whole(ttl)
	l.notify()
}

// Sending records that a refresh to ttl is being sent at sent. If it runs,
// even with its reply lost, the keys expire at sent+ttl at the earliest, so
// a lease that ended later shrinks to that. It changes nothing unless the
// lease is held, and reports whether it is.
func (l *Lease) Sending(sent time.Time, ttl time.Duration) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ttl = whole(ttl)
	if l.state == StateHeld && sent.Add(ttl).Before(l.sent.Add(l.ttl)) {
		l.sent, l.ttl = sent, ttl
		l.notify()
	}
	return l.state == StateHeld
}

// Renewed records that a refresh sent at sent extended every key to ttl:
// they cannot expire before sent+ttl. A lease not known yet, or lost to a
// refresh sent before this one, becomes held. It changes nothing when a
// later request already set the lease, or once the lease was released.
func (l *Lease) Renewed(sent time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == StateReleased || (l.state != StateUnknown && sent.Before(l.sent)) {
		return
	}
	l.state, l.sent, l.ttl = StateHeld, sent, whole(ttl)
	l.notify()
}

// Lost records that a refresh sent at sent found the keys gone or held by
// another token. A running keep-alive ends at once. It changes nothing when
// a later request already set the lease, or once the lease was released.
func (l *Lease) Lost(sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == StateReleased || (l.state != StateUnknown && sent.Before(l.sent)) {
		return
	}
	l.state, l.sent, l.ttl = StateLost, sent, 0
	l.notify()
}

// Released records that the holder gives the lease up, so that nothing
// renews it again: ValidUntil is zero from now on, KeepAlive returns
// [ErrReleased], and the other events change nothing. It then stops the
// lease's keep-alive, if any, and waits for it as [KeepAlive.Stop] does.
func (l *Lease) Released() {
	l.mu.Lock()
	l.state = StateReleased
	k := l.k
	l.k = nil
	l.notify()
	l.mu.Unlock()
	if k != nil {
		k.Stop()
	}
}

// ValidUntil returns the time until which the keys are certainly held: the
// end of the lease less margin, on the monotonic clock (compare it with
// [time.Now]). A margin of 0 means [DefaultMargin] of the lease's TTL. It
// is the zero Time when the lease is not known, lost or released.
func (l *Lease) ValidUntil(margin time.Duration) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, _ := l.validUntil(margin)
	return v
}

// TTL returns the TTL of the lease as last set (whole milliseconds), or 0
// when the lease is not known, lost or released.
func (l *Lease) TTL() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != StateHeld {
		return 0
	}
	return l.ttl
}

// validUntil is ValidUntil with l.mu held; it also returns the lease's
// send time.
func (l *Lease) validUntil(margin time.Duration) (time.Time, time.Time) {
	if l.state != StateHeld {
		return time.Time{}, time.Time{}
	}
	if margin == 0 {
		margin = DefaultMargin(l.ttl)
	}
	return l.sent.Add(l.ttl - margin), l.sent
}

// Status returns where the lease stands and, when it is held, ValidUntil
// with margin and the lease's send time.
func (l *Lease) Status(margin time.Duration) (st State, validUntil, sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	validUntil, sent = l.validUntil(margin)
	return l.state, validUntil, sent
}

// notify tells the keeper, if any, that the lease changed. l.mu is held.
func (l *Lease) notify() {
	if l.k != nil {
		l.k.Changed()
	}
}

// KeepAlive starts refreshing the lease with refresh, in a goroutine owned
// by the returned handle, as cfg says (see [Config] and [KeepAlive]). It
// sends nothing itself and does not block, except when the lease's previous
// keeper has ended but its goroutine has not exited yet: it then waits
// for that as [KeepAlive.Stop] does, so that at most one keep-alive
// goroutine runs per lease.
//
// Errors, with nothing started: a [*ConfigError] for a cfg that cannot
// work; the errors of [Lease.Keep].
func (l *Lease) KeepAlive(cfg Config, refresh func(ctx context.Context) error) (*KeepAlive, error) {
	cfg, err := cfg.Resolve()
	if err != nil {
		return nil, err
	}
	k := newKeepAlive(l, cfg, refresh)
	sent, validUntil, err := l.Keep(k, cfg.Margin)
	if err != nil {
		k.cancel()
		return nil, err
	}
	k.start(sent, validUntil)
	return k, nil
}

// Keep makes k the keeper of the lease, and returns the lease's send time
// and its ValidUntil with margin, which k starts from; from then on the
// Lease tells k of every change, until it is released (which stops k) or
// another keeper replaces k once k has ended. When the previous keeper
// has ended but is still finishing, Keep waits for it ([Keeper.Wait]).
//
// Errors, with k not kept: [ErrRunning] while another keeper of the lease
// runs; [ErrReleased], [ErrLost], [ErrUnknown], or [ErrExpired] (wrapped)
// when the lease is not known to be held now.
func (l *Lease) Keep(k Keeper, margin time.Duration) (sent, validUntil time.Time, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for old := l.k; old != nil; old = l.k {
		if !old.Ended() {
			return time.Time{}, time.Time{}, ErrRunning
		}
		// It ended, and may be finishing (at most StopWait): wait
		// unlocked, since it records what it learns in l.
		l.mu.Unlock()
		old.Wait()
		l.mu.Lock()
		if l.k == old {
			l.k = nil
		}
	}
	switch l.state {
	case StateReleased:
		return time.Time{}, time.Time{}, ErrReleased
	case StateLost:
		return time.Time{}, time.Time{}, ErrLost
	case StateUnknown:
		return time.Time{}, time.Time{}, ErrUnknown
	}
	validUntil, sent = l.validUntil(margin)
	if now := time.Now(); !now.Before(validUntil) {
		return time.Time{}, time.Time{}, fmt.Errorf("%w %v ago", ErrExpired, now.Sub(validUntil))
	}
	l.k = k
	return sent, validUntil, nil
}
