// Package redislockcron runs the jobs of a [github.com/robfig/cron/v3]
// scheduler under redislock locks, so that of many replicas that fire the
// same job, one runs it and the others skip that fire.
//
// A [Locker] is one job's lock. [Locker.Job] makes a cron.Job of a
// function that takes a context: the context is cancelled, with an error
// matching [redislock.ErrLockLost] as its cause, when the lock is lost
// while the function runs. [Locker.Wrap] is a cron.JobWrapper for a
// cron.Job as it is; such a job has no context, and learns of a loss only
// through the Logger, after it returns. Each fire obtains the lock (at
// once: it never waits), keeps it alive while the job runs, and releases
// it.
//
// A fast job can still run twice when the replicas fire a little apart (a
// clock or a scheduler behind): the first releases before the second
// fires. [Options.MinHold] keeps the key at least that long after each
// obtain, and [Options.OncePer] takes one key per slot of the schedule
// ([redislock.SlotKey]), held past the slot's end; docs/scheduling.md in
// the redislock repository says when to use which, and what each assumes
// of the clocks.
package redislockcron

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/redislock/redislock"
)

// DefaultTTL is [Options.TTL] when it is zero.
const DefaultTTL = 30 * time.Second

// releaseTimeout bounds the release at the end of a fire.
const releaseTimeout = 5 * time.Second

// Options tunes a [Locker]. A nil *Options means all defaults. [New]
// copies what it needs: the value may be changed or shared afterwards.
type Options struct {
	// TTL is the lock's lease, renewed by a keep-alive while the job
	// runs (every TTL/3 unless KeepAlive.Interval says otherwise): how
	// long the key outlives a process that dies holding it.
	// Default: [DefaultTTL], 30 s.
	TTL time.Duration

	// MinHold keeps the key held for at least this long after each
	// obtain, however soon the job returns ([redislock.Options.MinHold]):
	// a replica that fires the same job up to MinHold later finds that
	// fire taken. Choose it longer than the replicas can be apart, and
	// shorter than the time between two fires less that much, or a
	// replica that fires early for the next one finds it taken too.
	// Default: 0, the key is deleted when the job returns.
	MinHold time.Duration

	// OncePer, when above 0, makes the lock one key per slot of this
	// period ([redislock.SlotKey]: the job's name, a colon and the slot's
	// start) instead of one key for the job, obtained with
	// [redislock.Client.ObtainSlot], which keeps it past the slot's end:
	// the job runs at most once per slot, however far apart the replicas
	// fire within it. Give the schedule's period (an hourly job: one
	// hour), on a schedule whose fires start the slots (UTC multiples of
	// the period, as "0 * * * *" is for an hour). A job that runs longer
	// than its slot does not keep the next slot's fire from running. A
	// process that dies holding the slot's lock leaves the key until its
	// lease ends: the period until the keep-alive's first refresh, the
	// TTL after.
	// Default: 0, one key, the job's name.
	OncePer time.Duration

	// Lock gives the other options of each obtain: Metadata, FenceKey,
	// MinReplicas, ReplicaTimeout. Its MinHold is used when MinHold is
	// zero. Its RetryStrategy must be nil: a fire that waited for the
	// lock would run the job again after another replica ran it.
	// Default: nil.
	Lock *redislock.Options

	// KeepAlive tunes the keep-alive of each fire ([redislock.KeepAliveOptions]).
	// Its MaxHold, the "at most" of a fire, ends the keep-alive and
	// cancels the job's context when it is reached.
	// Default: nil, the keep-alive's defaults.
	KeepAlive *redislock.KeepAliveOptions

	// Logger reports each fire that did not run the job cleanly: a fire
	// skipped because another process holds the lock, at Info ("skip"),
	// and a fire that failed (an obtain that failed, the job's error, a
	// lock lost, a release that failed), at Error. The key-value pairs
	// are "job", the name, and "key", the lock's key.
	// Default: [cron.DefaultLogger] (which prints errors only).
	Logger cron.Logger
}

// Locker runs one job under its lock, at each fire. It keeps no state
// between fires, and is safe for concurrent use: two fires that overlap
// in one process are two obtains, of which one runs.
type Locker struct {
	client  *redislock.Client
	name    string
	ttl     time.Duration
	oncePer time.Duration
	lock    redislock.Options
	ka      *redislock.KeepAliveOptions
	logger  cron.Logger
}

