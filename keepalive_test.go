package redislock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/leaktest"
	"github.com/redislock/redislock/internal/redistest"
)

// waitTimeout bounds every wait for a channel in these tests: generous, as
// it only matters when something is broken.
const waitTimeout = 10 * time.Second

// gateClient passes script calls to Redis, or makes them fail or hang, as
// the test says. Hanging calls end when their context does.
type gateClient struct {
	redis.Scripter

	mu       sync.Mutex
	mode     string // "pass", "fail" or "hang"
	err      error  // for "fail"
	refused  int    // calls failed or hung
	answered chan struct{}
}

func newGateClient(rdb redis.Scripter) *gateClient {
	return &gateClient{Scripter: rdb, mode: "pass", answered: make(chan struct{}, 1000)}
}

func (g *gateClient) set(mode string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.mode, g.err = mode, err
}

func (g *gateClient) refusedCalls() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refused
}

func (g *gateClient) gate(ctx context.Context, call func() *redis.Cmd) *redis.Cmd {
	g.mu.Lock()
	mode, err := g.mode, g.err
	if mode != "pass" {
		g.refused++
	}
	g.mu.Unlock()
	switch mode {
	case "fail":
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(err)
		return cmd
	case "hang":
		<-ctx.Done()
		cmd := redis.NewCmd(ctx)
		cmd.SetErr(ctx.Err())
		return cmd
	}
	cmd := call()
	if cmd.Err() == nil {
		select {
		case g.answered <- struct{}{}:
		default:
		}
	}
	return cmd
}

func (g *gateClient) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return g.gate(ctx, func() *redis.Cmd { return g.Scripter.Eval(ctx, script, keys, args...) })
}

func (g *gateClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return g.gate(ctx, func() *redis.Cmd { return g.Scripter.EvalSha(ctx, sha, keys, args...) })
}

// recv waits for a value on ch, failing the test after waitTimeout.
func recv[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(waitTimeout):
		t.Fatalf("no %s within %v", what, waitTimeout)
	}
}

// obtainKept obtains key for ttl through rdb and keeps it alive with
// default options.
func obtainKept(t *testing.T, rdb redislock.RedisClient, key string, ttl time.Duration) (*redislock.Lock, *redislock.KeepAlive) {
	t.Helper()
	return obtainKeptWith(t, rdb, key, ttl, nil)
}

// obtainKeptWith obtains key for ttl through rdb and keeps it alive with
// opt.
func obtainKeptWith(t *testing.T, rdb redislock.RedisClient, key string, ttl time.Duration, opt *redislock.KeepAliveOptions) (*redislock.Lock, *redislock.KeepAlive) {
	t.Helper()
	lock, err := redislock.Obtain(context.Background(), rdb, key, ttl, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	ka, err := lock.KeepAlive(ttl, opt)
	if err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
	return lock, ka
}

// The yardstick: a lock with a 1s TTL kept alive through 5s of work.
func TestKeepAliveSurvivesLongWork(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "job")
		start := time.Now()
		lock, ka := obtainKept(t, rdb, key, time.Second)
		work, cancel := ka.Context(ctx)
		defer cancel()

		select {
		case <-work.Done():
			t.Fatalf("work cancelled after %v: %v", time.Since(start), context.Cause(work))
		case <-time.After(5 * time.Second):
		}
		if err := ka.Err(); err != nil {
			t.Fatalf("Err after 5s = %v, want nil", err)
		}
		if ttl, err := lock.TTL(ctx); err != nil || ttl <= 0 || ttl > time.Second {
			t.Errorf("TTL after 5s = %v, %v; want in (0, 1s]", ttl, err)
		}
		if v := time.Until(ka.ValidUntil()); v <= 0 || v > time.Second {
			t.Errorf("ValidUntil is %v from now, want in (0, 1s]", v)
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := ka.Err(); !errors.Is(err, redislock.ErrKeepAliveStopped) {
			t.Errorf("Err after Release = %v, want ErrKeepAliveStopped", err)
		}
		if !errors.Is(context.Cause(work), redislock.ErrKeepAliveStopped) {
			t.Errorf("work's cause after Release = %v, want ErrKeepAliveStopped", context.Cause(work))
		}
		if mustExist(t, rdb, key) {
			t.Error("key left after Release")
		}
	})
}

