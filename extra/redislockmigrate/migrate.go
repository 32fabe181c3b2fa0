// Package redislockmigrate wraps a [github.com/golang-migrate/migrate/v4]
// database driver so that its Lock and Unlock also take and release a
// redislock lock: of the replicas that start together and migrate one
// database, one migrates while the others wait, then find the migrations
// applied (migrate.ErrNoChange). Give the wrapped driver to
// migrate.NewWithInstance or migrate.NewWithDatabaseInstance.
//
// The lock is kept alive while the migrations run. A database driver runs
// a migration without a context, so a migration already running when the
// lock is lost finishes; the next Run, SetVersion or Drop fails with an
// error matching [redislock.ErrLockLost] (migrate stops there, the version
// left dirty when a migration had begun), and [Options.OnLost] is told at
// once.
//
// migrate gives a driver's Lock Migrate.LockTimeout (15 s by default) and
// then stops waiting for it, leaving it running: keep [Options.Wait] below
// it, or a lock obtained after migrate gave up is held, kept alive, until
// the driver is closed.
package redislockmigrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/golang-migrate/migrate/v4/database"

	"github.com/redislock/redislock"
)

// Defaults of [Options].
const (
	DefaultTTL  = 30 * time.Second
	DefaultWait = 10 * time.Second
)

// releaseTimeout bounds the release in Unlock and Close.
const releaseTimeout = 5 * time.Second

// Options tunes a [Driver]. A nil *Options means all defaults. [Wrap]
// copies what it needs: the value may be changed or shared afterwards.
type Options struct {
	// TTL is the lock's lease, renewed by a keep-alive while the
	// migrations run (every TTL/3 unless KeepAlive.Interval says
	// otherwise): how long the key outlives a process that dies holding
	// it, and so how long the others wait for it then.
	// Default: [DefaultTTL], 30 s.
	TTL time.Duration

	// Wait is how long Lock waits for another process's migrations. Keep
	// it below Migrate.LockTimeout (see the package documentation); to
	// wait longer, raise both.
	// Default: [DefaultWait], 10 s (migrate's own default LockTimeout is
	// 15 s).
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
	// lock is lost while held (between Lock and Unlock); send true on
	// Migrate.GracefulStop, say. It must not call the Driver's methods.
	// Default: nil, the loss is reported by the Driver's methods only.
	OnLost func(error)
}

// config is what a Driver and the drivers its Open returns share.
type config struct {
	client *redislock.Client
	key    string
	ttl    time.Duration
	wait   time.Duration
	lock   redislock.Options
	ka     *redislock.KeepAliveOptions
	onLost func(error)
}

// Driver is a [database.Driver] whose Lock also obtains a redislock lock,
// and whose Unlock releases it; its other methods are the wrapped
// driver's, but for a lost lock (see the package documentation). It holds
// at most one lock at a time; its methods are safe for concurrent use.
type Driver struct {
	inner database.Driver
	cfg   *config

	mu   sync.Mutex
	held *hold // nil outside Lock … Unlock
}

// hold is what a Driver holds between Lock and Unlock.
type hold struct {
	lock     *redislock.Lock
	ka       *redislock.KeepAlive
	cancel   context.CancelFunc // of the keep-alive's context
	stop     func() bool        // stops the OnLost call; nil without OnLost
	called   chan struct{}      // closed when the OnLost call has returned
	reported bool               // a method has returned the loss
}

var _ database.Driver = (*Driver)(nil)

// Wrap returns inner with its Lock and Unlock over the redislock lock key
// (on a Redis Cluster, with a FenceKey in Options.Lock, both need one
// hash tag). It sends nothing. It returns an error for a nil inner,
// [redislock.ErrNilClient] for a nil client, [redislock.ErrInvalidKey] for
// an empty key, [redislock.ErrInvalidTTL] for a TTL below one millisecond
// (zero aside), and [redislock.ErrInvalidOption] for a negative Wait.
func Wrap(inner database.Driver, client *redislock.Client, key string, opt *Options) (*Driver, error) {
	var o Options
	if opt != nil {
		o = *opt
	}
	c := &config{client: client, key: key, ttl: o.TTL, wait: o.Wait, onLost: o.OnLost}
	if o.Lock != nil {
		c.lock = *o.Lock
	}
	if c.lock.RetryStrategy == nil {
		c.lock.RetryStrategy = redislock.WaitForRelease(nil)
	}
	if o.KeepAlive != nil {
		ka := *o.KeepAlive
		c.ka = &ka
	}
	if c.ttl == 0 {
		c.ttl = DefaultTTL
	}
	if c.wait == 0 {
		c.wait = DefaultWait
	}
	switch {
	case inner == nil:
		return nil, fmt.Errorf("%w: nil database driver", redislock.ErrInvalidOption)
	case client == nil:
		return nil, redislock.ErrNilClient
	case key == "":
		return nil, fmt.Errorf("%w: empty key", redislock.ErrInvalidKey)
	case c.ttl < time.Millisecond:
		return nil, fmt.Errorf("%w: TTL %v is below 1ms", redislock.ErrInvalidTTL, c.ttl)
	case c.wait < 0:
		return nil, fmt.Errorf("%w: negative Wait (%v)", redislock.ErrInvalidOption, c.wait)
	}
	return &Driver{inner: inner, cfg: c}, nil
}

