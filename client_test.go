package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

func TestObtain(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "job")
		locker := redislock.New(rdb)

		lock, err := locker.Obtain(ctx, key, time.Minute, &redislock.Options{Metadata: "worker-1"})
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if got := lock.Key(); got != key {
			t.Errorf("Key() = %q, want %q", got, key)
		}
		if got := len(lock.Token()); got != 22 {
			t.Errorf("len(Token()) = %d, want 22 (16 random bytes, base64url)", got)
		}
		if got := lock.Metadata(); got != "worker-1" {
			t.Errorf("Metadata() = %q, want worker-1", got)
		}
		if got := lock.FenceToken(); got != 0 {
			t.Errorf("FenceToken() without FenceKey = %d, want 0", got)
		}
		if got, want := mustGet(t, rdb, key), "22:"+lock.Token()+":0:worker-1"; got != want {
			t.Errorf("stored value = %q, want %q", got, want)
		}
		if ttl := rdb.PTTL(ctx, key).Val(); ttl <= 0 || ttl > time.Minute {
			t.Errorf("PTTL = %v, want in (0, 1m]", ttl)
		}

		if _, err := locker.Obtain(ctx, key, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("second Obtain: got %v, want ErrNotObtained", err)
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		again, err := redislock.Obtain(ctx, rdb, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain after Release: %v", err)
		}
		if again.Token() == lock.Token() {
			t.Errorf("two random tokens are equal: %q", again.Token())
		}
		if err := again.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
}

func TestObtainMultiAllOrNothing(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a, b, c := redistest.Key(t, "a"), redistest.Key(t, "b"), redistest.Key(t, "c")

		other, err := redislock.Obtain(ctx, rdb, b, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain b: %v", err)
		}
		if _, err := redislock.ObtainMulti(ctx, rdb, []string{a, b, c}, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("ObtainMulti over a held key: got %v, want ErrNotObtained", err)
		}
		for _, k := range []string{a, c} {
			if mustExist(t, rdb, k) {
				t.Errorf("key %s was written by a failed ObtainMulti", k)
			}
		}
		if err := other.Release(ctx); err != nil {
			t.Fatalf("Release b: %v", err)
		}

		lock, err := redislock.ObtainMulti(ctx, rdb, []string{a, b, c}, time.Minute, nil)
		if err != nil {
			t.Fatalf("ObtainMulti over free keys: %v", err)
		}
		for _, k := range []string{a, b, c} {
			if !mustExist(t, rdb, k) {
				t.Errorf("key %s not written", k)
			}
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		for _, k := range []string{a, b, c} {
			if mustExist(t, rdb, k) {
				t.Errorf("key %s left after Release", k)
			}
		}
	})
}

func TestObtainReentrant(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "job")
		first, err := redislock.Obtain(ctx, rdb, key, time.Second, &redislock.Options{Token: "tok-1", Metadata: "old"})
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		second, err := redislock.Obtain(ctx, rdb, key, time.Hour, &redislock.Options{Token: "tok-1", Metadata: "new"})
		if err != nil {
			t.Fatalf("re-entrant Obtain with the holder's token: %v", err)
		}
		if ttl := rdb.PTTL(ctx, key).Val(); ttl < time.Minute {
			t.Errorf("PTTL after re-entrant Obtain = %v, want the new TTL of 1h", ttl)
		}
		if got := mustGet(t, rdb, key); !strings.HasSuffix(got, ":new") {
			t.Errorf("stored value = %q, want the new metadata", got)
		}
		if _, err := redislock.Obtain(ctx, rdb, key, time.Hour, &redislock.Options{Token: "tok-2"}); !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Obtain with another token: got %v, want ErrNotObtained", err)
		}
		if err := second.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := first.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("second Release of the same token: got %v, want ErrLockNotHeld", err)
		}
	})
}

