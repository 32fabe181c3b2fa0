package redislock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redislock/redislock/internal/election"
)

// Leadership is a campaigner's leadership of an election, from
// [Election.Campaign], kept alive by a [KeepAlive] of its own until
// [Leadership.Resign]. Its loss is signalled before another campaigner can
// be elected, as long as the clocks behave (see [KeepAliveOptions.Margin]):
// [Leadership.Done] is closed and [Leadership.Context] cancelled. Pass
// [Leadership.Term] to the resources the leader writes: refusing writes
// with a lower term than the highest seen makes a deposed leader harmless.
//
// Its methods are safe for concurrent use and accept a nil *Leadership (it
// behaves as one that has ended).
type Leadership struct {
	election  *Election
	lock      *Lock
	keepAlive *KeepAlive

	mu       sync.Mutex // serialises Proclaim and Resign
	value    string
	resigned bool // a Resign ended the leadership
}

// Term returns the leadership's term, the fence token of its election key:
// greater than every earlier leadership's (0 for a nil Leadership).
func (l *Leadership) Term() int64 { return l.locked().FenceToken() }

// Value returns the value the leader was elected with, or the last one
// proclaimed ("" for a nil Leadership).
func (l *Leadership) Value() string {
	if l == nil {
		return ""
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.value
}

// Token returns the token of the leadership's lock ("" for a nil Leadership).
func (l *Leadership) Token() string { return l.locked().Token() }

// Done returns a channel that is closed when the leadership ends, lost or
// resigned ([Leadership.Err] says which); a nil Leadership's is closed.
func (l *Leadership) Done() <-chan struct{} { return l.kept().Done() }

// Err returns nil while the leadership lasts; once Done is closed, as
// [KeepAlive.Err]: an error matching [ErrLockLost] when it was lost, or
// [ErrKeepAliveStopped] after [Leadership.Resign] (and for a nil Leadership).
func (l *Leadership) Err() error { return l.kept().Err() }

// Context returns a context derived from parent, cancelled with cause
// [Leadership.Err] when the leadership ends, as [KeepAlive.Context] does;
// call the CancelFunc when done. parent must not be nil.
func (l *Leadership) Context(parent context.Context) (context.Context, context.CancelFunc) {
	return l.kept().Context(parent)
}

// ValidUntil returns the time until which the leadership is certainly held
// (see [KeepAlive.ValidUntil]); the zero Time for a nil Leadership.
func (l *Leadership) ValidUntil() time.Time { return l.kept().ValidUntil() }

// locked and kept return nil for a nil Leadership, whose methods then
// behave as those of a nil *Lock or *KeepAlive.
func (l *Leadership) locked() *Lock {
	if l == nil {
		return nil
	}
	return l.lock
}

func (l *Leadership) kept() *KeepAlive {
	if l == nil {
		return nil
	}
	return l.keepAlive
}

// Proclaim changes the leader's value to value, keeping its term, and tells
// the observers ([Election.Observe]), blocking for one round trip; calls of
// one Leadership run one at a time. When the leadership is known to have
// ended it returns [ErrNotLeader] (matching [ErrLockLost] too when it was
// lost) and sends nothing; when Redis finds the key gone or taken, it marks
// the leadership lost (Done is closed) and returns the same. A Redis error
// is returned as it is; the value may then have changed on Redis or not
// ([Leadership.Value] keeps the old one). A nil ctx gives [ErrNilContext].
func (l *Leadership) Proclaim(ctx context.Context, value string) error {
	if l == nil {
		return ErrNotLeader
	}
	if err := checkCall(ctx, l.election.client.client); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ka := l.keepAlive
	if err := election.CannotProclaim(l.resigned, ka.Err(), ka.ValidUntil(), ErrLockLost); err != nil {
		return fmt.Errorf("%w: %w", ErrNotLeader, err)
	}
	e, sent := l.election, time.Now()
	held, err := election.Proclaim(ctx, electionProclaimScript, e.client.client, e.name, e.channel,
		l.lock.held().tokenArg(), value, e.sharded)
	if err != nil {
		return err
	}
	if !held {
		l.lock.lease.Lost(sent)
		return fmt.Errorf("%w: %w: the election key is gone or held by another", ErrNotLeader, ErrLockLost)
	}
	l.value = value
	return nil
}

// Resign ends the leadership, whatever the outcome: it stops the
// keep-alive (see [Leadership.Err]) before it sends anything, then releases
// the election key as [Lock.Release] does, handing it to the
// longest-waiting campaigner, and tells the observers.
//
// It returns nil once the key is released, and on every later call;
// [ErrLockNotHeld] when the leadership had been lost before (the key
// expired or was taken; later calls return nil); a Redis error as it is,
// the key then expiring after its TTL unless a later Resign releases it;
// [ErrNilContext] for a nil ctx. When ctx has already ended, Resign still
// runs, for 5 s at most, as [Lock.Release] does.
func (l *Leadership) Resign(ctx context.Context) error {
	if l == nil {
		return nil
	}
	if ctx == nil {
		return ErrNilContext
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.resigned {
		return nil
	}
	ctx, cancel := election.Detach(ctx, releaseTimeout)
	defer cancel()
	err := l.lock.Release(ctx)
	if err != nil && !errors.Is(err, ErrLockNotHeld) {
		return err
	}
	l.resigned = true
	if err != nil {
		return err // ErrLockNotHeld: lost before
	}
	e := l.election
	election.Resigned(ctx, electionResignedScript, e.client.client, e.channel, l.Term(), e.sharded)
	return nil
}