// Open opens the wrapped driver's url (database.Driver.Open) and returns
// it wrapped the same way, over the same key.
func (d *Driver) Open(url string) (database.Driver, error) {
	inner, err := d.inner.Open(url)
	if err != nil {
		return nil, err
	}
	return &Driver{inner: inner, cfg: d.cfg}, nil
}

// Close releases the lock if the Driver holds one, then closes the
// wrapped driver. It returns the errors of both.
func (d *Driver) Close() error {
	d.mu.Lock()
	h := d.held
	d.held = nil
	d.mu.Unlock()
	var err error
	if h != nil {
		_, err = h.end()
	}
	return errors.Join(err, d.inner.Close())
}

// Lock obtains the lock, waiting while another process holds it, for
// Options.Wait at most, keeps it alive, then locks the wrapped driver. On
// failure nothing is held: the error matches [database.ErrLocked] when the
// Driver holds its lock already, or when the wait ended (it then also
// matches [redislock.ErrNotObtained]), or is the obtain's, the
// keep-alive's or the wrapped driver's.
func (d *Driver) Lock() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held != nil {
		return database.ErrLocked
	}
	c := d.cfg
	ctx, cancel := context.WithTimeout(context.Background(), c.wait)
	defer cancel()
	lk, err := c.client.Obtain(ctx, c.key, c.ttl, &c.lock)
	if errors.Is(err, redislock.ErrNotObtained) {
		return fmt.Errorf("%w: %s: %w", database.ErrLocked, c.key, err)
	} else if err != nil {
		return fmt.Errorf("redislockmigrate: lock %s: %w", c.key, err)
	}
	ka, err := lk.KeepAlive(c.ttl, c.ka)
	if err != nil {
		return errors.Join(fmt.Errorf("redislockmigrate: keep %s alive: %w", c.key, err), release(lk))
	}
	h := &hold{lock: lk, ka: ka}
	var kctx context.Context
	kctx, h.cancel = ka.Context(context.Background())
	if c.onLost != nil {
		h.called = make(chan struct{})
		h.stop = context.AfterFunc(kctx, func() {
			defer close(h.called)
			if err := context.Cause(kctx); errors.Is(err, redislock.ErrLockLost) {
				c.onLost(err)
			}
		})
	}
	if err := d.inner.Lock(); err != nil {
		_, rerr := h.end()
		return errors.Join(err, rerr)
	}
	d.held = h
	return nil
}

// Unlock unlocks the wrapped driver, then releases the lock. The Driver
// holds no lock afterwards, whatever it returns: the wrapped driver's
// error, the release's, or one matching [redislock.ErrLockLost] when the
// lock was lost and no method has returned that yet. It returns
// [database.ErrNotLocked] when the Driver holds no lock.
func (d *Driver) Unlock() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	h := d.held
	if h == nil {
		return database.ErrNotLocked
	}
	d.held = nil
	err := d.inner.Unlock()
	lost, rerr := h.end()
	if lost != nil {
		if !h.reported {
			err = errors.Join(err, d.lostError(lost))
		}
		rerr = nil // ErrLockNotHeld: the loss says it
	}
	return errors.Join(err, rerr)
}

// end stops the OnLost call (or waits for it), releases the lock and
// returns the loss, if the lock was lost, and the release's error.
func (h *hold) end() (lost, err error) {
	if h.stop != nil && !h.stop() {
		<-h.called
	}
	if lost = h.ka.Err(); !errors.Is(lost, redislock.ErrLockLost) {
		lost = nil
	}
	err = release(h.lock)
	h.cancel()
	return lost, err
}

// check returns the loss of the lock the Driver holds, once lost, and
// marks it reported.
func (d *Driver) check() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held == nil {
		return nil
	}
	err := d.held.ka.Err()
	if !errors.Is(err, redislock.ErrLockLost) {
		return nil
	}
	d.held.reported = true
	return d.lostError(err)
}

func (d *Driver) lostError(err error) error {
	return fmt.Errorf("redislockmigrate: %s: %w", d.cfg.key, err)
}

// Run runs migration with the wrapped driver, unless the lock the Driver
// holds is lost: it then returns an error matching [redislock.ErrLockLost]
// and runs nothing.
func (d *Driver) Run(migration io.Reader) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.inner.Run(migration)
}

// SetVersion sets the version with the wrapped driver, unless the lock the
// Driver holds is lost: it then returns an error matching
// [redislock.ErrLockLost] and changes nothing.
func (d *Driver) SetVersion(version int, dirty bool) error {
	if err := d.check(); err != nil {
		return err
	}
	return d.inner.SetVersion(version, dirty)
}

// Version returns the wrapped driver's version.
func (d *Driver) Version() (version int, dirty bool, err error) {
	return d.inner.Version()
}

// Drop drops everything with the wrapped driver, unless the lock the Driver
// holds is lost: it then returns an error matching [redislock.ErrLockLost]
// and drops nothing.
func (d *Driver) Drop() error {
	if err := d.check(); err != nil {
		return err
	}
	return d.inner.Drop()
}

// release releases lock, bounded by releaseTimeout.
func release(lock *redislock.Lock) error {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	return lock.Release(ctx)
}
