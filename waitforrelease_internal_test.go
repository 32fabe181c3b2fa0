package redislock

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/leaktest"
	"github.com/redislock/redislock/internal/redistest"
	"github.com/redislock/redislock/internal/retry"
)

// The waiting goroutines that leave, obtain or give up leave no goroutine,
// connection, group or key behind. Not parallel: leaktest compares with the
// goroutines of the tests that are paused meanwhile.
func TestWaitLeavesNothingBehind(t *testing.T) {
	srv := redistest.SharedServer(t, redistest.Redis)
	ctx := context.Background()
	admin := srv.Client(t)
	admin.Ping(ctx)
	ignore := leaktest.Now()

	key := redistest.Key(t, "lock")
	companions, _ := handoff.Companions([]string{key})
	queue := companions[1]
	opt := &Options{RetryStrategy: WaitForRelease(nil)}
	holder, err := New(admin).Obtain(ctx, key, time.Minute, opt)
	if err != nil {
		t.Fatal(err)
	}
	shared := redis.NewClient(srv.Options())
	clients := []*redis.Client{shared}
	var wg sync.WaitGroup
	cancelCtx, cancel := context.WithCancel(ctx)
	errs := make(chan error, 8)
	for i := range 8 {
		rdb := shared
		if i%2 == 0 {
			rdb = redis.NewClient(srv.Options())
			clients = append(clients, rdb)
		}
		wctx := ctx
		if i >= 6 {
			wctx = cancelCtx // these two give up
		}
		wg.Go(func() {
			lock, err := New(rdb).Obtain(wctx, key, time.Minute, opt)
			if err == nil {
				err = lock.Release(ctx)
			}
			errs <- err
		})
		for admin.ZCard(ctx, queue).Val() != int64(i+1) {
			// Until the waiter is registered.
		}
	}
	cancel()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	var obtained, gaveUp int
	for err := range errs {
		switch {
		case err == nil:
			obtained++
		case errors.Is(err, context.Canceled):
			gaveUp++
		default:
			t.Errorf("waiter: %v", err)
		}
	}
	if obtained != 6 || gaveUp != 2 {
		t.Errorf("%d waiters obtained the lock and %d gave up, want 6 and 2", obtained, gaveUp)
	}

	for _, c := range clients {
		if s := c.PoolStats(); s.TotalConns != s.IdleConns {
			t.Errorf("%d connections of a client still in use", s.TotalConns-s.IdleConns)
		}
	}
	if keys := admin.Keys(ctx, "*"+redistest.Tag(t)+"*").Val(); len(keys) != 0 {
		t.Errorf("keys left behind: %q", keys)
	}
	if waits, groups, clients := handoff.Default.Waits(); waits+groups+clients != 0 {
		t.Errorf("%d waits, %d groups, %d clients left in the registry", waits, groups, clients)
	}
	for _, c := range clients {
		_ = c.Close()
	}
	leaktest.Check(t, ignore)
}

func TestWaitForReleaseStrategy(t *testing.T) {
	ms := time.Millisecond
	w := WaitForRelease(LimitRetry(LinearBackoff(ms), 2))
	// Where a call retries without events (Refresh, transient errors), it
	// follows the fallback, afresh each call.
	for range 2 {
		s := retry.Start(w)
		for i, want := range []time.Duration{ms, ms, 0} {
			if got := s.NextBackoff(); got != want {
				t.Fatalf("backoff %d = %v, want %v", i+1, got, want)
			}
		}
	}
	if got := w.NextBackoff(); got != ms {
		t.Errorf("NextBackoff = %v, want the fallback's %v", got, ms)
	}
	// The default fallback: ExponentialBackoff(8ms, 128ms) with ±50% jitter.
	s := retry.Start(WaitForRelease(nil))
	for i, base := range []time.Duration{8 * ms, 8 * ms, 16 * ms, 32 * ms, 64 * ms, 128 * ms, 128 * ms} {
		if got := s.NextBackoff(); got < base/2 || got > base*3/2 {
			t.Fatalf("default backoff %d = %v, want %v ± 50%%", i+1, got, base)
		}
	}
}

// lineHarness drives the scripts of the line one by one on one key, for
// waiters named by the tests (ids with a claim window of 50 ms, so that a
// lapse takes little time).
type lineHarness struct {
	t           *testing.T
	ctx         context.Context
	rdb         *redis.Client
	key         string
	c           []string // the key, its line and its liveness set
	line, alive string
}

