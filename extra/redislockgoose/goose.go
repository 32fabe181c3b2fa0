// Package redislockgoose is a [lock.Locker] of
// [github.com/pressly/goose/v3] over a redislock lock: give it to
// goose.WithLocker, and of the replicas that start together and call
// Provider.Up, one migrates while the others wait, then find the
// migrations applied.
//
// The lock is kept alive while the migrations run. goose has no way to be
// told that its lock was lost: [Locker.Unlock] returns an error matching
// [redislock.ErrLockLost], which Provider.Up returns, and
// [Options.OnLost], given the cancel function of the context passed to
// Up, stops the migrations at once (a migration in a transaction is then
// rolled back).
package redislockgoose

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pressly/goose/v3/lock"

	"github.com/redislock/redislock"
)

// Defaults of [Options].
const (
	DefaultTTL  = 30 * time.Second
	DefaultWait = 10 * time.Minute
)

// releaseTimeout bounds Unlock's release.
const releaseTimeout = 5 * time.Second

// ErrLocked is returned by [Locker.Lock] when the Locker holds its lock
// already (a second Provider sharing it, or an Unlock forgotten).
var ErrLocked = errors.New("redislockgoose: already locked by this Locker")

// ErrNotLocked is returned by [Locker.Unlock] when the Locker holds no lock.
var ErrNotLocked = errors.New("redislockgoose: not locked")

// Options tunes a [Locker]. A nil *Options means all defaults. [New]
// copies what it needs: the value may be changed or shared afterwards.
type Options struct {
	// TTL is the lock's lease, renewed by a keep-alive while the
	// migrations run (every TTL/3 unless KeepAlive.Interval says
	// otherwise): how long the key outlives a process that dies holding
	// it, and so how long the others wait for it then.
	// Default: [DefaultTTL], 30 s.
	TTL time.Duration

	// Wait is how long Lock waits for another process's migrations,
	// unless Lock's context ends first.
	// Default: [DefaultWait], 10 minutes.
	Wait time.Duration

	// Lock gives the other options of the obtain (Metadata, FenceKey,
	// MinReplicas, ReplicaTimeout, RetryStrategy).
	// Default: nil; the wait is redislock.WaitForRelease(nil): a waiter is
	// woken by the release.
	Lock *redislock.Options

	// KeepAlive tunes the keep-alive ([redislock.KeepAliveOptions]). Its
	// MaxHold bounds how long the migrations may hold the lock: reached,
	// it counts as a loss.
	// Default: nil, the keep-alive's defaults.
	KeepAlive *redislock.KeepAliveOptions

	// OnLost, when set, is called once, from a goroutine of the
	// keep-alive, with an error matching [redislock.ErrLockLost], when the
	// lock is lost while held (between Lock and Unlock). Give it the
	// cancel function of the context passed to Provider.Up
	// ([context.CancelCauseFunc] fits): the migrations stop at once.
	// Default: nil, the loss is reported by Unlock only.
	OnLost func(error)
}

// Locker is a [lock.Locker] over the redislock lock of one key. It holds
// at most one lock at a time; its methods are safe for concurrent use.
type Locker struct {
	client *redislock.Client
	key    string
	ttl    time.Duration
	wait   time.Duration
	lock   redislock.Options
	ka     *redislock.KeepAliveOptions
	onLost func(error)

	mu   sync.Mutex
	held *hold // nil between Unlock and Lock
}

// hold is what a Locker holds between Lock and Unlock.
type hold struct {
	lock   *redislock.Lock
	ka     *redislock.KeepAlive
	cancel context.CancelFunc // of the keep-alive's context
	stop   func() bool        // stops the OnLost call; nil without OnLost
	called chan struct{}      // closed when the OnLost call has returned
}

var _ lock.Locker = (*Locker)(nil)

