package redislock

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redislock/redislock/internal/lease"
)

// refreshFunc is a refresh callback that stands for Redis in these tests:
// the keep-alive's timing is internal/lease's and tested there; here, what
// the root package makes of it.
type refreshFunc func(ctx context.Context) error

// keepFake starts, through keepLease, a keep-alive of ttl on a lease
// obtained now for ttl, refreshing with refresh.
func keepFake(t *testing.T, ttl time.Duration, opt *KeepAliveOptions, refresh refreshFunc) (*lease.Lease, *KeepAlive) {
	t.Helper()
	ls := new(lease.Lease)
	ls.Obtained(time.Now(), ttl)
	k, err := keepLease(ls, ttl, opt, refresh, nil)
	if err != nil {
		t.Fatalf("keepLease: %v", err)
	}
	return ls, k
}

type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

// Each way a keep-alive ends gives the error its documentation promises,
// and that one value is the cause of its contexts.
func TestKeepAliveErrors(t *testing.T) {
	noperm := replyErr("NOPERM this user has no permissions to run the 'evalsha' command")
	reset := errors.New("read tcp: connection reset by peer") // transient
	tests := []struct {
		name    string
		opt     *KeepAliveOptions
		refresh refreshFunc
		stop    bool
		matches []error
		not     []error
		says    string
	}{
		{"not held", nil, func(context.Context) error { return lease.ErrNotHeld },
			false, []error{ErrLockLost, ErrNotObtained}, []error{ErrKeepAliveStopped}, "held by another token"},
		{"final error", nil, func(context.Context) error { return noperm },
			false, []error{ErrLockLost, noperm}, []error{ErrNotObtained}, "NOPERM"},
		{"transient errors", nil, func(context.Context) error { return reset },
			false, []error{ErrLockLost, reset}, []error{ErrNotObtained}, "last error: read tcp"},
		{"hang", nil, func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() },
			false, []error{ErrLockLost}, []error{ErrNotObtained, context.DeadlineExceeded}, "did not answer"},
		{"max hold", &KeepAliveOptions{MaxHold: 2 * time.Second}, func(context.Context) error { return nil },
			false, []error{ErrLockLost, ErrMaxHoldReached}, []error{ErrNotObtained}, "MaxHold (2s)"},
		{"stopped", nil, func(context.Context) error { return nil },
			true, []error{ErrKeepAliveStopped}, []error{ErrLockLost}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, k := keepFake(t, time.Second, tt.opt, tt.refresh)
				ctx, cancel := k.Context(context.Background())
				defer cancel()
				if tt.stop {
					time.Sleep(time.Second)
					k.Stop()
				}
				<-k.Done()
				err := k.Err()
				for _, want := range tt.matches {
					if !errors.Is(err, want) {
						t.Errorf("Err = %v, want it to match %v", err, want)
					}
				}
				for _, not := range tt.not {
					if errors.Is(err, not) {
						t.Errorf("Err = %v matches %v", err, not)
					}
				}
				if !strings.Contains(err.Error(), tt.says) {
					t.Errorf("Err = %q, want it to say %q", err, tt.says)
				}
				if cause := context.Cause(ctx); cause != err {
					t.Errorf("context.Cause = %v, want Err() = %v", cause, err)
				}
				k.Stop()
			})
		})
	}
}

// The real-server tests' old 22 ms window, as a property: with a 1 s TTL,
// a keep-alive whose refreshes hang or fail signals the loss exactly at
// the last successful send + 978 ms, 22 ms (the default margin) before the
// key can expire on the server.
func TestKeepAliveLostBeforeTheKeyExpires(t *testing.T) {
	for _, mode := range []string{"hang", "transient"} {
		t.Run(mode, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var (
					mu      sync.Mutex
					failing bool
					lastOK  time.Time
				)
				refresh := func(ctx context.Context) error {
					mu.Lock()
					defer mu.Unlock()
					switch {
					case !failing:
						lastOK = time.Now()
						return nil
					case mode == "hang":
						mu.Unlock()
						defer mu.Lock()
						<-ctx.Done()
						return ctx.Err()
					}
					return errors.New("i/o timeout")
				}
				_, k := keepFake(t, time.Second, nil, refresh)
				defer k.Stop()
				time.Sleep(time.Second) // three successful refreshes
				mu.Lock()
				failing = true
				serverExpiry := lastOK.Add(time.Second)
				mu.Unlock()
				<-k.Done()
				if got, want := time.Until(serverExpiry), 22*time.Millisecond; got != want {
					t.Errorf("lost %v before the key can expire, want %v", got, want)
				}
				if got := k.ValidUntil(); !got.Equal(time.Now()) {
					t.Errorf("ValidUntil = %v from the loss, want the loss's time", time.Until(got))
				}
			})
		})
	}
}

