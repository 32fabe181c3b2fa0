package redislock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeRefresher stands for Redis in the keep-alive's timing tests: each
// refresh records its send time and does what the current mode says.
type fakeRefresher struct {
	mu    sync.Mutex
	mode  string        // "ok", "notheld", "fail" (returns err), "hang" (until ctx ends), "stuck" (until unstuck, ignoring ctx)
	err   error         // for "fail"
	stuck chan struct{} // for "stuck"
	sends []time.Time
}

func newFakeRefresher() *fakeRefresher {
	return &fakeRefresher{mode: "ok", stuck: make(chan struct{})}
}

func (f *fakeRefresher) set(mode string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mode, f.err = mode, err
}

func (f *fakeRefresher) sent() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.sends...)
}

func (f *fakeRefresher) refresh(ctx context.Context) error {
	f.mu.Lock()
	f.sends = append(f.sends, time.Now())
	mode, err := f.mode, f.err
	f.mu.Unlock()
	switch mode {
	case "notheld":
		return ErrNotObtained
	case "fail":
		return err
	case "hang":
		<-ctx.Done()
		return ctx.Err()
	case "stuck":
		<-f.stuck
		return errors.New("i/o timeout")
	}
	return nil
}

// startFake starts a keep-alive of ttl (default options, no jitter unless
// jitter is set) on a lease obtained now for leaseTTL.
func startFake(t *testing.T, f *fakeRefresher, ttl, leaseTTL time.Duration, opt *KeepAliveOptions, jitter bool) *KeepAlive {
	t.Helper()
	cfg, err := opt.config(int64(ttl / time.Millisecond))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if !jitter {
		cfg.jitter = func(time.Duration) time.Duration { return 0 }
	}
	now := time.Now()
	return startKeepAlive(cfg, now, now.Add(leaseTTL-cfg.marginFor(leaseTTL)), f.refresh, nil)
}

// With a 300ms TTL: refreshes every 100ms, a margin of 8ms.
const (
	fakeTTL      = 300 * time.Millisecond
	fakeInterval = 100 * time.Millisecond
	fakeMargin   = 8 * time.Millisecond
)

func TestKeepAliveRefreshSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		start := time.Now()
		k := startFake(t, f, fakeTTL, fakeTTL, nil, false)
		time.Sleep(time.Second + time.Millisecond)
		sends := f.sent()
		if len(sends) != 10 {
			t.Fatalf("%d refreshes in 1s, want 10 (every %v)", len(sends), fakeInterval)
		}
		for i, s := range sends {
			if got, want := s.Sub(start), time.Duration(i+1)*fakeInterval; got != want {
				t.Errorf("refresh %d sent at %v, want %v", i+1, got, want)
			}
		}
		if got, want := k.ValidUntil(), sends[9].Add(fakeTTL-fakeMargin); !got.Equal(want) {
			t.Errorf("ValidUntil = %v after start, want %v (last send + ttl - margin)", got.Sub(start), want.Sub(start))
		}
		if err := k.Err(); err != nil {
			t.Errorf("Err while running = %v, want nil", err)
		}
		k.Stop()
		if err := k.Err(); !errors.Is(err, ErrKeepAliveStopped) {
			t.Errorf("Err after Stop = %v, want ErrKeepAliveStopped", err)
		}
		select {
		case <-k.Done():
		default:
			t.Error("Done not closed after Stop")
		}
		k.Stop() // idempotent
	})
}

func TestKeepAliveJitterOnlyEarlier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		k := startFake(t, f, fakeTTL, fakeTTL, nil, true)
		defer k.Stop()
		time.Sleep(3 * time.Second)
		sends := f.sent()
		if len(sends) < 30 {
			t.Fatalf("%d refreshes in 3s, want at least 30", len(sends))
		}
		for i := 1; i < len(sends); i++ {
			if gap := sends[i].Sub(sends[i-1]); gap > fakeInterval || gap <= fakeInterval-fakeInterval/10 {
				t.Errorf("gap %d = %v, want in (%v, %v]", i, gap, fakeInterval-fakeInterval/10, fakeInterval)
			}
		}
	})
}