// Another client deletes the key: the keep-alive's next refresh finds it
// gone (at the first refresh after the loss: TestKeepAliveLostWhenNotHeld
// in internal/lease times it).
func TestKeepAliveLostWhenKeyDeleted(t *testing.T) {
	rdb := redistest.Standalone(t)
	defer leaktest.Check(t, leaktest.Now())
	ctx := context.Background()
	key := redistest.Key(t, "job")
	const ttl = 900 * time.Millisecond
	lock, ka := obtainKept(t, rdb, key, ttl)
	defer lock.Release(ctx)
	work, cancel := ka.Context(ctx)
	defer cancel()

	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	recv(t, ka.Done(), "Done after the key was deleted")
	err := ka.Err()
	if !errors.Is(err, redislock.ErrLockLost) || !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Err = %v, want ErrLockLost and ErrNotObtained", err)
	}
	if cause := context.Cause(work); cause != err {
		t.Errorf("context.Cause = %v, want Err() = %v", cause, err)
	}
	if v := ka.ValidUntil(); !v.IsZero() {
		t.Errorf("ValidUntil = %v, want zero once the lock is known gone", v)
	}
	if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Release of the lost lock = %v, want ErrLockNotHeld", err)
	}
}

// The key expires (here: vanishes) and a second holder takes it: the
// keep-alive reports the loss and leaves the new holder alone.
func TestKeepAliveLostToAnotherHolder(t *testing.T) {
	rdb := redistest.Standalone(t)
	other := redistest.Standalone(t)
	defer leaktest.Check(t, leaktest.Now())
	ctx := context.Background()
	key := redistest.Key(t, "job")
	lock, ka := obtainKept(t, rdb, key, 600*time.Millisecond)

	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	second, err := redislock.Obtain(ctx, other, key, time.Minute, &redislock.Options{Metadata: "second"})
	if err != nil {
		t.Fatalf("second holder's Obtain: %v", err)
	}
	recv(t, ka.Done(), "Done after another holder took the key")
	if err := ka.Err(); !errors.Is(err, redislock.ErrLockLost) || !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Err = %v, want ErrLockLost and ErrNotObtained", err)
	}
	if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Release of the lost lock = %v, want ErrLockNotHeld", err)
	}
	if ttl, err := second.TTL(ctx); err != nil || ttl <= 59*time.Second {
		t.Errorf("second holder's TTL = %v, %v; want untouched, about 1m", ttl, err)
	}
	if err := second.Release(ctx); err != nil {
		t.Errorf("second holder's Release: %v", err)
	}
}

// Timing of the loss signal on a real server: with the default margin a
// 1 s lease is signalled lost 22 ms before the key can expire, a window too
// narrow for a loaded machine; TestKeepAliveLostBeforeTheKeyExpires and the
// tests of internal/lease check that property under testing/synctest. Here
// a margin of 2 s on a 3 s TTL leaves seconds of room, and the tests check
// what cannot flake: Done fired, not before ValidUntil, while the key still
// existed on the server.
const (
	hangTTL = 3 * time.Second
)

// hangOptions refresh every 200ms and signal the loss 1s after the last
// successful refresh, 2s before the key can expire.
var hangOptions = &redislock.KeepAliveOptions{Interval: 200 * time.Millisecond, Margin: 2 * time.Second}

// checkLostInTime checks a keep-alive that lost its lock to Redis failing or
// hanging: Done fired after the last lease's local end, while the key was
// still there on the server (pttl, read after Done).
func checkLostInTime(t *testing.T, ka *redislock.KeepAlive, doneAt time.Time, pttl time.Duration) {
	t.Helper()
	if validUntil := ka.ValidUntil(); doneAt.Before(validUntil) {
		t.Errorf("Done %v before ValidUntil: too early", validUntil.Sub(doneAt))
	}
	if pttl <= 0 {
		t.Errorf("PTTL on the server after Done = %v: the key had expired before the loss was signalled", pttl)
	}
}

