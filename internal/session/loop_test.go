package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/lease"
)

// The timing tests run the loop on a fake transport, in a synctest
// bubble: time moves only when every goroutine of the bubble waits, so
// that deadlines are checked to the nanosecond.

const (
	fakeTTL      = 3 * time.Second
	fakeInterval = time.Second
	fakeMargin   = 62 * time.Millisecond // lease.DefaultMargin(fakeTTL)
)

var (
	errTransient = errors.New("connection reset by peer")
	errClosed    = errors.New("redis: client is closed")
)

// replyErr is an error reply of the server.
type replyErr string

func (e replyErr) Error() string { return string(e) }
func (replyErr) RedisError()     {}

var _ redis.Error = replyErr("")

// fakeTransport answers each refresh as the mode of its key says
// (fakeTransport.set): "ok" (1), "gone" (0), "taken" (-1), "transient",
// "closed", "wrongtype", "hang" (until the context ends), "stuck" (until
// unstuck). A key's node is what comes before its first ":".
type fakeTransport struct {
	mu      sync.Mutex
	modes   map[string]string // by key; "" is every other key's
	delay   map[string]time.Duration
	batches []sent
	stuck   chan struct{}
	runs    int // calls of run with merge false (releases)
	release []Call
}

// sent is one round trip: when, to which node, which keys.
type sent struct {
	at   time.Time
	node string
	keys []string
}

func newFake() *fakeTransport {
	return &fakeTransport{modes: map[string]string{"": "ok"}, delay: map[string]time.Duration{}, stuck: make(chan struct{})}
}

func (f *fakeTransport) set(key, mode string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.modes[key] = mode
}

func (f *fakeTransport) mode(key string) string {
	if m, ok := f.modes[key]; ok {
		return m
	}
	return f.modes[""]
}

func nodeOf(key string) string {
	n, _, _ := strings.Cut(key, ":")
	return n
}

func (f *fakeTransport) route(_ context.Context, key string) string { return nodeOf(key) }

func (f *fakeTransport) moved(context.Context, *batch) []moved { return nil }

func (f *fakeTransport) run(ctx context.Context, calls []Call, merge bool) []Reply {
	out := make([]Reply, len(calls))
	f.mu.Lock()
	if !merge {
		f.runs++
		f.release = append(f.release, calls...)
		f.mu.Unlock()
		for i := range out {
			out[i].N = 1
		}
		return out
	}
	s := sent{at: time.Now()}
	var wait time.Duration
	hang, stuck := false, false
	for _, c := range calls {
		s.keys = append(s.keys, c.Keys[0])
		s.node = nodeOf(c.Keys[0])
		wait = max(wait, f.delay[s.node])
		switch f.mode(c.Keys[0]) {
		case "hang":
			hang = true
		case "stuck":
			stuck = true
		}
	}
	f.batches = append(f.batches, s)
	modes := make([]string, len(calls))
	for i, c := range calls {
		modes[i] = f.mode(c.Keys[0])
	}
	f.mu.Unlock()
	if wait > 0 {
		time.Sleep(wait)
	}
	switch {
	case stuck:
		<-f.stuck
	case hang:
		<-ctx.Done()
	}
	for i, m := range modes {
		switch m {
		case "ok":
			out[i].N = 1
		case "gone":
			out[i].N = 0
		case "taken":
			out[i].N = -1
		case "transient":
			out[i].Err = errTransient
		case "closed":
			out[i].Err = errClosed
		case "wrongtype":
			out[i].Err = replyErr("WRONGTYPE Operation against a key holding the wrong kind of value")
		default:
			out[i].Err = context.Canceled
		}
	}
	return out
}

// sends returns the round trips so far.
func (f *fakeTransport) sends() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.batches...)
}

// member is a fake lease holder: it records how its keeping ended.
type member struct {
	key   string
	mu    sync.Mutex
	ends  []lease.End
	hooks bool
	done  []error // the refresh outcomes its hook saw
}

