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

// state is where a lease stands.
type state int

const (
	unknown  state = iota // nothing obtained or renewed it yet
	held                  // sent and ttl say until when
	lost                  // a refresh found the keys gone or taken
	released              // the holder gave it up
)

// Lease is what a holder knows of its keys' expiry. The zero value is a
// lease not known yet (as for a handle attached to keys obtained
// elsewhere). Its methods are safe for concurrent use and never block on
// anything but its mutex, except [Lease.Released], which waits for the
// keep-alive as [KeepAlive.Stop] does. A Lease must not be copied.
type Lease struct {
	mu    sync.Mutex
	state state
	sent  time.Time     // send time of the request that set the lease
	ttl   time.Duration // its TTL, whole milliseconds
	ka    *KeepAlive    // the latest keep-alive, stopped by Released
	wake  chan struct{} // the running keep-alive's: told of every change
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
	if l.state == released {
		return
	}
	l.state, l.sent, l.ttl = held, sent, whole(ttl)
	l.notify()
}

// Sending records that a refresh to ttl is being sent at sent. If it runs,
// even with its reply lost, the keys expire at sent+ttl at the earliest, so
// a lease that ended later shrinks to that. It changes nothing unless the
// lease is held.
func (l *Lease) Sending(sent time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ttl = whole(ttl)
	if l.state == held && sent.Add(ttl).Before(l.sent.Add(l.ttl)) {
		l.sent, l.ttl = sent, ttl
		l.notify()
	}
}

// Renewed records that a refresh sent at sent extended every key to ttl:
// they cannot expire before sent+ttl. A lease not known yet, or lost to a
// refresh sent before this one, becomes held. It changes nothing when a
// later request already set the lease, or once the lease was released.
func (l *Lease) Renewed(sent time.Time, ttl time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == released || (l.state != unknown && sent.Before(l.sent)) {
		return
	}
	l.state, l.sent, l.ttl = held, sent, whole(ttl)
	l.notify()
}

// Lost records that a refresh sent at sent found the keys gone or held by
// another token. A running keep-alive ends at once. It changes nothing when
// a later request already set the lease, or once the lease was released.
func (l *Lease) Lost(sent time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state == released || (l.state != unknown && sent.Before(l.sent)) {
		return
	}
	l.state, l.sent, l.ttl = lost, sent, 0
	l.notify()
}

// Released records that the holder gives the lease up, so that nothing
// renews it again: ValidUntil is zero from now on, KeepAlive returns
// [ErrReleased], and the other events change nothing. It then stops the
// lease's keep-alive, if any, and waits for it as [KeepAlive.Stop] does.
func (l *Lease) Released() {
	l.mu.Lock()
	l.state = released
	ka := l.ka
	l.ka = nil
	l.notify()
	l.mu.Unlock()
	if ka != nil {
		ka.Stop()
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
	if l.state != held {
		return 0
	}
	return l.ttl
}

// validUntil is ValidUntil with l.mu held; it also returns the lease's
// send time.
func (l *Lease) validUntil(margin time.Duration) (time.Time, time.Time) {
	if l.state != held {
		return time.Time{}, time.Time{}
	}
	if margin == 0 {
		margin = DefaultMargin(l.ttl)
	}
	return l.sent.Add(l.ttl - margin), l.sent
}

// notify tells the running keep-alive, if any, that the lease changed.
// l.mu is held.
func (l *Lease) notify() {
	if l.wake == nil {
		return
	}
	select {
	case l.wake <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// KeepAlive starts refreshing the lease with refresh, in a goroutine owned
// by the returned handle, as cfg says (see [Config] and [KeepAlive]). It
// sends nothing itself and does not block, except when the lease's previous
// keep-alive has ended but its goroutine has not exited yet: it then waits
// for that as [KeepAlive.Stop] does, so that at most one keep-alive
// goroutine runs per lease.
//
// Errors, with nothing started: a [*ConfigError] for a cfg that cannot
// work; [ErrRunning] while another keep-alive of the lease runs;
// [ErrReleased], [ErrLost], [ErrUnknown], or [ErrExpired] (wrapped) when
// the lease is not known to be held now.
func (l *Lease) KeepAlive(cfg Config, refresh func(ctx context.Context) error) (*KeepAlive, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for old := l.ka; old != nil && !old.hasExited(); old = l.ka {
		if !old.hasEnded() {
			return nil, ErrRunning
		}
		// It ended, and its goroutine is finishing (at most StopWait):
		// wait unlocked, since it records what it learns in l.
		l.mu.Unlock()
		<-old.exited
		l.mu.Lock()
	}
	switch l.state {
	case released:
		return nil, ErrReleased
	case lost:
		return nil, ErrLost
	case unknown:
		return nil, ErrUnknown
	}
	validUntil, sent := l.validUntil(cfg.Margin)
	if now := time.Now(); !now.Before(validUntil) {
		return nil, fmt.Errorf("%w %v ago", ErrExpired, now.Sub(validUntil))
	}
	l.wake = make(chan struct{}, 1)
	l.ka = start(l, cfg, refresh, l.wake, sent, validUntil)
	return l.ka, nil
}