// Defect 1: ownership was compared by token prefix.
func TestObtainExactTokenOwnership(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		cases := []struct{ holderToken, holderMeta, token string }{
			{"foobar", "", "foo"},    // a prefix of the holder's token
			{"foo", "bar", "foobar"}, // the holder's token plus its metadata
			{"foo", ":1:x", "foo:1"}, // separators in token and metadata
			{"foo", "", "fo"},        // shorter
			{"a:b", "", "a"},         // the token contains the separator
			{"2:ab", "", "ab"},       // looks like a length prefix
			{"tok\x00en", "", "tok"}, // binary token
			{"x", "", strings.Repeat("x", 2)},
		}
		for i, tc := range cases {
			key := redistest.Key(t, "job"+string(rune('a'+i)))
			holder, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: tc.holderToken, Metadata: tc.holderMeta})
			if err != nil {
				t.Fatalf("Obtain as %q: %v", tc.holderToken, err)
			}
			if _, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: tc.token}); !errors.Is(err, redislock.ErrNotObtained) {
				t.Errorf("holder %q+%q, Obtain as %q: got %v, want ErrNotObtained", tc.holderToken, tc.holderMeta, tc.token, err)
			}
			if holder.Token() != tc.holderToken || !mustExist(t, rdb, key) {
				t.Errorf("holder %q lost its key", tc.holderToken)
			}
			if err := holder.Release(ctx); err != nil {
				t.Errorf("holder %q Release: %v", tc.holderToken, err)
			}
		}
	})
}

// Defect 2: a TTL under 1ms made PEXPIRE delete the key while Obtain
// reported success.
func TestObtainRejectsBadTTL(t *testing.T) {
	forEachTopology(t, func(t *testing.T, client redis.UniversalClient) {
		rdb := newFaultyClient(client)
		ctx := context.Background()
		key := redistest.Key(t, "job")
		for _, ttl := range []time.Duration{0, -time.Second, time.Nanosecond, 999 * time.Microsecond} {
			lock, err := redislock.Obtain(ctx, rdb, key, ttl, nil)
			if !errors.Is(err, redislock.ErrInvalidTTL) || lock != nil {
				t.Errorf("Obtain with ttl %v: got (%v, %v), want (nil, ErrInvalidTTL)", ttl, lock, err)
			}
		}
		if n := rdb.calls(); n != 0 {
			t.Errorf("%d script calls sent for invalid TTLs, want 0", n)
		}
		if _, err := redislock.Obtain(ctx, rdb, key, time.Millisecond, nil); err != nil {
			t.Errorf("Obtain with ttl 1ms: %v", err)
		}
	})
}

// Defect 6: empty or repeated keys reached Lua and came back as raw script
// errors.
func TestObtainRejectsBadKeys(t *testing.T) {
	forEachTopology(t, func(t *testing.T, client redis.UniversalClient) {
		rdb := newFaultyClient(client)
		ctx := context.Background()
		a, b := redistest.Key(t, "a"), redistest.Key(t, "b")
		cases := []struct {
			name string
			keys []string
			opt  *redislock.Options
		}{
			{"nil list", nil, nil},
			{"empty list", []string{}, nil},
			{"empty key", []string{""}, nil},
			{"empty among others", []string{a, "", b}, nil},
			{"duplicate", []string{a, b, a}, nil},
			{"fence key is a lock key", []string{a, b}, &redislock.Options{FenceKey: b}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				lock, err := redislock.ObtainMulti(ctx, rdb, tc.keys, time.Minute, tc.opt)
				if !errors.Is(err, redislock.ErrInvalidKey) || lock != nil {
					t.Errorf("got (%v, %v), want (nil, ErrInvalidKey)", lock, err)
				}
			})
		}
		if n := rdb.calls(); n != 0 {
			t.Errorf("%d script calls sent for invalid keys, want 0", n)
		}
		if mustExist(t, client, a) || mustExist(t, client, b) {
			t.Error("a key was written")
		}
	})
}