func (m *member) RefreshCall(_ context.Context, ms int64) (Call, func(error)) {
	c := Call{Keys: []string{m.key}, Args: []any{"token", ms}}
	if !m.hooks {
		return c, nil
	}
	return c, func(err error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.done = append(m.done, err)
	}
}

func (m *member) Ended() func(lease.End, error) {
	return func(e lease.End, _ error) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.ends = append(m.ends, e)
	}
}

func (m *member) ReleaseCall(context.Context) (Call, bool, func(Reply) error) {
	return Call{Keys: []string{m.key}}, true, func(r Reply) error {
		if r.N != 1 {
			return fmt.Errorf("reply %d", r.N)
		}
		return nil
	}
}

func (m *member) ended() []lease.End {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]lease.End(nil), m.ends...)
}

func noJitter(time.Duration) time.Duration { return 0 }

// startFake starts a session of cfg (fakeTTL, no jitter, errTransient
// transient unless set) on f.
func startFake(t *testing.T, f *fakeTransport, cfg lease.Config) *Session {
	t.Helper()
	if cfg.TTL == 0 {
		cfg.TTL = fakeTTL
	}
	if cfg.Jitter == nil {
		cfg.Jitter = noJitter
	}
	cfg.Transient = func(err error) bool { return errors.Is(err, errTransient) }
	s, err := start(f, Config{Lease: cfg})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// held is a lease obtained now for ttl, kept by s.
type held struct {
	l *lease.Lease
	m *member
	e *Entry
}

func add(t *testing.T, s *Session, key string, ttl time.Duration) held {
	t.Helper()
	h := held{l: new(lease.Lease), m: &member{key: key}}
	h.l.Obtained(time.Now(), ttl)
	e, err := s.Add(h.l, h.m, key)
	if err != nil {
		t.Fatalf("Add %s: %v", key, err)
	}
	h.e = e
	return h
}

// Leases added at different times are refreshed in few batches, each
// lease before it is due and at most a window sooner, and never lost.
func TestSessionBatchesDueLeases(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := startFake(t, f, lease.Config{})
		var hs []held
		t0 := time.Now()
		for i := range 100 {
			hs = append(hs, add(t, s, fmt.Sprintf("a:%d", i), fakeTTL))
			time.Sleep(fakeInterval / 100) // spread over one interval
		}
		time.Sleep(4 * fakeTTL)
		for _, h := range hs {
			if err := h.e.Err(); err != nil {
				t.Fatalf("%s ended: %v", h.m.key, err)
			}
		}
		// Each lease: its refreshes at most an interval apart, and at
		// least an interval less the window.
		last := map[string]time.Time{}
		for i, h := range hs {
			last[h.m.key] = t0.Add(time.Duration(i) * fakeInterval / 100)
		}
		window := fakeInterval / Window
		for _, b := range f.sends() {
			for _, k := range b.keys {
				gap := b.at.Sub(last[k])
				if gap > fakeInterval || gap < fakeInterval-window {
					t.Errorf("%s refreshed %v after its last send, want within [%v, %v]", k, gap, fakeInterval-window, fakeInterval)
				}
				last[k] = b.at
			}
		}
		perInterval := float64(len(f.sends())) / float64(4*fakeTTL/fakeInterval)
		t.Logf("%d round trips for 100 leases over %v: %.1f per interval", len(f.sends()), 4*fakeTTL, perInterval)
		if perInterval > Window+1 {
			t.Errorf("%.1f round trips per interval, want at most %d (one per window)", perInterval, Window+1)
		}
	})
}

