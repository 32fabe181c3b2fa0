package redislock_test

import (
	"context"
	"errors"
	"math"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/leaktest"
	"github.com/redislock/redislock/internal/redistest"
)

// badEnv holds the servers and listeners that hostile inputs are sent to.
// All of it exists before the first case, so that each case can check that
// it left no goroutine behind.
type badEnv struct {
	rdb      *redis.Client     // the shared redis-server
	master   *redistest.Server // a private server with a replica, ACL users and a 1 MiB bulk limit
	replica  *redistest.Server
	notRedis string // a TCP port that answers like an HTTP server
	closed   string // a port nothing listens on
}

// client returns a new client of addr for one case (closed by the case):
// one dial attempt, short timeouts.
func (b *badEnv) client(addr string, user string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, Username: user, Password: user,
		Protocol: 2, DisableIdentity: true,
		DialTimeout: time.Second, DialerRetries: 1, ReadTimeout: time.Second, MaxRetries: -1,
	})
}

// badCase is one hostile input. run sends it and returns the error to check;
// it checks itself that nothing was half-written.
type badCase struct {
	name string
	run  func(t *testing.T, b *badEnv) error
	want func(err error) bool
	what string // what want accepts, for the failure message
}

func is(target error) (func(error) bool, string) {
	return func(err error) bool { return errors.Is(err, target) }, "an error matching " + target.Error()
}

func isOK() (func(error) bool, string) {
	return func(err error) bool { return err == nil }, "success (a valid input)"
}

// redisReply accepts a Redis error reply starting with, or (for errors
// raised inside a script) containing, code.
func redisReply(code string) (func(error) bool, string) {
	return func(err error) bool {
		var reply redis.Error
		return errors.As(err, &reply) && (strings.HasPrefix(err.Error(), code) || strings.Contains(err.Error(), code))
	}, "a Redis error reply with " + code
}

func anyError() (func(error) bool, string) {
	return func(err error) bool {
		return err != nil && !errors.Is(err, redislock.ErrNotObtained)
	}, "an error (not ErrNotObtained)"
}