func TestObtainRejectsNilArguments(t *testing.T) {
	ctx := context.Background()
	if _, err := redislock.Obtain(ctx, nil, "k", time.Second, nil); !errors.Is(err, redislock.ErrNilClient) {
		t.Errorf("nil client: got %v, want ErrNilClient", err)
	}
	var c *redislock.Client
	if _, err := c.Obtain(ctx, "k", time.Second, nil); !errors.Is(err, redislock.ErrNilClient) {
		t.Errorf("nil *Client: got %v, want ErrNilClient", err)
	}
	rdb := redistest.Standalone(t)
	//lint:ignore SA1012 a nil context is the input under test
	if _, err := redislock.Obtain(nil, rdb, redistest.Key(t, "k"), time.Second, nil); !errors.Is(err, redislock.ErrNilContext) { //nolint:staticcheck // SA1012: a nil context is the input under test
		t.Errorf("nil context: got %v, want ErrNilContext", err)
	}
}

// Defect 3: when the deadline and the retry timer raced, the error was
// sometimes a bare context error.
func TestObtainContextEndAlwaysJoined(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		key := redistest.Key(t, "job")
		held, err := redislock.Obtain(context.Background(), rdb, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		defer held.Release(context.Background())

		opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)}
		for i := range 50 {
			// Deadlines that land on, just before and just after backoff ticks.
			timeout := time.Duration(i%5+1) * time.Millisecond
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			_, err := redislock.Obtain(ctx, rdb, key, time.Minute, opt)
			cancel()
			if !errors.Is(err, redislock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("run %d, timeout %v: got %v, want ErrNotObtained and DeadlineExceeded", i, timeout, err)
			}
		}

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := redislock.Obtain(ctx, rdb, key, time.Minute, opt); !errors.Is(err, redislock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled context: got %v, want ErrNotObtained and Canceled", err)
		}
	})
}

// Without a deadline of its own the wait is bounded by the TTL; the caller's
// deadline wins when it has one. Lower bounds only: a slow machine can make
// a wait longer, never shorter.
func TestObtainWaitBounds(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		key := redistest.Key(t, "job")
		held, err := redislock.Obtain(context.Background(), rdb, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		defer held.Release(context.Background())
		opt := &redislock.Options{RetryStrategy: redislock.LinearBackoff(5 * time.Millisecond)}

		start := time.Now()
		_, err = redislock.Obtain(context.Background(), rdb, key, 100*time.Millisecond, opt)
		if elapsed := time.Since(start); elapsed < 100*time.Millisecond || elapsed > 30*time.Second {
			t.Errorf("wait without deadline took %v, want about the TTL of 100ms", elapsed)
		}
		if !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("got %v, want ErrNotObtained", err)
		}

		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		start = time.Now()
		_, err = redislock.Obtain(ctx, rdb, key, 50*time.Millisecond, opt)
		if elapsed := time.Since(start); elapsed < 300*time.Millisecond {
			t.Errorf("wait with a 300ms deadline and a 50ms TTL took %v, want the deadline to win", elapsed)
		}
		if !errors.Is(err, redislock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want ErrNotObtained and DeadlineExceeded", err)
		}
	})
}

func TestObtainWaitsForRelease(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "job")
		held, err := redislock.Obtain(ctx, rdb, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		f := newFaultyClient(rdb)
		done := make(chan error, 1)
		go func() {
			lock, err := redislock.Obtain(ctx, f, key, time.Minute, &redislock.Options{RetryStrategy: redislock.LinearBackoff(2 * time.Millisecond)})
			if err == nil {
				err = lock.Release(ctx)
			}
			done <- err
		}()
		for f.calls() < 3 {
			// Let the waiter fail a few attempts before the release.
			time.Sleep(time.Millisecond)
		}
		if err := held.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("waiting Obtain: %v", err)
		}
	})
}

// Defect 4: a LimitRetry inside a reused Options was shared by every call,
// so the first call used up the budget of all later ones.
func TestOptionsReuseDoesNotShareRetryBudget(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "job")
		held, err := redislock.Obtain(ctx, rdb, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		defer held.Release(ctx)

		opt := &redislock.Options{RetryStrategy: redislock.LimitRetry(redislock.ExponentialBackoff(time.Millisecond, 2*time.Millisecond), 3)}
		// Load the scripts on the key's node first: a NOSCRIPT answered
		// with EVAL would count as a second call of one attempt.
		if _, err := redislock.Obtain(ctx, rdb, key, time.Minute, opt); !errors.Is(err, redislock.ErrNotObtained) {
			t.Fatalf("warm-up: got %v, want ErrNotObtained", err)
		}
		for call := range 3 {
			f := newFaultyClient(rdb)
			if _, err := redislock.Obtain(ctx, f, key, time.Minute, opt); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("call %d: got %v, want ErrNotObtained", call, err)
			}
			if got := f.calls(); got != 4 {
				t.Errorf("call %d made %d attempts, want 4 (1 + 3 retries)", call, got)
			}
		}
	})
}