// Redis stops answering: requests hang with no error. The handle's own
// timer signals the loss, before the key expires on the server.
func TestKeepAliveLostWhileRedisHangs(t *testing.T) {
	rdb := redistest.Standalone(t)
	defer leaktest.Check(t, leaktest.Now())
	ctx := context.Background()
	key := redistest.Key(t, "job")
	g := newGateClient(rdb)
	lock, ka := obtainKeptWith(t, g, key, hangTTL, hangOptions)
	defer lock.Release(ctx)
	work, cancel := ka.Context(ctx)
	defer cancel()

	recv(t, g.answered, "the obtain")
	recv(t, g.answered, "a successful refresh")
	g.set("hang", nil)
	recv(t, ka.Done(), "Done while Redis hangs")
	doneAt := time.Now()
	pttl := rdb.PTTL(ctx, key).Val()
	checkLostInTime(t, ka, doneAt, pttl)

	err := ka.Err()
	if !errors.Is(err, redislock.ErrLockLost) || errors.Is(err, redislock.ErrNotObtained) || !strings.Contains(err.Error(), "did not answer") {
		t.Errorf("Err = %v, want ErrLockLost saying that Redis did not answer", err)
	}
	if cause := context.Cause(work); cause != err {
		t.Errorf("context.Cause = %v, want Err() = %v", cause, err)
	}
	// The hung refresh honours its context, cancelled at the loss.
	ka.Stop()
	g.set("pass", nil)
}

// Redis fails every refresh with a transient error: the keep-alive retries
// until the lease runs out, and signals the loss before the key expires.
func TestKeepAliveLostOnTransientErrors(t *testing.T) {
	rdb := redistest.Standalone(t)
	defer leaktest.Check(t, leaktest.Now())
	ctx := context.Background()
	key := redistest.Key(t, "job")
	g := newGateClient(rdb)
	lock, ka := obtainKeptWith(t, g, key, hangTTL, hangOptions)
	defer lock.Release(ctx)

	recv(t, g.answered, "the obtain")
	recv(t, g.answered, "a successful refresh")
	g.set("fail", errTransient)
	recv(t, ka.Done(), "Done while refreshes fail")
	doneAt := time.Now()
	pttl := rdb.PTTL(ctx, key).Val()
	checkLostInTime(t, ka, doneAt, pttl)

	if err := ka.Err(); !errors.Is(err, redislock.ErrLockLost) || !errors.Is(err, errTransient) {
		t.Errorf("Err = %v, want ErrLockLost wrapping the transient error", err)
	}
	if n := g.refusedCalls(); n < 3 {
		t.Errorf("%d failed refreshes, want retries (3 or more)", n)
	}
	g.set("pass", nil)
}

// A real hang: CLIENT PAUSE WRITE on a private server stalls the refresh
// script inside go-redis, which does not give up on the context. The loss
// is still signalled in time.
func TestKeepAliveLostWhileServerPaused(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Redis)
	opt := srv.Options()
	opt.ReadTimeout = 200 * time.Millisecond
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	admin := srv.Client(t)
	defer leaktest.Check(t, leaktest.Now())
	ctx := context.Background()
	key := redistest.Key(t, "job")
	_, ka := obtainKeptWith(t, rdb, key, hangTTL, hangOptions)
	defer ka.Stop()

	if err := admin.Do(ctx, "CLIENT", "PAUSE", 20000, "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	recv(t, ka.Done(), "Done while the server is paused")
	doneAt := time.Now()
	pttl := admin.PTTL(ctx, key).Val() // reads are not paused
	checkLostInTime(t, ka, doneAt, pttl)
	if err := ka.Err(); !errors.Is(err, redislock.ErrLockLost) {
		t.Errorf("Err = %v, want ErrLockLost", err)
	}
	if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatalf("CLIENT UNPAUSE: %v", err)
	}
}

// uncancellable passes script calls on without their context's
// cancellation, and says when each call starts. It stands for go-redis
// waiting for a reply (without ContextTimeoutEnabled), which does not
// notice the cancellation, without a race against go-redis's check of the
// context before it sends.
type uncancellable struct {
	redis.Scripter
	started chan time.Time
	calls   sync.WaitGroup // calls that have not returned
}

func (u *uncancellable) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	u.calls.Add(1)
	defer u.calls.Done()
	select {
	case u.started <- time.Now():
	default:
	}
	return u.Scripter.EvalSha(context.WithoutCancel(ctx), sha, keys, args...)
}