// A lease found gone ends alone, at once; the others go on.
func TestSessionLeaseGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := startFake(t, f, lease.Config{})
		a, b := add(t, s, "a:1", fakeTTL), add(t, s, "a:2", fakeTTL)
		c := add(t, s, "a:3", fakeTTL)
		f.set("a:1", "gone")
		f.set("a:3", "taken")
		start := time.Now()
		<-a.e.Done()
		if got := time.Since(start); got != fakeInterval {
			t.Errorf("lost %v after the obtain, want at its first refresh, %v", got, fakeInterval)
		}
		<-c.e.Done()
		if err := a.e.Err(); !errors.Is(err, lease.ErrNotHeld) || errors.Is(err, lease.ErrTaken) {
			t.Errorf("Err of the lease gone = %v, want ErrNotHeld, not ErrTaken", err)
		}
		if err := c.e.Err(); !errors.Is(err, lease.ErrTaken) {
			t.Errorf("Err of the lease taken = %v, want ErrTaken", err)
		}
		if st, _, _ := a.l.Status(0); st != lease.StateLost {
			t.Errorf("lease state %v, want lost", st)
		}
		time.Sleep(3 * fakeTTL)
		if err := b.e.Err(); err != nil {
			t.Errorf("the other lease ended: %v", err)
		}
		if s.Err() != nil {
			t.Errorf("session ended: %v", s.Err())
		}
		for _, sent := range f.sends() {
			for _, k := range sent.keys {
				if (k == "a:1" || k == "a:3") && sent.at.After(start.Add(fakeInterval)) {
					t.Errorf("%s refreshed again at %v, after it was lost", k, sent.at.Sub(start))
				}
			}
		}
		synctest.Wait() // a lease's end is signalled first, Ended called after
		if ends := a.m.ended(); len(ends) != 1 || ends[0].Reason != lease.NotHeld {
			t.Errorf("Ended calls = %+v, want one NotHeld", ends)
		}
	})
}

// Redis hangs: every lease is signalled lost when the first one's
// validity runs out, before any of their keys can expire; the session
// ends with it.
func TestSessionLostWhileRedisHangs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := startFake(t, f, lease.Config{})
		start := time.Now()
		var hs []held
		for i := range 10 {
			hs = append(hs, add(t, s, fmt.Sprintf("%c:1", 'a'+i%3), fakeTTL))
			time.Sleep(50 * time.Millisecond)
		}
		time.Sleep(2 * fakeTTL)
		f.set("", "hang")
		hangAt := time.Now()
		<-s.Done()
		lostAt := time.Now()
		// The earliest lease: the first one's last successful send.
		var earliest time.Time
		for _, h := range hs {
			if v := h.l.ValidUntil(0); earliest.IsZero() || v.Before(earliest) {
				earliest = v
			}
		}
		for _, h := range hs {
			select {
			case <-h.e.Done():
			default:
				t.Fatalf("%s not signalled when the session was lost", h.m.key)
			}
		}
		if !lostAt.Equal(earliest) {
			t.Errorf("lost %v after the hang began, want at the earliest ValidUntil (%v)", lostAt.Sub(hangAt), earliest.Sub(hangAt))
		}
		// Every key was refreshed by a send at or after its lease's send
		// time: none can expire before sent+TTL.
		for _, h := range hs {
			_, _, sent := h.l.Status(0)
			if !lostAt.Before(sent.Add(fakeTTL)) {
				t.Errorf("%s signalled at %v, not before its key can expire (%v)", h.m.key, lostAt.Sub(start), sent.Add(fakeTTL).Sub(start))
			}
		}
		if err := s.Err(); err == nil {
			t.Error("session Err = nil after it was lost")
		}
		synctest.Wait() // a lease's end is signalled first, Ended called after
		var expired, others int
		for _, h := range hs {
			switch ends := h.m.ended(); {
			case len(ends) != 1:
				t.Errorf("%s: %d Ended calls", h.m.key, len(ends))
			case ends[0].Reason == lease.Expired && ends[0].InFlight:
				expired++
			case ends[0].Reason == lease.SessionLost:
				others++
			}
		}
		if expired != 1 || others != len(hs)-1 {
			t.Errorf("%d leases expired in flight and %d lost with the session, want 1 and %d", expired, others, len(hs)-1)
		}
		if _, err := s.Add(new(lease.Lease), &member{key: "a:x"}, "a:x"); err == nil {
			t.Error("Add after the session was lost: no error")
		}
	})
}