// Redis hangs: no reply and no error ever comes back. The loss is signalled
// by the handle's own timer, at sent+ttl-margin of the last successful
// refresh: before the key can expire.
func TestKeepAliveLostWhileRefreshHangs(t *testing.T) {
	for _, mode := range []string{"hang", "stuck"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeRefresher()
				k := startFake(t, f, fakeTTL, fakeTTL, nil, false)
				ctx, cancel := k.Context(context.Background())
				defer cancel()
				time.Sleep(2*fakeInterval + time.Millisecond) // two successful refreshes
				f.set(mode, nil)
				lastOK := f.sent()[1]

				<-k.Done()
				if got, want := time.Since(lastOK), fakeTTL-fakeMargin; got != want {
					t.Errorf("lost %v after the last successful send, want %v (ttl - margin)", got, want)
				}
				err := k.Err()
				if !errors.Is(err, ErrLockLost) || errors.Is(err, ErrNotObtained) || !strings.Contains(err.Error(), "did not answer") {
					t.Errorf("Err = %v, want ErrLockLost saying Redis did not answer", err)
				}
				if cause := context.Cause(ctx); cause != err {
					t.Errorf("context.Cause = %v, want Err() = %v", cause, err)
				}
				if got, want := k.ValidUntil(), lastOK.Add(fakeTTL-fakeMargin); !got.Equal(want) {
					t.Errorf("ValidUntil after loss = %v, want the last lease's end %v", got, want)
				}

				// A refresh that ignores its context (go-redis waiting for
				// a reply) keeps Stop waiting, and only that.
				stopped := make(chan struct{})
				go func() { k.Stop(); close(stopped) }()
				synctest.Wait()
				if mode == "stuck" {
					select {
					case <-stopped:
						t.Fatal("Stop returned while the refresh was still running")
					default:
					}
					close(f.stuck)
					synctest.Wait()
				}
				select {
				case <-stopped:
				default:
					t.Fatal("Stop did not return once the refresh had")
				}
				if !errors.Is(k.Err(), ErrLockLost) {
					t.Errorf("Err after Stop = %v, want the loss to stay", k.Err())
				}
			})
		})
	}
}

// Transient errors are retried, with short backoffs, while the lease lasts.
func TestKeepAliveRetriesTransientErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		k := startFake(t, f, fakeTTL, fakeTTL, nil, false)
		defer k.Stop()
		time.Sleep(fakeInterval + time.Millisecond)
		errTransient := errors.New("connection reset by peer")
		f.set("fail", errTransient)
		time.Sleep(fakeInterval + 20*time.Millisecond) // the refresh at 200ms fails, and its retries
		if err := k.Err(); err != nil {
			t.Fatalf("Err after 20ms of failures = %v, want nil (retrying)", err)
		}
		f.set("ok", nil)
		time.Sleep(fakeInterval / 2)
		if err := k.Err(); err != nil {
			t.Fatalf("Err after recovery = %v, want nil", err)
		}
		sends := f.sent()
		if n := len(sends) - 1; n < 4 {
			t.Errorf("%d attempts after the first refresh, want the failed one and 3 retries at least", n)
		}
		recovered := sends[len(sends)-1]
		if got, want := k.ValidUntil(), recovered.Add(fakeTTL-fakeMargin); !got.Equal(want) {
			t.Errorf("ValidUntil after recovery = %v, want %v", got, want)
		}

		// They never recover: lost at the end of the last lease.
		f.set("fail", errTransient)
		<-k.Done()
		if got, want := time.Since(recovered), fakeTTL-fakeMargin; got != want {
			t.Errorf("lost %v after the last successful send, want %v", got, want)
		}
		if err := k.Err(); !errors.Is(err, ErrLockLost) || !errors.Is(err, errTransient) {
			t.Errorf("Err = %v, want ErrLockLost wrapping the transient error", err)
		}
	})
}

func TestKeepAliveLostWhenNotHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		start := time.Now()
		k := startFake(t, f, fakeTTL, fakeTTL, nil, false)
		defer k.Stop()
		f.set("notheld", nil)
		<-k.Done()
		if got := time.Since(start); got != fakeInterval {
			t.Errorf("lost after %v, want at the first refresh, %v", got, fakeInterval)
		}
		if err := k.Err(); !errors.Is(err, ErrLockLost) || !errors.Is(err, ErrNotObtained) {
			t.Errorf("Err = %v, want ErrLockLost and ErrNotObtained", err)
		}
		if v := k.ValidUntil(); !v.IsZero() {
			t.Errorf("ValidUntil = %v, want zero once the lock is known gone", v)
		}
		if n := len(f.sent()); n != 1 {
			t.Errorf("%d refreshes, want 1: a lost lock is not retried", n)
		}
	})
}