// Defect 5: Keys() returned, and ObtainMulti kept, the caller's slice.
func TestKeysAreCopies(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a, b := redistest.Key(t, "a"), redistest.Key(t, "b")
		keys := []string{a, b}
		lock, err := redislock.ObtainMulti(ctx, rdb, keys, time.Minute, &redislock.Options{FenceKey: redistest.Key(t, "fence")})
		if err != nil {
			t.Fatalf("ObtainMulti: %v", err)
		}
		keys[0] = "changed-by-caller"
		got := lock.Keys()
		if got[0] != a || got[1] != b || len(got) != 2 {
			t.Fatalf("Keys() = %q after the caller changed its slice, want [%s %s]", got, a, b)
		}
		got[1] = "changed-by-reader"
		if got := lock.Keys(); got[1] != b {
			t.Errorf("Keys() = %q after a reader changed the returned slice", got)
		}
		_ = append(lock.Keys(), "appended")
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release with the original keys: %v", err)
		}
	})
}

func TestObtainRetriesTransientErrors(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()

		f := newFaultyClient(rdb)
		f.failNext(2, errTransient)
		lock, err := redislock.Obtain(ctx, f, redistest.Key(t, "retried"), time.Minute, &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)})
		if err != nil {
			t.Fatalf("Obtain after 2 transient failures: %v", err)
		}
		defer lock.Release(ctx)

		f.failNext(1, errTransient)
		if _, err := redislock.Obtain(ctx, f, redistest.Key(t, "noretry"), time.Minute, nil); !errors.Is(err, errTransient) {
			t.Errorf("NoRetry after a transient failure: got %v, want that error", err)
		}

		f.failNext(10, errTransient)
		opt := &redislock.Options{RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 2)}
		if _, err := redislock.Obtain(ctx, f, redistest.Key(t, "exhausted"), time.Minute, opt); !errors.Is(err, errTransient) {
			t.Errorf("retries exhausted by transient failures: got %v, want the last of them", err)
		}

		// A Redis error reply that is not transient ends the call at once.
		f = newFaultyClient(rdb)
		f.failNext(1, replyError("NOPERM this user has no permissions to run the 'evalsha' command"))
		if _, err := redislock.Obtain(ctx, f, redistest.Key(t, "final"), time.Minute, &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)}); err == nil || !strings.Contains(err.Error(), "NOPERM") {
			t.Errorf("NOPERM: got %v, want the error at once", err)
		}
		if n := f.calls(); n != 0 {
			t.Errorf("NOPERM was retried %d times", n)
		}
	})
}

func TestObtainOneRoundTrip(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		f := newFaultyClient(rdb)
		key := redistest.Key(t, "job")
		// Load the scripts first: a cold cache costs one NOSCRIPT reply.
		lock, err := redislock.Obtain(ctx, f, key, time.Minute, nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		_, _ = lock.TTL(ctx)
		_ = lock.Refresh(ctx, time.Minute, nil)
		_ = lock.Release(ctx)

		ops := []struct {
			name string
			run  func() error
		}{
			{"Obtain", func() (err error) { lock, err = redislock.Obtain(ctx, f, key, time.Minute, nil); return err }},
			{"failed Obtain", func() error { _, err := redislock.Obtain(ctx, f, key, time.Minute, nil); return wantNotObtained(err) }},
			{"TTL", func() error { _, err := lock.TTL(ctx); return err }},
			{"Refresh", func() error { return lock.Refresh(ctx, time.Minute, nil) }},
			{"Release", func() error { return lock.Release(ctx) }},
		}
		for _, op := range ops {
			before := f.calls()
			if err := op.run(); err != nil {
				t.Fatalf("%s: %v", op.name, err)
			}
			if n := f.calls() - before; n != 1 {
				t.Errorf("%s sent %d script calls, want 1", op.name, n)
			}
		}
	})
}