// A lease taken out by Stop is never refreshed again, and its lease is
// left alone.
func TestSessionStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := startFake(t, f, lease.Config{})
		a, b := add(t, s, "a:1", fakeTTL), add(t, s, "a:2", fakeTTL)
		time.Sleep(fakeInterval / 2)
		a.e.Stop()
		stopped := time.Now()
		time.Sleep(2 * fakeTTL)
		for _, sent := range f.sends() {
			for _, k := range sent.keys {
				if k == "a:1" && sent.at.After(stopped) {
					t.Errorf("a:1 refreshed %v after Stop", sent.at.Sub(stopped))
				}
			}
		}
		if err := b.e.Err(); err != nil {
			t.Errorf("the other lease ended: %v", err)
		}
		if err := a.e.Err(); err == nil {
			t.Error("Err nil after Stop")
		}
		if st, _, _ := a.l.Status(0); st != lease.StateHeld {
			t.Errorf("lease state after Stop = %v, want held (Stop does not release)", st)
		}
		// Released: the lease's keeper is stopped at once.
		b.l.Released()
		if !b.e.Ended() {
			t.Error("keeper still running after Released")
		}
	})
}

// Stop waits for a batch in flight, StopWait at most.
func TestSessionStopWaitsForFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := startFake(t, f, lease.Config{})
		a := add(t, s, "a:1", fakeTTL)
		f.set("a:1", "stuck")
		time.Sleep(fakeInterval)
		synctest.Wait() // the refresh is in flight
		start := time.Now()
		a.e.Stop()
		if got := time.Since(start); got != lease.StopWait {
			t.Errorf("Stop took %v with a refresh stuck, want StopWait (%v)", got, lease.StopWait)
		}
		close(f.stuck)
	})
}

// Transient errors are retried while the lease lasts; a failure of the
// client loses the session; an error reply ends the lease alone.
func TestSessionErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := startFake(t, f, lease.Config{})
		a, b := add(t, s, "a:1", fakeTTL), add(t, s, "a:2", fakeTTL)
		f.set("a:1", "transient")
		time.Sleep(fakeInterval + fakeInterval/2)
		f.set("a:1", "ok")
		time.Sleep(2 * fakeTTL)
		if err := a.e.Err(); err != nil {
			t.Errorf("lease with transient errors ended: %v", err)
		}
		f.set("a:2", "wrongtype")
		<-b.e.Done()
		synctest.Wait() // a lease's end is signalled first, Ended called after
		if ends := b.m.ended(); len(ends) != 1 || ends[0].Reason != lease.Failed {
			t.Errorf("ends after an error reply = %+v, want Failed", ends)
		}
		if s.Err() != nil || a.e.Err() != nil {
			t.Errorf("an error reply of one lease ended the session (%v) or another (%v)", s.Err(), a.e.Err())
		}
		f.set("a:1", "closed")
		<-s.Done()
		if err := a.e.Err(); !errors.Is(err, errClosed) {
			t.Errorf("Err after the client failed = %v, want the client's error", err)
		}
	})
}

// MaxHold ends each lease that long after its Add.
func TestSessionMaxHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := startFake(t, f, lease.Config{MaxHold: 5 * time.Second})
		start := time.Now()
		a := add(t, s, "a:1", fakeTTL)
		<-a.e.Done()
		if got := time.Since(start); got != 5*time.Second {
			t.Errorf("ended after %v, want MaxHold", got)
		}
		synctest.Wait() // a lease's end is signalled first, Ended called after
		if ends := a.m.ended(); len(ends) != 1 || ends[0].Reason != lease.MaxHoldReached {
			t.Errorf("ends = %+v, want MaxHoldReached", ends)
		}
		if s.Err() != nil {
			t.Errorf("MaxHold ended the session: %v", s.Err())
		}
	})
}