func newLineHarness(t *testing.T) *lineHarness {
	srv := redistest.SharedServer(t, redistest.Redis)
	key := redistest.Key(t, "lock")
	c, _ := handoff.Companions([]string{key})
	return &lineHarness{t: t, ctx: context.Background(), rdb: srv.Client(t), key: key, c: c, line: c[1], alive: c[2]}
}

func (h *lineHarness) id(name string) string { return name + ".50" }

// attempt runs obtain.lua for waiter name ("" for no waiter), later or
// first; it reports whether it obtained.
func (h *lineHarness) attempt(name string, later bool) bool {
	h.t.Helper()
	keys, args := []string{h.key}, []any{name, "", 60000, "0"}
	if name != "" {
		mode := "1"
		if later {
			mode = "0"
		}
		keys = append(keys, h.line, h.alive)
		args = append(args, h.id(name), handoff.RegistrationArg, mode)
	}
	v, err := obtainScript.Run(h.ctx, h.rdb, keys, args...).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	n, ok := v.(int64)
	return ok && n != obtainHeld
}

func (h *lineHarness) release(token string) {
	h.t.Helper()
	if err := releaseScript.Run(h.ctx, h.rdb, h.c, token).Err(); err != nil {
		h.t.Fatal(err)
	}
}

// granted reports whether a grant waits on name's grant list.
func (h *lineHarness) granted(name string) bool {
	return h.rdb.LLen(h.ctx, handoff.GrantList(h.line, h.id(name))).Val() > 0
}

func (h *lineHarness) reservedFor(name string) bool {
	v := h.rdb.Get(h.ctx, h.key).Val()
	return strings.HasPrefix(v, strconv.Itoa(len(h.id(name))+1)+":~"+h.id(name)+":")
}

// expired waits until the key is gone (a reservation's claim window, or a
// PEXPIRE of the test's).
func (h *lineHarness) expired() {
	for h.rdb.Exists(h.ctx, h.key).Val() == 1 {
		time.Sleep(time.Millisecond)
	}
}

// The line, script by script on a real server (the blocks are read off
// the grant lists): a release serves the waiter that arrived first however
// often the others attempted since; a waiter granted the key that does not
// attempt within its claim window is passed over, and keeps its place
// once it attempts again; a later waiter that finds the key free hands it
// to the one that arrived before it; a waiter that leaves passes on a key
// reserved for it; and nothing is left behind.
func TestLineScripts(t *testing.T) {
	h := newLineHarness(t)
	ctx, rdb, key, c, line, alive := h.ctx, h.rdb, h.key, h.c, h.line, h.alive
	id, attempt, release, granted, reservedFor := h.id, h.attempt, h.release, h.granted, h.reservedFor

	if !attempt("h", false) {
		t.Fatal("h did not obtain the free key")
	}
	for _, name := range []string{"A", "B", "C"} {
		// Arrivals in one microsecond would keep the order of the ids.
		if attempt(name, false) {
			t.Fatalf("%s obtained a held key", name)
		}
	}
	// B and C attempt again (their blocks ended) after A: no place changes.
	for _, name := range []string{"C", "B", "C", "B"} {
		if attempt(name, true) {
			t.Fatalf("%s obtained a held key", name)
		}
	}
	release("h")
	if !reservedFor("A") || !granted("A") || granted("B") || granted("C") {
		t.Fatalf("after h's release: the key is %q; grants A %v, B %v, C %v; want A served", rdb.Get(ctx, key).Val(), granted("A"), granted("B"), granted("C"))
	}
	if attempt("B", true) {
		t.Fatal("B took a key reserved for A")
	}
	// A does not answer within its claim window: the key expires with it.
	h.expired()
	// B's next attempt finds the key free, and A out of the line (its
	// lapse ended with the window): B takes it.
	if !attempt("B", true) {
		t.Fatal("B did not take the key that A left to expire")
	}
	// A comes back: registered again; C arrived before A's new entry but
	// after its old one, which the lapse dropped.
	if attempt("A", true) {
		t.Fatal("A obtained a held key")
	}
	release("B")
	if !reservedFor("C") {
		t.Fatalf("after B's release the key is %q, want it reserved for C (A lost its place)", rdb.Get(ctx, key).Val())
	}
	if !attempt("C", true) {
		t.Fatal("C did not take the key reserved for it")
	}
	// C's key expires without a release (C died holding it): A finds it
	// free and takes it; no one else is in line.
	rdb.PExpire(ctx, key, time.Millisecond)
	h.expired()
	// A first attempt takes a free key, as any Obtain does; its release
	// serves A.
	if !attempt("D", false) {
		t.Fatal("D's first attempt did not take the free key")
	}
	release("D")
	if !reservedFor("A") || !attempt("A", true) {
		t.Fatalf("after D's release the key is %q, want A served", rdb.Get(ctx, key).Val())
	}
	// E and F wait; the key expires; F attempts first and hands it to E.
	for _, name := range []string{"E", "F"} {
		if attempt(name, false) {
			t.Fatalf("%s obtained a held key", name)
		}
	}
	rdb.PExpire(ctx, key, time.Millisecond)
	h.expired()
	if attempt("F", true) {
		t.Fatal("F took the free key ahead of E, which arrived first")
	}
	if !reservedFor("E") || !granted("E") {
		t.Fatalf("after F's attempt the key is %q, want it reserved for E", rdb.Get(ctx, key).Val())
	}
	// E gives up: the key goes on to F.
	if err := leaveScript.Run(ctx, rdb, c, id("E")).Err(); err != nil {
		t.Fatal(err)
	}
	if !reservedFor("F") || !attempt("F", true) {
		t.Fatalf("after E left the key is %q, want F served", rdb.Get(ctx, key).Val())
	}
	release("F")
	for _, k := range []string{key, line, alive} {
		if n := rdb.Exists(ctx, k).Val(); n != 0 && k == key {
			t.Errorf("%s left behind", k)
		}
		if ttl := rdb.PTTL(ctx, k).Val(); ttl == -1 {
			t.Errorf("%s has no expiry", k)
		}
	}
}

