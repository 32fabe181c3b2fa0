package redislockcron_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockcron"
	"github.com/redislock/redislock/internal/redistest"
)

// waitTimeout bounds every wait for something the test caused: far above
// what it takes, so that a hang fails the test rather than the binary.
const waitTimeout = 20 * time.Second

func newLocker(t *testing.T, c *redislock.Client, name string, opt *redislockcron.Options) *redislockcron.Locker {
	t.Helper()
	l, err := redislockcron.New(c, name, opt)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return l
}

// A fire finds the job's key held by another process: fn is not called and
// Run's error matches ErrNotObtained; through Job, the Logger is told of a
// skip, and of no error.
func TestRunSkipsHeld(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	name := redistest.Key(t, "job")
	other, err := c.Obtain(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	defer other.Release(ctx)
	log := &logger{}
	l := newLocker(t, c, name, &redislockcron.Options{Logger: log})
	ran := 0
	job := func(context.Context) error { ran++; return nil }
	if err := l.Run(ctx, job); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Run on a held key = %v, want ErrNotObtained", err)
	}
	l.Job(job).Run()
	cron.NewChain(l.Wrap).Then(cron.FuncJob(func() { ran++ })).Run()
	if ran != 0 {
		t.Errorf("the job ran %d times while another held its key", ran)
	}
	if skips, errs := log.counts(); skips != 2 || len(errs) != 0 {
		t.Errorf("logged %d skips and errors %v, want 2 skips and no error", skips, errs)
	}
}

// A job that returns at once leaves its key held for MinHold after the
// obtain, with its token, and a second fire meanwhile is skipped; without
// MinHold the key is gone when the job returns.
func TestRunMinHold(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	name := redistest.Key(t, "job")
	const hold = 5 * time.Second
	l := newLocker(t, c, name, &redislockcron.Options{MinHold: hold})
	var token string
	if err := l.Run(ctx, func(context.Context) error {
		token = rdb.Get(ctx, name).Val()
		return nil
	}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := rdb.Get(ctx, name).Val(); got == "" || got != token {
		t.Fatalf("after the job the key holds %q, want the job's value %q", got, token)
	}
	if ms := rdb.PTTL(ctx, name).Val(); ms <= 0 || ms > hold {
		t.Errorf("after the job the key's TTL is %v, want (0, %v]", ms, hold)
	}
	if err := l.Run(ctx, func(context.Context) error { return errors.New("ran") }); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("second fire within MinHold = %v, want ErrNotObtained", err)
	}

	plain := newLocker(t, c, redistest.Key(t, "plain"), nil)
	if err := plain.Run(ctx, func(context.Context) error { return nil }); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if n := rdb.Exists(ctx, redistest.Key(t, "plain")).Val(); n != 0 {
		t.Error("without MinHold the key is left after the job")
	}
}

// With OncePer, the key is the slot's (redislock.SlotKey), left after the
// job past the slot's end: a second fire in the slot is skipped.
func TestRunOncePer(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	name := redistest.Key(t, "{job}")
	l := newLocker(t, c, name, &redislockcron.Options{OncePer: time.Hour})
	var key string
	if err := l.Run(ctx, func(context.Context) error {
		key, _ = redislock.SlotKey(name, time.Hour, time.Now())
		return nil
	}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	_, end := redislock.SlotKey(name, time.Hour, time.Now())
	ms := rdb.PTTL(ctx, key).Val()
	if ms <= 0 || time.Now().Add(ms).Before(end) {
		t.Errorf("after the job the slot's key %s has a TTL of %v, want it past the slot's end %v", key, ms, end)
	}
	if err := l.Run(ctx, func(context.Context) error { return errors.New("ran") }); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("second fire in the slot = %v, want ErrNotObtained", err)
	}
}