// New returns a Locker of the lock key (on a Redis Cluster, with a
// FenceKey in Options.Lock, both need one hash tag). It sends nothing. It
// returns [redislock.ErrNilClient] for a nil client,
// [redislock.ErrInvalidKey] for an empty key, [redislock.ErrInvalidTTL]
// for a TTL below one millisecond (zero aside), and
// [redislock.ErrInvalidOption] for a negative Wait.
func New(client *redislock.Client, key string, opt *Options) (*Locker, error) {
	var o Options
	if opt != nil {
		o = *opt
	}
	l := &Locker{client: client, key: key, ttl: o.TTL, wait: o.Wait, onLost: o.OnLost}
	if o.Lock != nil {
		l.lock = *o.Lock
	}
	if l.lock.RetryStrategy == nil {
		l.lock.RetryStrategy = redislock.WaitForRelease(nil)
	}
	if o.KeepAlive != nil {
		ka := *o.KeepAlive
		l.ka = &ka
	}
	if l.ttl == 0 {
		l.ttl = DefaultTTL
	}
	if l.wait == 0 {
		l.wait = DefaultWait
	}
	switch {
	case client == nil:
		return nil, redislock.ErrNilClient
	case key == "":
		return nil, fmt.Errorf("%w: empty key", redislock.ErrInvalidKey)
	case l.ttl < time.Millisecond:
		return nil, fmt.Errorf("%w: TTL %v is below 1ms", redislock.ErrInvalidTTL, l.ttl)
	case l.wait < 0:
		return nil, fmt.Errorf("%w: negative Wait (%v)", redislock.ErrInvalidOption, l.wait)
	}
	return l, nil
}

// Lock obtains the lock, waiting while another process holds it, until
// Options.Wait has passed or ctx ends, and keeps it alive until Unlock. db
// is not used. On failure nothing is held: the error matches
// [redislock.ErrNotObtained] when the wait ended (and ctx's error when ctx
// ended it), is [ErrLocked] when the Locker holds its lock already, or is
// the obtain's or the keep-alive's.
func (l *Locker) Lock(ctx context.Context, _ *sql.DB) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held != nil {
		return ErrLocked
	}
	wctx, cancel := context.WithTimeout(ctx, l.wait)
	defer cancel()
	lk, err := l.client.Obtain(wctx, l.key, l.ttl, &l.lock)
	if err != nil {
		return fmt.Errorf("redislockgoose: lock %s: %w", l.key, err)
	}
	ka, err := lk.KeepAlive(l.ttl, l.ka)
	if err != nil {
		return errors.Join(fmt.Errorf("redislockgoose: keep %s alive: %w", l.key, err), release(ctx, lk))
	}
	h := &hold{lock: lk, ka: ka}
	var kctx context.Context
	kctx, h.cancel = ka.Context(context.Background())
	if l.onLost != nil {
		h.called = make(chan struct{})
		h.stop = context.AfterFunc(kctx, func() {
			defer close(h.called)
			if err := context.Cause(kctx); errors.Is(err, redislock.ErrLockLost) {
				l.onLost(err)
			}
		})
	}
	l.held = h
	return nil
}

// Unlock releases the lock that Lock obtained. db is not used. It returns
// an error matching [redislock.ErrLockLost] when the lock was lost since
// Lock, [ErrNotLocked] when the Locker holds none, or the release's error;
// the Locker holds no lock afterwards in every case. It blocks for the
// release (5 s at most, also when ctx has ended) and, when OnLost was
// called, until it has returned.
func (l *Locker) Unlock(ctx context.Context, _ *sql.DB) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.held
	if h == nil {
		return ErrNotLocked
	}
	l.held = nil
	if h.stop != nil && !h.stop() {
		<-h.called // the keep-alive ended (a loss) and OnLost was called
	}
	lost := h.ka.Err() // before the release, which stops the keep-alive
	if !errors.Is(lost, redislock.ErrLockLost) {
		lost = nil
	}
	err := release(ctx, h.lock)
	h.cancel()
	if lost != nil {
		return fmt.Errorf("redislockgoose: %s: %w", l.key, lost) // the release's ErrLockNotHeld says the same
	}
	return err
}

// release releases lock, with a context of its own when ctx has ended.
func release(ctx context.Context, lock *redislock.Lock) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	return lock.Release(rctx)
}
