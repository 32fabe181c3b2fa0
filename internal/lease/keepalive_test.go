package lease

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeRefresher is the keep-alive's refresh callback in these timing tests:
// each refresh records its send time and does what the current mode says.
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
		return ErrNotHeld
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

var (
	errTransient = errors.New("connection reset by peer")
	errFinal     = errors.New("NOPERM no permissions")
)

func noJitter(time.Duration) time.Duration { return 0 }

// startFake starts a keep-alive of cfg (TTL fakeTTL unless set, no jitter
// unless set, errTransient transient) on a lease obtained now for leaseTTL.
func startFake(t *testing.T, f *fakeRefresher, leaseTTL time.Duration, cfg Config) (*Lease, *KeepAlive) {
	t.Helper()
	if cfg.TTL == 0 {
		cfg.TTL = fakeTTL
	}
	if cfg.Jitter == nil {
		cfg.Jitter = noJitter
	}
	cfg.Transient = func(err error) bool { return errors.Is(err, errTransient) }
	l := new(Lease)
	l.Obtained(time.Now(), leaseTTL)
	k, err := l.KeepAlive(cfg, f.refresh)
	if err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
	return l, k
}

// With a 300ms TTL: refreshes every 100ms, a margin of 8ms.
const (
	fakeTTL      = 300 * time.Millisecond
	fakeInterval = 100 * time.Millisecond
	fakeMargin   = 8 * time.Millisecond
)

// endOf returns the End that k ended with (Config.Ended unset).
func endOf(t *testing.T, k *KeepAlive) End {
	t.Helper()
	var e End
	if !errors.As(k.Err(), &e) {
		t.Fatalf("Err = %v, want an End", k.Err())
	}
	return e
}

func TestKeepAliveRefreshSchedule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		start := time.Now()
		l, k := startFake(t, f, fakeTTL, Config{})
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
		want := sends[9].Add(fakeTTL - fakeMargin)
		if got := k.ValidUntil(); !got.Equal(want) {
			t.Errorf("ValidUntil = %v after start, want %v (last send + ttl - margin)", got.Sub(start), want.Sub(start))
		}
		if got := l.ValidUntil(0); !got.Equal(want) {
			t.Errorf("the Lease's ValidUntil = %v after start, want the keep-alive's, %v", got.Sub(start), want.Sub(start))
		}
		if err := k.Err(); err != nil {
			t.Errorf("Err while running = %v, want nil", err)
		}
		k.Stop()
		if e := endOf(t, k); e.Reason != Stopped {
			t.Errorf("End after Stop = %+v, want Stopped", e)
		}
		select {
		case <-k.Done():
		default:
			t.Error("Done not closed after Stop")
		}
		k.Stop() // idempotent
		time.Sleep(time.Second)
		if n := len(f.sent()); n != 10 {
			t.Errorf("%d refreshes after Stop, want still 10", n)
		}
	})
}

func TestKeepAliveJitterOnlyEarlier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		_, k := startFake(t, f, fakeTTL, Config{Jitter: randomJitter})
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
// by the keep-alive's own timer at sent+ttl-margin of the last successful
// refresh: the margin (8 ms here, 22 ms for a 1 s TTL) before the key can
// expire on the server.
func TestKeepAliveLostWhileRefreshHangs(t *testing.T) {
	for _, mode := range []string{"hang", "stuck"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFakeRefresher()
				_, k := startFake(t, f, fakeTTL, Config{})
				ctx, cancel := k.Context(context.Background())
				defer cancel()
				time.Sleep(2*fakeInterval + time.Millisecond) // two successful refreshes
				f.set(mode, nil)
				lastOK := f.sent()[1]

				<-k.Done()
				took := time.Since(lastOK)
				if want := fakeTTL - fakeMargin; took != want {
					t.Errorf("lost %v after the last successful send, want %v (ttl - margin)", took, want)
				}
				if took >= fakeTTL {
					t.Errorf("lost %v after the last successful send: not before the key can expire (%v)", took, fakeTTL)
				}
				if e := endOf(t, k); e.Reason != Expired || !e.InFlight || e.Err != nil {
					t.Errorf("End = %+v, want Expired with a refresh in flight", e)
				}
				if cause := context.Cause(ctx); cause != k.Err() {
					t.Errorf("context.Cause = %v, want Err() = %v", cause, k.Err())
				}
				if got, want := k.ValidUntil(), lastOK.Add(fakeTTL-fakeMargin); !got.Equal(want) {
					t.Errorf("ValidUntil after loss = %v, want the last lease's end %v", got, want)
				}

				// A refresh that ignores its context (go-redis waiting for
				// a reply) is left behind StopWait after the loss.
				lossAt := time.Now()
				k.Stop()
				want := time.Duration(0)
				if mode == "stuck" {
					want = StopWait
				}
				if got := time.Since(lossAt); got != want {
					t.Errorf("Stop returned %v after the loss, want %v", got, want)
				}
				close(f.stuck)
				if e := endOf(t, k); e.Reason != Expired {
					t.Errorf("End after Stop = %+v, want the loss to stay", e)
				}
			})
		})
	}
}