// keepLease refuses, with the package's errors, what the engine refuses.
func TestKeepLeaseRefusals(t *testing.T) {
	ok := func(context.Context) error { return nil }
	synctest.Test(t, func(t *testing.T) {
		var unknown lease.Lease
		if _, err := keepLease(&unknown, time.Second, nil, ok, nil); !errors.Is(err, ErrLockNotHeld) || !strings.Contains(err.Error(), "no lease") {
			t.Errorf("lease not known: %v, want ErrLockNotHeld", err)
		}

		var lost lease.Lease
		lost.Obtained(time.Now(), time.Second)
		lost.Lost(time.Now())
		_, err := keepLease(&lost, time.Second, nil, ok, nil)
		if !errors.Is(err, ErrLockLost) || !errors.Is(err, ErrNotObtained) || errors.Is(err, ErrLockNotHeld) {
			t.Errorf("lost lease: %v, want ErrLockLost and ErrNotObtained", err)
		}

		var released lease.Lease
		released.Obtained(time.Now(), time.Second)
		released.Released()
		if _, err := keepLease(&released, time.Second, nil, ok, nil); !errors.Is(err, ErrLockNotHeld) || !strings.Contains(err.Error(), "released") {
			t.Errorf("released lease: %v, want ErrLockNotHeld", err)
		}

		var expired lease.Lease
		expired.Obtained(time.Now(), 10*time.Millisecond)
		time.Sleep(10 * time.Millisecond)
		if _, err := keepLease(&expired, time.Second, nil, ok, nil); !errors.Is(err, ErrLockNotHeld) || !strings.Contains(err.Error(), "ran out") {
			t.Errorf("expired lease: %v, want ErrLockNotHeld", err)
		}

		ls, k := keepFake(t, time.Second, nil, ok)
		if _, err := keepLease(ls, time.Second, nil, ok, nil); !errors.Is(err, ErrKeepAliveRunning) {
			t.Errorf("second keep-alive: %v, want ErrKeepAliveRunning", err)
		}
		k.Stop()
		again, err := keepLease(ls, time.Second, nil, ok, nil)
		if err != nil {
			t.Errorf("keep-alive after Stop: %v, want a new one", err)
		}
		ls.Released()
		if err := again.Err(); !errors.Is(err, ErrKeepAliveStopped) {
			t.Errorf("Err after Released = %v, want ErrKeepAliveStopped", err)
		}
	})
}

func TestKeepAliveOptionsChecked(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		ttl     time.Duration
		opt     *KeepAliveOptions
		wantErr bool
	}{
		{"nil, 1s", time.Second, nil, false},
		{"zero fields, 30s", 30 * time.Second, &KeepAliveOptions{}, false},
		{"set", time.Second, &KeepAliveOptions{Interval: 500 * ms, Margin: 100 * ms}, false},
		{"smallest default", 4 * ms, nil, false},
		{"default margin too big", 2 * ms, nil, true},
		{"default interval too long", 3 * ms, nil, true},
		{"negative interval", time.Second, &KeepAliveOptions{Interval: -1}, true},
		{"negative margin", time.Second, &KeepAliveOptions{Margin: -1}, true},
		{"negative max hold", time.Second, &KeepAliveOptions{MaxHold: -1}, true},
		{"margin = ttl", time.Second, &KeepAliveOptions{Margin: time.Second}, true},
		{"interval = ttl - margin", time.Second, &KeepAliveOptions{Interval: 978 * ms}, true},
		{"interval just below", time.Second, &KeepAliveOptions{Interval: 977 * ms}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ls lease.Lease
			ls.Obtained(time.Now(), time.Minute)
			k, err := keepLease(&ls, tt.ttl, tt.opt, func(context.Context) error { return nil }, nil)
			defer k.Stop()
			if got := errors.Is(err, ErrInvalidOption); got != tt.wantErr {
				t.Fatalf("err = %v, want ErrInvalidOption: %v", err, tt.wantErr)
			}
		})
	}
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