func badCases() []badCase {
	ctx := context.Background()
	ttl := time.Minute
	var cases []badCase
	add := func(name string, want func(error) bool, what string, run func(t *testing.T, b *badEnv) error) {
		cases = append(cases, badCase{name: name, run: run, want: want, what: what})
	}
	// obtainAbsent obtains keys on b.rdb and checks that none of them (nor
	// the fence key) exists afterwards.
	obtainAbsent := func(t *testing.T, b *badEnv, keys []string, ttl time.Duration, opt *redislock.Options) error {
		lock, err := redislock.ObtainMulti(ctx, b.rdb, keys, ttl, opt)
		if lock != nil {
			t.Errorf("got a lock %v with error %v", lock.Keys(), err)
			_ = lock.Release(ctx)
		}
		for _, k := range keys {
			if k != "" && mustExist(t, b.rdb, k) {
				t.Errorf("key %q written", k)
			}
		}
		return err
	}
	// roundTrip obtains, checks the stored value, and releases.
	roundTrip := func(t *testing.T, b *badEnv, key string, ttl time.Duration, opt *redislock.Options) error {
		lock, err := redislock.Obtain(ctx, b.rdb, key, ttl, opt)
		if err != nil {
			return err
		}
		if lock.Key() != key {
			t.Errorf("Key() differs from the key given")
		}
		v := mustGet(t, b.rdb, key)
		var fenceKey string
		if opt != nil {
			fenceKey = opt.FenceKey
		}
		if want := refEncode(lock.Token(), lock.FenceToken(), fenceKey, lock.Metadata()); v != want {
			t.Errorf("stored value differs from the encoding of token, fence and metadata (len %d, want %d)", len(v), len(want))
		}
		if d, err := lock.TTL(ctx); err != nil || d <= 0 {
			t.Errorf("TTL = %v, %v", d, err)
		}
		if err := lock.Release(ctx); err != nil {
			return err
		}
		if mustExist(t, b.rdb, key) {
			t.Error("key left after Release")
		}
		return nil
	}
	// cluster is a Cluster client of an address that is never dialled: the
	// slot checks run before anything is sent.
	crossSlot := func(keys []string, fence string) func(t *testing.T, b *badEnv) error {
		return func(t *testing.T, b *badEnv) error {
			cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{b.closed}, DialerRetries: 1})
			defer cc.Close()
			f := newFaultyClient(cc)
			lock, err := redislock.New(cc).ObtainMulti(ctx, keys, ttl, &redislock.Options{FenceKey: fence})
			if lock != nil || f.calls() != 0 {
				t.Errorf("lock %v, %d calls sent", lock, f.calls())
			}
			return err
		}
	}
	// held obtains key for the case and releases it at the end.
	held := func(t *testing.T, b *badEnv, key string, opt *redislock.Options) *redislock.Lock {
		t.Helper()
		lock, err := redislock.Obtain(ctx, b.rdb, key, ttl, opt)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		t.Cleanup(func() { _ = lock.Release(ctx) })
		return lock
	}
	// otherToken tries to take key, held by holder, with token; the holder's
	// value must be unchanged.
	otherToken := func(t *testing.T, b *badEnv, holder, token string) error {
		key := redistest.Key(t, "lock")
		held(t, b, key, &redislock.Options{Token: holder})
		before := mustGet(t, b.rdb, key)
		lock, err := redislock.Obtain(ctx, b.rdb, key, ttl, &redislock.Options{Token: token})
		if lock != nil {
			t.Errorf("token %q took the lock of %q", token, holder)
		}
		if mustGet(t, b.rdb, key) != before {
			t.Error("the holder's value changed")
		}
		return err
	}

	w, s := is(redislock.ErrInvalidKey)
	add("empty key", w, s, func(t *testing.T, b *badEnv) error {
		return obtainAbsent(t, b, []string{""}, ttl, nil)
	})
	add("nil key list", w, s, func(t *testing.T, b *badEnv) error { return obtainAbsent(t, b, nil, ttl, nil) })
	add("empty key list", w, s, func(t *testing.T, b *badEnv) error { return obtainAbsent(t, b, []string{}, ttl, nil) })
	add("duplicate keys", w, s, func(t *testing.T, b *badEnv) error {
		a, c := redistest.Key(t, "a"), redistest.Key(t, "c")
		return obtainAbsent(t, b, []string{a, c, a}, ttl, nil)
	})
	add("empty key among others", w, s, func(t *testing.T, b *badEnv) error {
		return obtainAbsent(t, b, []string{redistest.Key(t, "a"), ""}, ttl, nil)
	})
	add("fence key equal to the lock key", w, s, func(t *testing.T, b *badEnv) error {
		k := redistest.Key(t, "lock")
		return obtainAbsent(t, b, []string{k}, ttl, &redislock.Options{FenceKey: k})
	})
	add("fence key equal to one of the lock keys", w, s, func(t *testing.T, b *badEnv) error {
		a, c := redistest.Key(t, "a"), redistest.Key(t, "c")
		return obtainAbsent(t, b, []string{a, c}, ttl, &redislock.Options{FenceKey: c})
	})

	w, s = isOK()
	add("huge key (1 MiB)", w, s, func(t *testing.T, b *badEnv) error {
		return roundTrip(t, b, redistest.Key(t, strings.Repeat("k", 1<<20)), ttl, nil)
	})
	add("binary key with separators and braces", w, s, func(t *testing.T, b *badEnv) error {
		return roundTrip(t, b, redistest.Key(t, "\x00\xff\r\n:{}}{:1:"), ttl, nil)
	})
	add("huge TTL (math.MaxInt64, 292 years)", w, s, func(t *testing.T, b *badEnv) error {
		return roundTrip(t, b, redistest.Key(t, "lock"), math.MaxInt64, nil)
	})
	add("huge token (1 MiB)", w, s, func(t *testing.T, b *badEnv) error {
		return roundTrip(t, b, redistest.Key(t, "lock"), ttl, &redislock.Options{Token: strings.Repeat("t", 1<<20)})
	})
	add("binary token with separators", w, s, func(t *testing.T, b *badEnv) error {
		return roundTrip(t, b, redistest.Key(t, "lock"), ttl, &redislock.Options{Token: "\x00:1:\xff:"})
	})
	add("huge metadata (4 MiB)", w, s, func(t *testing.T, b *badEnv) error {
		return roundTrip(t, b, redistest.Key(t, "lock"), ttl, &redislock.Options{Metadata: strings.Repeat("m", 4<<20)})
	})
	add("metadata with separators, binary and a fake value", w, s, func(t *testing.T, b *badEnv) error {
		return roundTrip(t, b, redistest.Key(t, "lock"), ttl, &redislock.Options{Metadata: "3:abc:99:\x00\r\n%d"})
	})

	w, s = is(redislock.ErrCrossSlot)
	add("keys with different hash tags on a Cluster", w, s, crossSlot([]string{"{a}x", "{b}x"}, ""))
	add("unbalanced braces on a Cluster", w, s, crossSlot([]string{"{job:a", "{job:b"}, ""))
	add("empty hash tags on a Cluster", w, s, crossSlot([]string{"{}job:a", "{}job:b"}, ""))
	add("fence key in another slot on a Cluster", w, s, crossSlot([]string{"{job}:lock"}, "}job{:fence"))

	w, s = is(redislock.ErrInvalidTTL)
	for _, d := range []time.Duration{0, -time.Second, time.Millisecond - 1, math.MinInt64} {
		add("TTL "+d.String(), w, s, func(t *testing.T, b *badEnv) error {
			return obtainAbsent(t, b, []string{redistest.Key(t, "lock")}, d, nil)
		})
	}
	for _, d := range []time.Duration{0, -time.Second, 999 * time.Microsecond} {
		add("Refresh with TTL "+d.String(), w, s, func(t *testing.T, b *badEnv) error {
			key := redistest.Key(t, "lock")
			lock := held(t, b, key, nil)
			err := lock.Refresh(ctx, d, nil)
			if pttl := b.rdb.PTTL(ctx, key).Val(); pttl < ttl/2 {
				t.Errorf("PTTL after the refused Refresh = %v, want about %v", pttl, ttl)
			}
			return err
		})
	}

	w, s = is(redislock.ErrNotObtained)
	add("token that is a prefix of the holder's", w, s, func(t *testing.T, b *badEnv) error { return otherToken(t, b, "foobar", "foo") })
	add("token that extends the holder's", w, s, func(t *testing.T, b *badEnv) error { return otherToken(t, b, "foo", "foobar") })
	add("token shaped like an encoded value", w, s, func(t *testing.T, b *badEnv) error { return otherToken(t, b, "foobar", "6:foobar") })
	add("token ending in the holder's separator", w, s, func(t *testing.T, b *badEnv) error { return otherToken(t, b, "a:b", "a") })
	add("lock key holding a foreign string", w, s, func(t *testing.T, b *badEnv) error {
		key := redistest.Key(t, "lock")
		if err := b.rdb.Set(ctx, key, "not a lock", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		_, err := redislock.Obtain(ctx, b.rdb, key, ttl, nil)
		if v := mustGet(t, b.rdb, key); v != "not a lock" {
			t.Errorf("foreign value overwritten: %q", v)
		}
		return err
	})
	add("retry strategy with a negative backoff", w, s, func(t *testing.T, b *badEnv) error {
		key := redistest.Key(t, "lock")
		held(t, b, key, nil)
		_, err := redislock.Obtain(ctx, b.rdb, key, ttl, &redislock.Options{RetryStrategy: redislock.LinearBackoff(-time.Second)})
		return err
	})

	// Typed since issue 32 (item 7): ErrWrongType, wrapping the reply.
	w, s = func(err error) bool {
		var reply redis.Error
		return errors.Is(err, redislock.ErrWrongType) && errors.As(err, &reply)
	}, "ErrWrongType with the Redis error reply"
	add("lock key holding a hash", w, s, func(t *testing.T, b *badEnv) error {
		key := redistest.Key(t, "lock")
		if err := b.rdb.HSet(ctx, key, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
		_, err := redislock.Obtain(ctx, b.rdb, key, ttl, nil)
		if typ := b.rdb.Type(ctx, key).Val(); typ != "hash" {
			t.Errorf("key is now a %s", typ)
		}
		return err
	})
	add("fence key holding a hash", w, s, func(t *testing.T, b *badEnv) error {
		fence := redistest.Key(t, "fence")
		if err := b.rdb.HSet(ctx, fence, "f", "v").Err(); err != nil {
			t.Fatal(err)
		}
		return obtainAbsent(t, b, []string{redistest.Key(t, "lock")}, ttl, &redislock.Options{FenceKey: fence})
	})

	w, s = redisReply("ERR redislock: fence key")
	for _, v := range []string{"text", "nan", "inf", "-inf", "1e300", "9007199254740993", "18446744073709551616", "0x10", " 12", "-5"} {
		add("fence counter "+strconv.Quote(v), w, s, func(t *testing.T, b *badEnv) error {
			fence := redistest.Key(t, "fence")
			if err := b.rdb.Set(ctx, fence, v, 0).Err(); err != nil {
				t.Fatal(err)
			}
			err := obtainAbsent(t, b, []string{redistest.Key(t, "lock")}, ttl, &redislock.Options{FenceKey: fence})
			if got := mustGet(t, b.rdb, fence); got != v {
				t.Errorf("fence counter changed from %q to %q", v, got)
			}
			return err
		})
	}

	w, s = is(redislock.ErrNilClient)
	add("nil client", w, s, func(t *testing.T, b *badEnv) error {
		_, err := redislock.Obtain(ctx, nil, "k", ttl, nil)
		return err
	})
	add("typed nil *redis.Client", w, s, func(t *testing.T, b *badEnv) error {
		var rdb *redis.Client
		_, err := redislock.New(rdb).Obtain(ctx, "k", ttl, nil)
		return err
	})
	add("typed nil *redis.ClusterClient", w, s, func(t *testing.T, b *badEnv) error {
		var rdb *redis.ClusterClient
		_, err := redislock.New(rdb).ObtainMulti(ctx, []string{"{a}1", "{a}2"}, ttl, nil)
		return err
	})
	add("nil *Client", w, s, func(t *testing.T, b *badEnv) error {
		var c *redislock.Client
		_, err := c.Obtain(ctx, "k", ttl, nil)
		return err
	})
	add("zero Lock value", w, s, func(t *testing.T, b *badEnv) error {
		var l redislock.Lock
		if _, err := l.TTL(ctx); !errors.Is(err, redislock.ErrNilClient) {
			t.Errorf("TTL: %v", err)
		}
		if err := l.Refresh(ctx, ttl, nil); !errors.Is(err, redislock.ErrNilClient) {
			t.Errorf("Refresh: %v", err)
		}
		return l.Release(ctx)
	})

	w, s = is(redislock.ErrNilContext)
	add("nil context", w, s, func(t *testing.T, b *badEnv) error {
		key := redistest.Key(t, "lock")
		var nilCtx context.Context
		lock := held(t, b, key, nil)
		if _, err := lock.TTL(nilCtx); !errors.Is(err, redislock.ErrNilContext) {
			t.Errorf("TTL: %v", err)
		}
		if err := lock.Refresh(nilCtx, ttl, nil); !errors.Is(err, redislock.ErrNilContext) {
			t.Errorf("Refresh: %v", err)
		}
		if err := lock.Release(nilCtx); !errors.Is(err, redislock.ErrNilContext) {
			t.Errorf("Release: %v", err)
		}
		if !mustExist(t, b.rdb, key) {
			t.Error("the lock is gone")
		}
		other := redistest.Key(t, "other")
		_, err := redislock.Obtain(nilCtx, b.rdb, other, ttl, nil)
		if mustExist(t, b.rdb, other) {
			t.Error("obtained with a nil context")
		}
		return err
	})
	add("cancelled context", func(err error) bool {
		return errors.Is(err, redislock.ErrNotObtained) && errors.Is(err, context.Canceled)
	}, "an error matching both ErrNotObtained and context.Canceled", func(t *testing.T, b *badEnv) error {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		key := redistest.Key(t, "lock")
		lock, err := redislock.Obtain(cctx, b.rdb, key, ttl, nil)
		if lock != nil || mustExist(t, b.rdb, key) {
			t.Error("obtained with a cancelled context")
		}
		return err
	})

	w, s = redisReply("READONLY")
	add("client of a replica", w, s, func(t *testing.T, b *badEnv) error {
		rc := b.client(b.replica.Addr(), "")
		defer rc.Close()
		key := redistest.Key(t, "lock")
		_, err := redislock.Obtain(ctx, rc, key, ttl, &redislock.Options{FenceKey: key + ":fence"})
		if n := b.master.Client(t).DBSize(ctx).Val(); n != 0 {
			t.Errorf("%d keys on the master", n)
		}
		return err
	})
	w, s = redisReply("NOPERM")
	add("ACL user without scripts", w, s, func(t *testing.T, b *badEnv) error {
		c := b.client(b.master.Addr(), "noscripts")
		defer c.Close()
		_, err := redislock.Obtain(ctx, c, "locks:job", ttl, nil)
		if n := b.master.Client(t).DBSize(ctx).Val(); n != 0 {
			t.Errorf("%d keys on the server", n)
		}
		return err
	})
	add("ACL user without access to the keys", w, s, func(t *testing.T, b *badEnv) error {
		c := b.client(b.master.Addr(), "otherkeys")
		defer c.Close()
		_, err := redislock.Obtain(ctx, c, "locks:job", ttl, &redislock.Options{FenceKey: "locks:job:fence"})
		if n := b.master.Client(t).DBSize(ctx).Val(); n != 0 {
			t.Errorf("%d keys on the server", n)
		}
		return err
	})
	w, s = anyError()
	// The server answers "ERR Protocol error" and closes the connection,
	// which the client may see first (a reset while it still writes).
	add("key above the server's proto-max-bulk-len", w, s, func(t *testing.T, b *badEnv) error {
		c := b.client(b.master.Addr(), "")
		defer c.Close()
		_, err := redislock.Obtain(ctx, c, strings.Repeat("k", 1<<20+1), ttl, nil)
		if n := b.master.Client(t).DBSize(ctx).Val(); n != 0 {
			t.Errorf("%d keys on the server", n)
		}
		return err
	})
	add("port that is not Redis", w, s, func(t *testing.T, b *badEnv) error {
		c := b.client(b.notRedis, "")
		defer c.Close()
		_, err := redislock.Obtain(ctx, c, "k", ttl, nil)
		return err
	})
	add("port nothing listens on", w, s, func(t *testing.T, b *badEnv) error {
		c := b.client(b.closed, "")
		defer c.Close()
		_, err := redislock.Obtain(ctx, c, "k", ttl, nil)
		return err
	})
	return cases
}

// TestBadInput sends hostile inputs across the API. Each must give a clear
// error of the expected kind (or, for inputs that are valid however odd,
// work), write nothing, not panic, and leave no goroutine behind. It is not
// parallel, so that leaktest sees its goroutines alone.
func TestBadInput(t *testing.T) {
	b := &badEnv{rdb: redistest.Standalone(t)}
	// NewReplicated returns once the replica's link is up: a replica still
	// loading its first sync answers LOADING, not READONLY.
	b.master, b.replica = redistest.NewReplicated(t, redistest.Redis, "--proto-max-bulk-len", "1mb")
	admin := b.master.Client(t)
	ctx := context.Background()
	for _, rule := range [][]any{
		{"ACL", "SETUSER", "noscripts", "on", ">noscripts", "~*", "+@all", "-eval", "-evalsha", "-eval_ro", "-evalsha_ro", "-fcall"},
		{"ACL", "SETUSER", "otherkeys", "on", ">otherkeys", "~other:*", "+@all"},
	} {
		if err := admin.Do(ctx, rule...).Err(); err != nil {
			t.Fatalf("%v: %v", rule, err)
		}
	}
	b.notRedis = redistest.ServeTCP(t, func(c net.Conn) {
		// Answers like an HTTP server and hangs up.
		_, _ = c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
		_ = c.Close()
	})
	b.closed = redistest.DeadAddr(t)

	cases := badCases()
	if len(cases) < 25 {
		t.Fatalf("%d cases, want at least 25", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ignore := leaktest.Now()
			var err error
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Errorf("panic: %v", p)
					}
				}()
				err = tc.run(t, b)
			}()
			if !tc.want(err) {
				t.Errorf("got %v, want %s", err, tc.what)
			}
			if err != nil && err.Error() == "" {
				t.Error("error with an empty message")
			}
			leaktest.Check(t, ignore)
		})
	}
	t.Logf("%d hostile inputs", len(cases))
}