// Issue 11, item 12: Stop, while a refresh is waiting for a reply that does
// not come and ignores its context, returns after StopWait, not when the
// refresh does (go-redis's ReadTimeout, 5 s by default).
func TestKeepAliveStopDoesNotWaitForHungRefresh(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		l, k := startFake(t, f, fakeTTL, Config{})
		f.set("stuck", nil)
		time.Sleep(fakeInterval + 10*time.Millisecond) // the refresh at 100ms is stuck
		if n := len(f.sent()); n != 1 {
			t.Fatalf("%d refreshes sent, want 1 in flight", n)
		}
		start := time.Now()
		k.Stop()
		if got := time.Since(start); got != StopWait {
			t.Errorf("Stop took %v with a refresh stuck, want StopWait (%v)", got, StopWait)
		}
		if e := endOf(t, k); e.Reason != Stopped {
			t.Errorf("End = %+v, want Stopped", e)
		}
		// The lease stays the obtain's (the refresh in flight, to the same
		// TTL, could not shorten it).
		if got, want := l.ValidUntil(0), start.Add(-fakeInterval-10*time.Millisecond).Add(fakeTTL-fakeMargin); !got.Equal(want) {
			t.Errorf("ValidUntil after Stop = %v, want %v", got, want)
		}
		// Released does not wait for it either.
		start = time.Now()
		l.Released()
		if got := time.Since(start); got != 0 {
			t.Errorf("Released after Stop took %v, want 0", got)
		}
		close(f.stuck) // the refresh returns; its outcome is ignored
		synctest.Wait()
		if v := l.ValidUntil(0); !v.IsZero() {
			t.Errorf("ValidUntil after Released = %v, want zero", v)
		}
	})
}

// Transient errors are retried, with short backoffs, while the lease lasts.
func TestKeepAliveRetriesTransientErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		_, k := startFake(t, f, fakeTTL, Config{})
		defer k.Stop()
		time.Sleep(fakeInterval + time.Millisecond)
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
		if e := endOf(t, k); e.Reason != Expired || !errors.Is(e.Err, errTransient) {
			t.Errorf("End = %+v, want Expired with the transient error", e)
		}
	})
}

func TestKeepAliveLostWhenNotHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		start := time.Now()
		l, k := startFake(t, f, fakeTTL, Config{})
		defer k.Stop()
		f.set("notheld", nil)
		<-k.Done()
		if got := time.Since(start); got != fakeInterval {
			t.Errorf("lost after %v, want at the first refresh, %v", got, fakeInterval)
		}
		if e := endOf(t, k); e.Reason != NotHeld {
			t.Errorf("End = %+v, want NotHeld", e)
		}
		if v := k.ValidUntil(); !v.IsZero() {
			t.Errorf("ValidUntil = %v, want zero once the lease is known lost", v)
		}
		if n := len(f.sent()); n != 1 {
			t.Errorf("%d refreshes, want 1: a lost lease is not retried", n)
		}
		if _, err := l.KeepAlive(Config{TTL: fakeTTL}, f.refresh); !errors.Is(err, ErrLost) {
			t.Errorf("KeepAlive of the lost lease = %v, want ErrLost", err)
		}
	})
}

func TestKeepAliveFinalError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		_, k := startFake(t, f, fakeTTL, Config{})
		defer k.Stop()
		f.set("fail", errFinal)
		<-k.Done()
		if e := endOf(t, k); e.Reason != Failed || e.Err != errFinal {
			t.Errorf("End = %+v, want Failed with the error", e)
		}
		if n := len(f.sent()); n != 1 {
			t.Errorf("%d refreshes, want 1: a final error is not retried", n)
		}
	})
}

func TestKeepAliveMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		start := time.Now()
		_, k := startFake(t, f, fakeTTL, Config{MaxHold: 250 * time.Millisecond})
		defer k.Stop()
		<-k.Done()
		if got := time.Since(start); got != 250*time.Millisecond {
			t.Errorf("ended after %v, want MaxHold, 250ms", got)
		}
		if e := endOf(t, k); e.Reason != MaxHoldReached || e.MaxHold != 250*time.Millisecond {
			t.Errorf("End = %+v, want MaxHoldReached", e)
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
		_, k := startFake(t, f, 60*time.Millisecond, Config{})
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
		_, k = startFake(t, f, 10*time.Second, Config{})
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

// The holder's own refreshes, made beside the keep-alive, are one with its
// own: the keep-alive follows the lease they set.
func TestKeepAliveFollowsTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A refresh of the holder's own finds the keys gone: the
		// keep-alive ends at once, not at its next refresh.
		f := newFakeRefresher()
		l, k := startFake(t, f, fakeTTL, Config{})
		time.Sleep(10 * time.Millisecond)
		l.Lost(time.Now())
		synctest.Wait()
		select {
		case <-k.Done():
		default:
			t.Fatal("keep-alive still running after the lease was marked lost")
		}
		if e := endOf(t, k); e.Reason != NotHeld {
			t.Errorf("End = %+v, want NotHeld", e)
		}

		// Refreshes of its own keep failing; one of the holder's renews
		// the lease: no loss at the old lease's end.
		f = newFakeRefresher()
		f.set("fail", errTransient)
		start := time.Now()
		l, k = startFake(t, f, fakeTTL, Config{})
		defer k.Stop()
		time.Sleep(200 * time.Millisecond)
		l.Renewed(time.Now(), fakeTTL)
		time.Sleep(fakeInterval) // past the first lease's end
		if err := k.Err(); err != nil {
			t.Fatalf("Err = %v after the holder renewed the lease, want nil", err)
		}
		<-k.Done()
		if got, want := time.Since(start), 200*time.Millisecond+fakeTTL-fakeMargin; got != want {
			t.Errorf("lost after %v, want at the end of the renewed lease, %v", got, want)
		}
	})
}

// A refresh of the holder's own with a shorter TTL shortens the lease: the
// keep-alive refreshes sooner, so as to keep the lock.
func TestKeepAliveFollowsAShorterLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		l, k := startFake(t, f, fakeTTL, Config{})
		defer k.Stop()
		time.Sleep(10 * time.Millisecond)
		short := time.Now()
		l.Sending(short, 50*time.Millisecond)
		l.Renewed(short, 50*time.Millisecond)
		time.Sleep(time.Millisecond)
		if sends := f.sent(); len(sends) != 1 || !sends[0].Equal(short) {
			t.Fatalf("refreshes sent at %v, want one at once when the lease shortened", sends)
		}
		time.Sleep(time.Second)
		if err := k.Err(); err != nil {
			t.Fatalf("Err = %v, want nil: the keep-alive kept the lock", err)
		}
		if got, want := k.ValidUntil(), f.sent()[len(f.sent())-1].Add(fakeTTL-fakeMargin); !got.Equal(want) {
			t.Errorf("ValidUntil = %v, want its own last lease's end %v", got, want)
		}
	})
}

func TestKeepAliveContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		_, k := startFake(t, f, fakeTTL, Config{})
		parent, cancelParent := context.WithCancel(context.Background())
		ctx, cancel := k.Context(parent)
		defer cancel()
		other, cancelOther := k.Context(context.Background())
		cancelOther()
		k.sig.mu.Lock()
		registered := len(k.sig.derived)
		k.sig.mu.Unlock()
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
		_, k = startFake(t, f, fakeTTL, Config{})
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

// Config.Ended builds the error: Err and every context's cause are that
// one value.
func TestKeepAliveEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mine := errors.New("mine")
		var got []End
		f := newFakeRefresher()
		l := new(Lease)
		l.Obtained(time.Now(), fakeTTL)
		k, err := l.KeepAlive(Config{TTL: fakeTTL, Ended: func(e End) error { got = append(got, e); return mine }}, f.refresh)
		if err != nil {
			t.Fatalf("KeepAlive: %v", err)
		}
		ctx, cancel := k.Context(context.Background())
		defer cancel()
		f.set("notheld", nil)
		<-k.Done()
		k.Stop()
		if len(got) != 1 || got[0].Reason != NotHeld {
			t.Errorf("Ended called with %+v, want once with NotHeld", got)
		}
		if k.Err() != mine || context.Cause(ctx) != mine {
			t.Errorf("Err, cause = %v, %v; want Ended's error", k.Err(), context.Cause(ctx))
		}
	})
}