// Issue 11, item 12: with Redis paused, a refresh waits for its reply until
// the client's ReadTimeout (5 s by default). Stop, and so Release, does not
// wait for it: it returns within 100 ms (lease.StopWait).
func TestKeepAliveStopWhileServerPaused(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Redis)
	opt := srv.Options()
	opt.MaxRetries = -1 // one ReadTimeout (the default, 5 s) per call, as the issue saw
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	admin := srv.Client(t)
	ctx := context.Background()
	key := redistest.Key(t, "job")
	u := &uncancellable{Scripter: rdb, started: make(chan time.Time, 100)}
	lock, ka := obtainKeptWith(t, u, key, hangTTL, hangOptions)

	if err := admin.Do(ctx, "CLIENT", "PAUSE", 20000, "WRITE").Err(); err != nil {
		t.Fatalf("CLIENT PAUSE: %v", err)
	}
	paused := time.Now()
	for {
		var at time.Time
		select {
		case at = <-u.started:
		case <-time.After(waitTimeout):
			t.Fatalf("no refresh within %v of the pause", waitTimeout)
		}
		if at.After(paused) {
			break // sent to a paused server: it hangs until ReadTimeout
		}
	}
	start := time.Now()
	ka.Stop()
	took := time.Since(start)
	t.Logf("Stop took %v with a refresh hanging on the paused server", took)
	if took > time.Second {
		t.Errorf("Stop took %v with a refresh hanging, want about 100ms, not the client's ReadTimeout (5s)", took)
	}
	if err := ka.Err(); !errors.Is(err, redislock.ErrKeepAliveStopped) {
		t.Errorf("Err after Stop = %v, want ErrKeepAliveStopped", err)
	}
	if err := admin.Do(ctx, "CLIENT", "UNPAUSE").Err(); err != nil {
		t.Fatalf("CLIENT UNPAUSE: %v", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Errorf("Release after the pause: %v", err)
	}
	// The refresh left behind returns on its own once the server answers.
	returned := make(chan struct{})
	go func() { u.calls.Wait(); close(returned) }()
	recv(t, returned, "return of the refresh left behind")
}

// Issue 11, item 10: a lock whose last Refresh found it gone is known lost:
// a running keep-alive ends at once, and KeepAlive says so at once instead
// of starting a keep-alive that finds out later.
func TestKeepAliveOfLostLock(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "job")
		lock, running := obtainKept(t, rdb, key, time.Minute) // next refresh in 20s
		if err := rdb.Del(ctx, key).Err(); err != nil {
			t.Fatalf("DEL: %v", err)
		}
		if err := lock.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("Refresh of the deleted lock = %v, want ErrNotObtained", err)
		}
		// The running keep-alive learns it from the Refresh, not 20s later.
		recv(t, running.Done(), "Done after a Refresh found the lock lost")
		if err := running.Err(); !errors.Is(err, redislock.ErrLockLost) || !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Err of the running keep-alive = %v, want ErrLockLost and ErrNotObtained", err)
		}
		ka, err := lock.KeepAlive(time.Minute, nil)
		if !errors.Is(err, redislock.ErrLockLost) || !errors.Is(err, redislock.ErrNotObtained) || ka != nil {
			ka.Stop()
			t.Fatalf("KeepAlive of the lost lock = %v, %v; want nil, ErrLockLost and ErrNotObtained", ka, err)
		}

		// The same token takes the key again: a successful Refresh makes
		// the lease known again.
		if _, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: lock.Token()}); err != nil {
			t.Fatalf("Obtain with the same token: %v", err)
		}
		if err := lock.Refresh(ctx, time.Minute, nil); err != nil {
			t.Fatalf("Refresh after the key was taken again: %v", err)
		}
		ka, err = lock.KeepAlive(time.Minute, nil)
		if err != nil {
			t.Fatalf("KeepAlive after a successful Refresh: %v", err)
		}
		if err := lock.Release(ctx); err != nil {
			t.Errorf("Release: %v", err)
		}
		if err := ka.Err(); !errors.Is(err, redislock.ErrKeepAliveStopped) {
			t.Errorf("Err after Release = %v, want ErrKeepAliveStopped", err)
		}
	})
}

