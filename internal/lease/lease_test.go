package lease

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestLeaseEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ms := time.Millisecond
		t0 := time.Now()
		at := func(d time.Duration) time.Time { return t0.Add(d) }
		var l Lease
		check := func(what string, want time.Time) {
			t.Helper()
			if got := l.ValidUntil(0); !got.Equal(want) {
				t.Errorf("%s: ValidUntil = %v, want %v", what, got.Sub(t0), want.Sub(t0))
			}
		}
		check("zero value", time.Time{})
		l.Sending(at(0), time.Second)
		check("Sending on a lease not known", time.Time{})

		l.Obtained(at(0), 10*time.Second+ms/2) // Redis counts whole milliseconds
		check("Obtained", at(10*time.Second-DefaultMargin(10*time.Second)))
		if got := l.TTL(); got != 10*time.Second {
			t.Errorf("TTL = %v, want 10s (truncated to whole milliseconds)", got)
		}
		l.Sending(at(100*ms), time.Second)
		check("Sending a shorter lease", at(1100*ms-DefaultMargin(time.Second)))
		l.Sending(at(200*ms), 5*time.Second)
		check("Sending a longer lease", at(1100*ms-DefaultMargin(time.Second)))
		l.Renewed(at(300*ms), time.Second)
		check("Renewed", at(1300*ms-DefaultMargin(time.Second)))
		l.Renewed(at(250*ms), time.Hour)
		check("Renewed by a request sent before the last", at(1300*ms-DefaultMargin(time.Second)))
		if got, want := l.ValidUntil(100*ms), at(1200*ms); !got.Equal(want) {
			t.Errorf("ValidUntil(100ms) = %v, want %v", got.Sub(t0), want.Sub(t0))
		}

		l.Lost(at(200 * ms))
		check("Lost by a request sent before the last", at(1300*ms-DefaultMargin(time.Second)))
		l.Lost(at(400 * ms))
		check("Lost", time.Time{})
		if got := l.TTL(); got != 0 {
			t.Errorf("TTL of a lost lease = %v, want 0", got)
		}
		l.Renewed(at(350*ms), time.Second)
		check("Renewed by a request sent before the loss", time.Time{})
		l.Renewed(at(500*ms), time.Second)
		check("Renewed after the loss (taken again with the same token)", at(1500*ms-DefaultMargin(time.Second)))

		l.Released()
		check("Released", time.Time{})
		l.Obtained(at(600*ms), time.Second)
		l.Renewed(at(700*ms), time.Second)
		check("events after Released", time.Time{})
	})
}

func TestLeaseKeepAliveRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ok := func(context.Context) error { return nil }
		cfg := Config{TTL: time.Second}

		var unknown Lease
		if _, err := unknown.KeepAlive(cfg, ok); !errors.Is(err, ErrUnknown) {
			t.Errorf("lease not known: %v, want ErrUnknown", err)
		}
		var expired Lease
		expired.Obtained(time.Now(), 100*time.Millisecond)
		time.Sleep(100 * time.Millisecond)
		if _, err := expired.KeepAlive(cfg, ok); !errors.Is(err, ErrExpired) {
			t.Errorf("lease run out: %v, want ErrExpired", err)
		}
		var l Lease
		l.Obtained(time.Now(), time.Second)
		if _, err := l.KeepAlive(Config{TTL: time.Second, Interval: time.Second}, ok); !errors.As(err, new(*ConfigError)) {
			t.Errorf("bad config: %v, want a *ConfigError", err)
		}
		k, err := l.KeepAlive(cfg, ok)
		if err != nil {
			t.Fatalf("KeepAlive: %v", err)
		}
		if _, err := l.KeepAlive(cfg, ok); !errors.Is(err, ErrRunning) {
			t.Errorf("second keep-alive: %v, want ErrRunning", err)
		}
		l.Released()
		if !k.hasEnded() || !k.hasExited() {
			t.Error("keep-alive still running after Released")
		}
		if _, err := l.KeepAlive(cfg, ok); !errors.Is(err, ErrReleased) {
			t.Errorf("released lease: %v, want ErrReleased", err)
		}
	})
}