// The session follows what the holder records in the lease: a Refresh of
// its own moves the next refresh, and one that found the lease lost ends
// it at once.
func TestSessionFollowsLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := startFake(t, f, lease.Config{})
		a := add(t, s, "a:1", fakeTTL)
		time.Sleep(fakeInterval / 2)
		a.l.Renewed(time.Now(), fakeTTL) // the holder's own Refresh
		own := time.Now()
		time.Sleep(fakeInterval)
		synctest.Wait()
		sends := f.sends()
		if len(sends) != 1 || !sends[0].at.Equal(own.Add(fakeInterval)) {
			t.Fatalf("refreshes %v, want one an interval after the holder's own", sends)
		}
		a.l.Lost(time.Now())
		synctest.Wait()
		if !a.e.Ended() {
			t.Error("keeping goes on after the lease was marked lost")
		}
		if _, err := s.Add(a.l, a.m, "a:1"); !errors.Is(err, lease.ErrLost) {
			t.Errorf("Add of a lost lease = %v, want lease.ErrLost", err)
		}
	})
}

// A node that answers slowly does not hold the others' refreshes back.
func TestSessionNodesApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.delay["slow"] = 800 * time.Millisecond
		s := startFake(t, f, lease.Config{})
		slow, fast := add(t, s, "slow:1", fakeTTL), add(t, s, "fast:1", fakeTTL)
		time.Sleep(3 * fakeTTL)
		if slow.e.Err() != nil || fast.e.Err() != nil {
			t.Fatalf("lost: %v, %v", slow.e.Err(), fast.e.Err())
		}
		var prev time.Time
		for _, b := range f.sends() {
			if b.node != "fast" {
				continue
			}
			if !prev.IsZero() && b.at.Sub(prev) != fakeInterval {
				t.Errorf("fast node refreshed %v after its last, want %v", b.at.Sub(prev), fakeInterval)
			}
			prev = b.at
		}
	})
}

// Close ends every lease as stopped and returns those still held; Release
// sends each member's release in one run.
func TestSessionCloseAndRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := startFake(t, f, lease.Config{})
		a, b, c := add(t, s, "a:1", fakeTTL), add(t, s, "b:1", fakeTTL), add(t, s, "a:2", fakeTTL)
		f.set("a:2", "gone")
		<-c.e.Done()
		b.e.Stop()
		if err := s.Release(context.Background(), time.Second); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if f.runs != 1 || len(f.release) != 1 || f.release[0].Keys[0] != "a:1" {
			t.Errorf("releases sent: %d runs, %v; want one run with a:1 only", f.runs, f.release)
		}
		if !errors.Is(s.Err(), lease.End{Reason: lease.Stopped}) && s.Err() == nil {
			t.Errorf("session Err after Release = %v", s.Err())
		}
		synctest.Wait() // a lease's end is signalled first, Ended called after
		if ends := a.m.ended(); len(ends) != 1 || ends[0].Reason != lease.Stopped {
			t.Errorf("ends of the lease released = %+v, want Stopped", ends)
		}
		if s.Close() != nil {
			t.Error("a second Close returned members")
		}
	})
}

// Hooks see each refresh's outcome.
func TestSessionRefreshHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		s := startFake(t, f, lease.Config{})
		h := held{l: new(lease.Lease), m: &member{key: "a:1", hooks: true}}
		h.l.Obtained(time.Now(), fakeTTL)
		if _, err := s.Add(h.l, h.m, "a:1"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(fakeInterval)
		synctest.Wait()
		f.set("a:1", "taken")
		time.Sleep(fakeInterval)
		synctest.Wait()
		h.m.mu.Lock()
		defer h.m.mu.Unlock()
		if len(h.m.done) != 2 || h.m.done[0] != nil || !errors.Is(h.m.done[1], lease.ErrTaken) {
			t.Errorf("hook saw %v, want [nil ErrTaken]", h.m.done)
		}
	})
}