// A slot's lock comes with a lease of the period (1 s here), shorter than
// the TTL: the keep-alive renews it in time for a job that outlives it.
func TestRunOncePerOutlivesLease(t *testing.T) {
	rdb := redistest.Standalone(t)
	l := newLocker(t, redislock.New(rdb), redistest.Key(t, "{job}"), &redislockcron.Options{OncePer: time.Second})
	err := l.Run(context.Background(), func(ctx context.Context) error {
		select {
		case <-time.After(2500 * time.Millisecond): // the job's work
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	})
	if err != nil {
		t.Errorf("Run of a job longer than its slot's lease = %v, want nil", err)
	}
}

// A lock lost while the job runs (its key deleted) cancels the job's
// context with a cause matching ErrLockLost, and Run returns an error
// that matches it, beside the job's own; through Job the Logger gets it.
func TestRunLockLost(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	name := redistest.Key(t, "job")
	log := &logger{}
	// A short TTL: the keep-alive refreshes every 100 ms, and finds the
	// key gone at the first refresh after the delete.
	l := newLocker(t, c, name, &redislockcron.Options{TTL: 300 * time.Millisecond, Logger: log})
	errJob := errors.New("job stopped")
	var cause error
	job := func(ctx context.Context) error {
		if err := rdb.Del(ctx, name).Err(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(waitTimeout):
		}
		return errJob
	}
	err := l.Run(ctx, job)
	if !errors.Is(cause, redislock.ErrLockLost) {
		t.Errorf("the job's context ended with %v, want a cause matching ErrLockLost", cause)
	}
	if !errors.Is(err, redislock.ErrLockLost) || !errors.Is(err, errJob) {
		t.Errorf("Run = %v, want the job's error and one matching ErrLockLost", err)
	}

	l.Job(job).Run()
	if skips, errs := log.counts(); skips != 0 || len(errs) != 1 || !errors.Is(errs[0], redislock.ErrLockLost) {
		t.Errorf("Job logged %d skips and errors %v, want one error matching ErrLockLost", skips, errs)
	}
}

// KeepAlive.MaxHold is the "at most" of a fire: the job's context ends
// when it is reached, with a cause matching ErrMaxHoldReached.
func TestRunMaxHold(t *testing.T) {
	rdb := redistest.Standalone(t)
	c := redislock.New(rdb)
	l := newLocker(t, c, redistest.Key(t, "job"), &redislockcron.Options{KeepAlive: &redislock.KeepAliveOptions{MaxHold: 200 * time.Millisecond}})
	var cause error
	err := l.Run(context.Background(), func(ctx context.Context) error {
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(waitTimeout):
		}
		return nil
	})
	if !errors.Is(cause, redislock.ErrMaxHoldReached) || !errors.Is(err, redislock.ErrMaxHoldReached) {
		t.Errorf("job's context ended with %v, Run = %v; want both to match ErrMaxHoldReached", cause, err)
	}
}

// A job that panics has its lock released on the way out; the panic goes on.
func TestRunPanic(t *testing.T) {
	rdb := redistest.Standalone(t)
	c := redislock.New(rdb)
	name := redistest.Key(t, "job")
	l := newLocker(t, c, name, nil)
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Errorf("recovered %v, want the job's panic", r)
			}
		}()
		_ = l.Run(context.Background(), func(context.Context) error { panic("boom") })
	}()
	if n := rdb.Exists(context.Background(), name).Val(); n != 0 {
		t.Error("the key of a job that panicked is still held")
	}
}

// Wrap runs a plain cron.Job under the lock; the lock is held while it runs.
func TestWrap(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	name := redistest.Key(t, "job")
	log := &logger{}
	l := newLocker(t, c, name, &redislockcron.Options{Logger: log})
	held := false
	cron.NewChain(l.Wrap).Then(cron.FuncJob(func() {
		held = rdb.Exists(ctx, name).Val() == 1
	})).Run()
	if !held {
		t.Error("the wrapped job ran without its key held")
	}
	if skips, errs := log.counts(); skips != 0 || len(errs) != 0 {
		t.Errorf("logged %d skips and errors %v, want none", skips, errs)
	}
}

// Bad options fail New before anything is sent.
func TestNewInvalid(t *testing.T) {
	c := redislock.New(redistest.Standalone(t))
	for _, tc := range []struct {
		name   string
		client *redislock.Client
		job    string
		opt    *redislockcron.Options
		want   error
	}{
		{"nil client", nil, "job", nil, redislock.ErrNilClient},
		{"empty name", c, "", nil, redislock.ErrInvalidKey},
		{"negative TTL", c, "job", &redislockcron.Options{TTL: -time.Second}, redislock.ErrInvalidTTL},
		{"TTL below 1ms", c, "job", &redislockcron.Options{TTL: time.Microsecond}, redislock.ErrInvalidTTL},
		{"negative MinHold", c, "job", &redislockcron.Options{MinHold: -time.Second}, redislock.ErrInvalidOption},
		{"negative Lock.MinHold", c, "job", &redislockcron.Options{Lock: &redislock.Options{MinHold: -time.Second}}, redislock.ErrInvalidOption},
		{"OncePer below 1ms", c, "job", &redislockcron.Options{OncePer: time.Microsecond}, redislock.ErrInvalidOption},
		{"negative OncePer", c, "job", &redislockcron.Options{OncePer: -time.Hour}, redislock.ErrInvalidOption},
		{"RetryStrategy", c, "job", &redislockcron.Options{Lock: &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Second)}}, redislock.ErrInvalidOption},
	} {
		if l, err := redislockcron.New(tc.client, tc.job, tc.opt); !errors.Is(err, tc.want) || l != nil {
			t.Errorf("%s: New = %v, %v; want nil, %v", tc.name, l, err, tc.want)
		}
	}
	l := newLocker(t, c, "job", nil)
	if err := l.Run(context.Background(), nil); !errors.Is(err, redislock.ErrInvalidOption) {
		t.Errorf("Run(nil) = %v, want ErrInvalidOption", err)
	}
}