// New returns the Locker of the job name, whose lock is the key name (or,
// with [Options.OncePer], one key per slot, named after it). On a Redis
// Cluster, a name with a FenceKey in Options.Lock needs the fence key's
// hash tag ("{report}"). It sends nothing. It returns
// [redislock.ErrNilClient] for a nil client, [redislock.ErrInvalidKey] for
// an empty name, [redislock.ErrInvalidTTL] for a TTL below one
// millisecond (zero aside), and [redislock.ErrInvalidOption] for a negative
// MinHold, a OncePer below one millisecond (zero aside) or a
// Lock.RetryStrategy.
func New(client *redislock.Client, name string, opt *Options) (*Locker, error) {
	var o Options
	if opt != nil {
		o = *opt
	}
	l := &Locker{client: client, name: name, ttl: o.TTL, oncePer: o.OncePer, logger: o.Logger}
	if o.Lock != nil {
		l.lock = *o.Lock
	}
	if o.KeepAlive != nil {
		ka := *o.KeepAlive
		l.ka = &ka
	}
	if o.MinHold != 0 {
		l.lock.MinHold = o.MinHold
	}
	if l.ttl == 0 {
		l.ttl = DefaultTTL
	}
	if l.logger == nil {
		l.logger = cron.DefaultLogger
	}
	switch {
	case client == nil:
		return nil, redislock.ErrNilClient
	case name == "":
		return nil, fmt.Errorf("%w: empty job name", redislock.ErrInvalidKey)
	case l.ttl < time.Millisecond:
		return nil, fmt.Errorf("%w: TTL %v is below 1ms", redislock.ErrInvalidTTL, l.ttl)
	case l.lock.MinHold < 0:
		return nil, fmt.Errorf("%w: negative MinHold (%v)", redislock.ErrInvalidOption, l.lock.MinHold)
	case l.oncePer < 0 || l.oncePer > 0 && l.oncePer < time.Millisecond:
		return nil, fmt.Errorf("%w: OncePer %v is below 1ms", redislock.ErrInvalidOption, l.oncePer)
	case l.lock.RetryStrategy != nil:
		return nil, fmt.Errorf("%w: a RetryStrategy in Options.Lock: a fire never waits (it would run the job again after another replica ran it)", redislock.ErrInvalidOption)
	}
	return l, nil
}

// Run runs fn once under the lock, as one fire does: it obtains the lock
// (once, without waiting), keeps it alive, calls fn with a context derived
// from ctx that is cancelled when the lock is lost (its cause, from
// [context.Cause], matches [redislock.ErrLockLost]; with
// KeepAliveOptions.MaxHold, also [redislock.ErrMaxHoldReached]) and
// releases the lock when fn returns, or panics (the panic goes on). A
// release before MinHold (with OncePer, before one period past the
// slot's end) leaves the key to expire then.
//
// It returns an error matching [redislock.ErrNotObtained], without calling
// fn, when another process holds the lock: the fire is skipped; an
// obtain's or a keep-alive's error, without calling fn, the lock
// released; and otherwise fn's error, joined with one matching ErrLockLost
// when the lock was lost while fn ran and with the release's error. It
// blocks while fn runs and for the release (5 s at most, also when ctx has
// ended).
func (l *Locker) Run(ctx context.Context, fn func(ctx context.Context) error) error {
	_, _, err := l.run(ctx, fn)
	return err
}

// run is Run, and also says which key it locked (or tried to) and whether
// fn ran.
func (l *Locker) run(ctx context.Context, fn func(ctx context.Context) error) (key string, ran bool, err error) {
	if fn == nil {
		return "", false, fmt.Errorf("%w: nil job", redislock.ErrInvalidOption)
	}
	lock, key, err := l.obtain(ctx)
	if err != nil {
		return key, false, err
	}
	ka, err := lock.KeepAlive(l.ttl, l.ka)
	if err != nil {
		return key, false, errors.Join(err, l.release(ctx, lock))
	}
	jctx, cancel := ka.Context(ctx)
	defer func() {
		cancel()
		lost := ka.Err() // before the release, which stops it
		if !errors.Is(lost, redislock.ErrLockLost) {
			lost = nil
		}
		rerr := l.release(ctx, lock)
		if lost != nil && errors.Is(rerr, redislock.ErrLockNotHeld) {
			rerr = nil // the loss says it
		}
		err = errors.Join(err, lost, rerr)
	}()
	return key, true, fn(jctx)
}

// obtain takes the lock of one fire, and returns its key.
func (l *Locker) obtain(ctx context.Context) (*redislock.Lock, string, error) {
	if l.oncePer == 0 {
		lock, err := l.client.Obtain(ctx, l.name, l.ttl, &l.lock)
		return lock, l.name, err
	}
	// The slot's lock comes with a lease of the period, which the
	// keep-alive renews to the TTL; its release leaves the key past the
	// slot's end. ObtainSlot names the key by the slot its own clock
	// reads: the key to report on a skip, read just before, is the same
	// but at a slot's edge.
	key, _ := redislock.SlotKey(l.name, l.oncePer, time.Now())
	lock, err := l.client.ObtainSlot(ctx, l.name, l.oncePer, &l.lock)
	if err != nil {
		return nil, key, err
	}
	return lock, lock.Key(), nil
}

// release releases lock, with a context of its own when ctx has ended.
func (l *Locker) release(ctx context.Context, lock *redislock.Lock) error {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	return lock.Release(rctx)
}

// Job returns a cron.Job that runs fn under the lock at each fire, as
// [Locker.Run] does with a background context, and reports the outcome to
// the Logger (see [Options.Logger]). fn's context is cancelled when the
// lock is lost: a job that must stop then watches it.
func (l *Locker) Job(fn func(ctx context.Context) error) cron.Job {
	return cron.FuncJob(func() {
		key, ran, err := l.run(context.Background(), fn)
		switch {
		case err == nil:
		case !ran && errors.Is(err, redislock.ErrNotObtained):
			l.logger.Info("skip", "job", l.name, "key", key)
		default:
			l.logger.Error(err, "job failed", "job", l.name, "key", key)
		}
	})
}

// Wrap runs j under the lock at each fire, as [Locker.Job] does: l.Wrap is
// a cron.JobWrapper (cron.NewChain(l.Wrap).Then(j), or cron.WithChain).
// j has no context: a lock lost while it runs does not stop it, and is
// reported to the Logger when it returns. A job that must stop when the
// lock is lost takes a context through Job instead.
func (l *Locker) Wrap(j cron.Job) cron.Job {
	return l.Job(func(context.Context) error {
		j.Run()
		return nil
	})
}