// A process whose waiter lets a grant lapse is passed over: its other
// waiters keep their places but are not granted while the tombstone lasts,
// so that a dead process with k waiters in line costs one claim window,
// not k (docs/waiting.md, "The line"). Before, the handover after the
// lapse reserved the key for p's next waiter B, and C waited another
// claim window.
func TestLineScriptsStoppedProcess(t *testing.T) {
	h := newLineHarness(t)
	if !h.attempt("h", false) {
		t.Fatal("h did not obtain the free key")
	}
	// p-A and p-B are waiters of process p, q-C of process q.
	for _, name := range []string{"p-A", "p-B", "q-C"} {
		if h.attempt(name, false) {
			t.Fatalf("%s obtained a held key", name)
		}
	}
	h.release("h")
	if !h.reservedFor("p-A") || !h.granted("p-A") {
		t.Fatalf("after h's release the key is %q, want it reserved for p-A", h.rdb.Get(h.ctx, h.key).Val())
	}
	// p stops: p-A does not answer, its reservation expires.
	h.expired()
	if !h.attempt("q-C", true) {
		t.Fatalf("q-C did not take the key that p-A left to expire (the key is %q): p-B, of the same process, was served", h.rdb.Get(h.ctx, h.key).Val())
	}
	if h.granted("p-B") {
		t.Error("p-B was granted the key after p-A let its grant lapse")
	}
	// p-B keeps its place, and p-A is a tombstone.
	for _, name := range []string{"p-A", "p-B"} {
		if err := h.rdb.ZScore(h.ctx, h.line, h.id(name)).Err(); err != nil {
			t.Errorf("%s is out of the line: %v", name, err)
		}
	}
	// q-C releases while the tombstone lasts: p-B is passed over, and the
	// key is deleted; p-B's own attempt then takes it, as the first live
	// waiter of a process that answers is no one ahead of it.
	h.release("q-C")
	if h.reservedFor("p-B") || h.granted("p-B") {
		t.Fatal("p-B was granted the key while p's tombstone lasts")
	}
	if !h.attempt("p-B", true) {
		t.Fatalf("p-B did not take the free key (the key is %q)", h.rdb.Get(h.ctx, h.key).Val())
	}
	// p-A answers late: registered again at its place, it is served by
	// p-B's release, and with that p's waiters are granted again.
	if h.attempt("p-A", true) {
		t.Fatal("p-A obtained a held key")
	}
	h.release("p-B")
	if !h.reservedFor("p-A") || !h.attempt("p-A", true) {
		t.Fatalf("after p-B's release the key is %q, want p-A served", h.rdb.Get(h.ctx, h.key).Val())
	}
	h.release("p-A")
}

// The tombstone lasts the registration's life: handover.lua's TOMBSTONE is
// internal/handoff's Registration.
func TestTombstoneIsRegistrationLife(t *testing.T) {
	src, err := luaFiles.ReadFile("lua/handover.lua")
	if err != nil {
		t.Fatal(err)
	}
	want := "local TOMBSTONE = " + strconv.FormatInt(handoff.Registration.Milliseconds(), 10) + "\n"
	if !strings.Contains(string(src), want) {
		t.Errorf("lua/handover.lua does not say %q", want)
	}
}