func TestKeepAliveStopAndRelease(t *testing.T) {
	rdb := redistest.Standalone(t)
	defer leaktest.Check(t, leaktest.Now())
	ctx := context.Background()
	key := redistest.Key(t, "job")
	lock, ka := obtainKept(t, rdb, key, time.Second)

	if _, err := lock.KeepAlive(time.Second, nil); !errors.Is(err, redislock.ErrKeepAliveRunning) {
		t.Errorf("second KeepAlive while one runs: got %v, want ErrKeepAliveRunning", err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(ka.Stop) // concurrent and repeated Stops
	}
	wg.Wait()
	if err := ka.Err(); !errors.Is(err, redislock.ErrKeepAliveStopped) {
		t.Errorf("Err after Stop = %v, want ErrKeepAliveStopped", err)
	}
	if time.Until(ka.ValidUntil()) <= 0 {
		t.Error("ValidUntil after Stop is past: Stop does not end the lease")
	}
	if ttl, err := lock.TTL(ctx); err != nil || ttl <= 0 {
		t.Errorf("TTL after Stop = %v, %v; Stop must not release", ttl, err)
	}

	// A stopped keep-alive is replaced; Release stops the new one.
	again, err := lock.KeepAlive(time.Second, &redislock.KeepAliveOptions{Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatalf("KeepAlive after Stop: %v", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	select {
	case <-again.Done():
	default:
		t.Error("Done not closed when Release returned")
	}
	if err := again.Err(); !errors.Is(err, redislock.ErrKeepAliveStopped) {
		t.Errorf("Err after Release = %v, want ErrKeepAliveStopped", err)
	}
	if v := again.ValidUntil(); !v.IsZero() {
		t.Errorf("ValidUntil after Release = %v, want zero", v)
	}
	if mustExist(t, rdb, key) {
		t.Error("key left after Release")
	}
	if _, err := lock.KeepAlive(time.Second, nil); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("KeepAlive after Release: got %v, want ErrLockNotHeld", err)
	}
}

func TestKeepAliveRejectsBadInput(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	lock, err := redislock.Obtain(ctx, rdb, redistest.Key(t, "job"), time.Second, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	defer lock.Release(ctx)
	tests := []struct {
		name string
		ttl  time.Duration
		opt  *redislock.KeepAliveOptions
		want error
	}{
		{"zero ttl", 0, nil, redislock.ErrInvalidTTL},
		{"sub-millisecond ttl", time.Microsecond, nil, redislock.ErrInvalidTTL},
		{"negative interval", time.Second, &redislock.KeepAliveOptions{Interval: -time.Second}, redislock.ErrInvalidOption},
		{"interval past the lease", time.Second, &redislock.KeepAliveOptions{Interval: time.Second}, redislock.ErrInvalidOption},
		{"margin past the ttl", time.Second, &redislock.KeepAliveOptions{Margin: 2 * time.Second}, redislock.ErrInvalidOption},
	}
	for _, tt := range tests {
		if ka, err := lock.KeepAlive(tt.ttl, tt.opt); !errors.Is(err, tt.want) || ka != nil {
			t.Errorf("%s: got %v, %v; want nil, %v", tt.name, ka, err, tt.want)
		}
	}
	var nilLock *redislock.Lock
	if _, err := nilLock.KeepAlive(time.Second, nil); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("KeepAlive on a nil Lock: got %v, want ErrLockNotHeld", err)
	}

	// A lease that has run out locally is not kept alive.
	short, err := redislock.Obtain(ctx, rdb, redistest.Key(t, "short"), 2*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	if _, err := short.KeepAlive(time.Second, nil); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("KeepAlive of a 2ms lease: got %v, want ErrLockNotHeld", err)
	}
}

// ctxRecorder records the context of each script call.
type ctxRecorder struct {
	redis.Scripter
	mu   sync.Mutex
	ctxs []context.Context
}

func (r *ctxRecorder) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	r.mu.Lock()
	r.ctxs = append(r.ctxs, ctx)
	r.mu.Unlock()
	return r.Scripter.EvalSha(ctx, sha, keys, args...)
}

type ctxKey struct{}

// A deferred Release in a request whose context was cancelled still
// releases, with the context's values, within a bounded time.
func TestReleaseWithEndedContextKeepsValues(t *testing.T) {
	rdb := redistest.Standalone(t)
	rec := &ctxRecorder{Scripter: rdb}
	key := redistest.Key(t, "job")
	lock, err := redislock.Obtain(context.Background(), rec, key, time.Minute, nil)
	if err != nil {
		t.Fatalf("Obtain: %v", err)
	}
	ctx, cancel := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "request-42"))
	cancel()
	if err := lock.Release(ctx); err != nil {
		t.Fatalf("Release with a cancelled context: %v", err)
	}
	if mustExist(t, rdb, key) {
		t.Error("key left after Release with a cancelled context")
	}
	rec.mu.Lock()
	got := rec.ctxs[len(rec.ctxs)-1]
	rec.mu.Unlock()
	if v := got.Value(ctxKey{}); v != "request-42" {
		t.Errorf("value seen by the release script = %v, want the caller's", v)
	}
	if deadline, ok := got.Deadline(); !ok || time.Until(deadline) > 5*time.Second {
		t.Errorf("release ran with deadline %v, %v; want one within 5s", deadline, ok)
	}
}