func TestKeepAliveFinalError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		k := startFake(t, f, fakeTTL, fakeTTL, nil, false)
		defer k.Stop()
		noperm := replyErr("NOPERM this user has no permissions to run the 'evalsha' command")
		f.set("fail", noperm)
		<-k.Done()
		if err := k.Err(); !errors.Is(err, ErrLockLost) || !errors.Is(err, noperm) {
			t.Errorf("Err = %v, want ErrLockLost wrapping NOPERM", err)
		}
		if n := len(f.sent()); n != 1 {
			t.Errorf("%d refreshes, want 1: a final error is not retried", n)
		}
	})
}

type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

func TestKeepAliveMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		start := time.Now()
		k := startFake(t, f, fakeTTL, fakeTTL, &KeepAliveOptions{MaxHold: 250 * time.Millisecond}, false)
		defer k.Stop()
		<-k.Done()
		if got := time.Since(start); got != 250*time.Millisecond {
			t.Errorf("ended after %v, want MaxHold, 250ms", got)
		}
		if err := k.Err(); !errors.Is(err, ErrLockLost) || !errors.Is(err, ErrMaxHoldReached) {
			t.Errorf("Err = %v, want ErrLockLost and ErrMaxHoldReached", err)
		}
		// The current lease still stands: the work has until then.
		if got, want := k.ValidUntil(), start.Add(2*fakeInterval+fakeTTL-fakeMargin); !got.Equal(want) {
			t.Errorf("ValidUntil = %v, want %v (the last lease)", got.Sub(start), want.Sub(start))
		}
		time.Sleep(time.Second)
		if n := len(f.sent()); n != 2 {
			t.Errorf("%d refreshes, want 2: none after MaxHold", n)
		}
	})
}

// The lease the keep-alive starts from may be shorter or longer than its
// own refreshes.
func TestKeepAliveFirstLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Obtained for 60ms: refresh at once (due before now), not after
		// 100ms when the lease would long be gone.
		f := newFakeRefresher()
		start := time.Now()
		k := startFake(t, f, fakeTTL, 60*time.Millisecond, nil, false)
		time.Sleep(time.Millisecond)
		if sends := f.sent(); len(sends) != 1 || !sends[0].Equal(start) {
			t.Errorf("sends %v, want one at once", sends)
		}
		k.Stop()

		// Obtained for 10s: the first refresh shortens the lease to 300ms
		// from its send, whether or not its reply comes back.
		f = newFakeRefresher()
		f.set("hang", nil)
		start = time.Now()
		k = startFake(t, f, fakeTTL, 10*time.Second, nil, false)
		defer k.Stop()
		time.Sleep(fakeInterval + time.Millisecond)
		if got, want := k.ValidUntil(), start.Add(fakeInterval+fakeTTL-fakeMargin); !got.Equal(want) {
			t.Errorf("ValidUntil with a refresh in flight = %v, want %v", got.Sub(start), want.Sub(start))
		}
		<-k.Done()
		if got, want := time.Since(start), fakeInterval+fakeTTL-fakeMargin; got != want {
			t.Errorf("lost after %v, want %v", got, want)
		}
	})
}

func TestKeepAliveContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		k := startFake(t, f, fakeTTL, fakeTTL, nil, false)
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := k.Context(parent)
		defer cancel()
		other, cancelOther := k.Context(context.Background())
		cancelOther()
		k.mu.Lock()
		registered := len(k.derived)
		k.mu.Unlock()
		if registered != 1 {
			t.Errorf("%d derived contexts registered after one was cancelled, want 1", registered)
		}
		if context.Cause(other) != context.Canceled {
			t.Errorf("cause of a context cancelled by its CancelFunc = %v, want context.Canceled", context.Cause(other))
		}

		f.set("notheld", nil)
		<-k.Done()
		if ctx.Err() == nil {
			t.Fatal("context not cancelled when Done was closed")
		}
		if context.Cause(ctx) != k.Err() {
			t.Errorf("context.Cause = %v, want Err() = %v", context.Cause(ctx), k.Err())
		}
		late, cancelLate := k.Context(context.Background())
		defer cancelLate()
		if context.Cause(late) != k.Err() {
			t.Errorf("cause of a context taken after the end = %v, want Err()", context.Cause(late))
		}
		cancelParent()
		k.Stop()

		// The parent's cancellation goes through as usual.
		f = newFakeRefresher()
		k = startFake(t, f, fakeTTL, fakeTTL, nil, false)
		defer k.Stop()
		parent, cancelParent = context.WithCancel(context.Background())
		ctx, cancel = k.Context(parent)
		defer cancel()
		cancelParent()
		if !errors.Is(ctx.Err(), context.Canceled) || k.Err() != nil {
			t.Errorf("after the parent's cancel: ctx.Err() = %v, k.Err() = %v; want Canceled, nil", ctx.Err(), k.Err())
		}
	})
}