// wantNotObtained turns the expected ErrNotObtained into nil.
func wantNotObtained(err error) error {
	if errors.Is(err, redislock.ErrNotObtained) {
		return nil
	}
	if err == nil {
		return errors.New("obtained a held lock")
	}
	return err
}

// Without a waiter, obtain.lua replies 1 when a key is held (it reads no
// PTTL, and go-redis boxes 1 without allocating), fenced or not, and a
// fenced attempt on a held key leaves the counter alone; a poll that asks
// for the holder's expiry (ARGV[5] "") gets -(PTTL + 1).
func TestObtainScriptPlainReply(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	obtain := redis.NewScript(luaSource(t, "lua/lib.lua", "lua/handover.lua", "lua/obtain.lua"))
	key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
	if err := rdb.Set(ctx, key, "5:other:0:", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		keys []string
		args []any
	}{
		{"plain", []string{key}, []any{"tok", "", 60000, "0"}},
		{"fenced", []string{key, fence}, []any{"tok", "", 60000, "abcd1234"}},
	} {
		reply, err := obtain.Run(ctx, rdb, c.keys, c.args...).Result()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if reply != int64(1) {
			t.Errorf("%s: reply %v on a held key, want 1", c.name, reply)
		}
	}
	if n := rdb.Exists(ctx, fence).Val(); n != 0 {
		t.Errorf("a fenced attempt on a held key wrote the counter")
	}
	reply, err := obtain.Run(ctx, rdb, []string{key}, "tok", "", 60000, "0", "").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if ms := -(reply + 1); ms <= 50000 || ms > 60000 {
		t.Errorf("poll: reply %d, want -(PTTL + 1) for a PTTL near a minute", reply)
	}
	if got := rdb.Get(ctx, key).Val(); got != "5:other:0:" {
		t.Errorf("the held key now holds %q", got)
	}
}

// A Client reuses the memory of the Locks that failed obtains built; the
// Locks it returned stay as they were, whatever the obtains that follow,
// and each holds its own token.
func TestClientReusesOnlyFailedObtains(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	locker := redislock.New(rdb)
	held := redistest.Key(t, "held")
	if _, err := redislock.Obtain(ctx, rdb, held, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 4, 50
	type got struct {
		lock  *redislock.Lock
		token string
	}
	out := make(chan got, workers*rounds)
	errs := make(chan error, workers)
	for w := range workers {
		go func() {
			for r := range rounds {
				if _, err := locker.Obtain(ctx, held, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
					errs <- fmt.Errorf("obtain of the held key: %w", err)
					return
				}
				lock, err := locker.Obtain(ctx, redistest.Key(t, fmt.Sprintf("free-%d-%d", w, r)), time.Minute, nil)
				if err != nil {
					errs <- err
					return
				}
				out <- got{lock, lock.Token()}
			}
			errs <- nil
		}()
	}
	for range workers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	close(out)
	tokens := map[string]bool{}
	for g := range out {
		if g.lock.Token() != g.token || len(g.token) != 22 || tokens[g.token] {
			t.Fatalf("lock of %s: token %q, %q when returned (or seen before)", g.lock.Key(), g.lock.Token(), g.token)
		}
		tokens[g.token] = true
		if v := rdb.Get(ctx, g.lock.Key()).Val(); !strings.HasPrefix(v, "22:"+g.token+":") {
			t.Errorf("key %s holds %q, want the lock's token %s", g.lock.Key(), v, g.token)
		}
		if err := g.lock.Release(ctx); err != nil {
			t.Errorf("Release of %s: %v", g.lock.Key(), err)
		}
	}
	if len(tokens) != workers*rounds {
		t.Errorf("%d locks, want %d", len(tokens), workers*rounds)
	}
}