// A keep-alive that ended is replaced, once its goroutine has exited: with
// a refresh stuck, StopWait after its end at most.
func TestLeaseKeepAliveReplacesEnded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFakeRefresher()
		l, k := startFake(t, f, fakeTTL, Config{MaxHold: 150 * time.Millisecond})
		f.set("stuck", nil)
		<-k.Done() // MaxHold, with the refresh sent at 100ms stuck
		ended := time.Now()
		f.set("ok", nil)
		again, err := l.KeepAlive(Config{TTL: fakeTTL}, f.refresh)
		if err != nil {
			t.Fatalf("KeepAlive after the end: %v", err)
		}
		defer again.Stop()
		if got := time.Since(ended); got != StopWait {
			t.Errorf("KeepAlive waited %v for the ended one, want StopWait (%v)", got, StopWait)
		}
		if !k.hasExited() {
			t.Error("the old keep-alive's goroutine has not exited")
		}
		close(f.stuck)
	})
}

func TestConfigResolve(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name     string
		cfg      Config
		interval time.Duration
		margin   time.Duration
		wantErr  bool
	}{
		{"defaults, 1s", Config{TTL: time.Second}, 333333333, 22 * ms, false},
		{"defaults, 30s", Config{TTL: 30 * time.Second}, 10 * time.Second, 602 * ms, false},
		{"set", Config{TTL: time.Second, Interval: 500 * ms, Margin: 100 * ms}, 500 * ms, 100 * ms, false},
		{"smallest default", Config{TTL: 4 * ms}, 4 * ms / 3, 2*ms + 4*ms/50, false},
		{"TTL below 1ms", Config{TTL: ms - 1}, 0, 0, true},
		{"default margin too big", Config{TTL: 2 * ms}, 0, 0, true},
		{"default interval too long", Config{TTL: 3 * ms}, 0, 0, true},
		{"negative interval", Config{TTL: time.Second, Interval: -1}, 0, 0, true},
		{"negative margin", Config{TTL: time.Second, Margin: -1}, 0, 0, true},
		{"negative max hold", Config{TTL: time.Second, MaxHold: -1}, 0, 0, true},
		{"margin = ttl", Config{TTL: time.Second, Margin: time.Second}, 0, 0, true},
		{"interval = ttl - margin", Config{TTL: time.Second, Interval: 978 * ms}, 0, 0, true},
		{"interval just below", Config{TTL: time.Second, Interval: 977 * ms}, 977 * ms, 22 * ms, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.cfg.Resolve()
			if got := errors.As(err, new(*ConfigError)); got != tt.wantErr {
				t.Fatalf("err = %v, want a *ConfigError: %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if c.Interval != tt.interval || c.margin() != tt.margin {
				t.Errorf("interval, margin = %v, %v; want %v, %v", c.Interval, c.margin(), tt.interval, tt.margin)
			}
		})
	}
}

func TestConfigBackoff(t *testing.T) {
	c := Config{Interval: 320 * time.Millisecond}
	want := []time.Duration{10, 20, 40, 80, 80, 80}
	for i, w := range want {
		if got := c.Backoff(i + 1); got != w*time.Millisecond {
			t.Errorf("backoff(%d) = %v, want %v", i+1, got, w*time.Millisecond)
		}
	}
	c = Config{Interval: time.Millisecond}
	if got := c.Backoff(1); got != time.Millisecond {
		t.Errorf("backoff(1) with a 1ms interval = %v, want 1ms", got)
	}
	if got := c.Backoff(1 << 20); got != time.Millisecond {
		t.Errorf("backoff(1<<20) = %v, want the ceiling", got)
	}
}