func TestNilKeepAlive(t *testing.T) {
	var k *KeepAlive
	select {
	case <-k.Done():
	default:
		t.Error("Done of a nil KeepAlive is not closed")
	}
	if !errors.Is(k.Err(), ErrKeepAliveStopped) || !k.ValidUntil().IsZero() {
		t.Errorf("Err, ValidUntil = %v, %v; want ErrKeepAliveStopped, zero", k.Err(), k.ValidUntil())
	}
	ctx, cancel := k.Context(context.Background())
	defer cancel()
	if context.Cause(ctx) != ErrKeepAliveStopped {
		t.Errorf("Context cause = %v, want ErrKeepAliveStopped", context.Cause(ctx))
	}
	k.Stop()
}

func TestKeepAliveOptionsConfig(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		ttl      time.Duration
		opt      *KeepAliveOptions
		interval time.Duration
		margin   time.Duration
		wantErr  error
	}{
		{"nil, 1s", time.Second, nil, 333333333, 22 * ms, nil},
		{"zero fields, 30s", 30 * time.Second, &KeepAliveOptions{}, 10 * time.Second, 602 * ms, nil},
		{"set", time.Second, &KeepAliveOptions{Interval: 500 * ms, Margin: 100 * ms}, 500 * ms, 100 * ms, nil},
		{"smallest default", 4 * ms, nil, 4 * ms / 3, 2*ms + 4*ms/50, nil},
		{"default margin too big", 2 * ms, nil, 0, 0, ErrInvalidOption},
		{"default interval too long", 3 * ms, nil, 0, 0, ErrInvalidOption},
		{"negative interval", time.Second, &KeepAliveOptions{Interval: -1}, 0, 0, ErrInvalidOption},
		{"negative margin", time.Second, &KeepAliveOptions{Margin: -1}, 0, 0, ErrInvalidOption},
		{"negative max hold", time.Second, &KeepAliveOptions{MaxHold: -1}, 0, 0, ErrInvalidOption},
		{"margin = ttl", time.Second, &KeepAliveOptions{Margin: time.Second}, 0, 0, ErrInvalidOption},
		{"interval = ttl - margin", time.Second, &KeepAliveOptions{Interval: 978 * ms}, 0, 0, ErrInvalidOption},
		{"interval just below", time.Second, &KeepAliveOptions{Interval: 977 * ms}, 977 * ms, 22 * ms, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.opt.config(int64(tt.ttl / ms))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if c.interval != tt.interval || c.margin != tt.margin || c.ttl != tt.ttl {
				t.Errorf("interval, margin, ttl = %v, %v, %v; want %v, %v, %v", c.interval, c.margin, c.ttl, tt.interval, tt.margin, tt.ttl)
			}
		})
	}
}

func TestKeepAliveBackoff(t *testing.T) {
	c := keepAliveConfig{interval: 320 * time.Millisecond}
	want := []time.Duration{10, 20, 40, 80, 80, 80}
	for i, w := range want {
		if got := c.backoff(i + 1); got != w*time.Millisecond {
			t.Errorf("backoff(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	c = keepAliveConfig{interval: time.Millisecond}
	if got := c.backoff(1); got != time.Millisecond {
		t.Errorf("backoff(1) with a 1ms interval = %v, want 1ms", got)
	}
	if got := c.backoff(1 << 20); got != time.Millisecond {
		t.Errorf("backoff(1<<20) = %v, want the ceiling", got)
	}
}
