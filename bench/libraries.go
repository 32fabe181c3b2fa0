package main

import (
	"context"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // G505: the fence key's tag, as this library's, not a security measure
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	bsm "github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/redis/rueidis/rueidislock"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/bench/contention"
)

// ttl is the TTL of every lock the libraries that take one obtain: far
// above every hold, so that no lock expires during a workload. redsync
// (8 s) and rueidislock (5 s, extended in the background) keep their
// defaults.
const ttl = time.Minute

// hotTTL is the TTL in the hot-key runs, as in make bench-contention:
// WaitForRelease blocks for at most half of it.
const hotTTL = 5 * time.Second

// library is one way of taking a lock: a lock library, or the raw go-redis
// floor.
type library struct {
	// Name labels the library in the tables.
	Name string
	// Module is the module whose version the report prints ("" for none).
	Module string
	// Client names the Redis client the library runs on.
	Client string
	// Waiting describes the waiting setting of the hot-key runs; "" when
	// the library does not take part in them.
	Waiting string
	// Connect opens a new client of the server at addr, with its own
	// connections. counter, if not nil, counts the round trips it sends.
	Connect func(addr string, counter *contention.Counter) (conn, error)
	// Only names the micro workloads (workOR1, …) that the library takes
	// part in, and it then takes part in no other workload (hot key,
	// memory); nil for all. A variant of another row uses it.
	Only []string
}

// takesPart reports whether the library takes part in micro workload id.
func (l library) takesPart(id string) bool {
	return l.Only == nil || slices.Contains(l.Only, id)
}

// fullLibraries returns the libraries that take part in every workload.
func fullLibraries(libs []library) []library {
	return slices.DeleteFunc(slices.Clone(libs), func(l library) bool { return l.Only != nil })
}

// conn is a library bound to one client. Its methods that return a
// function build, once per goroutine, what a loop then calls: the calls
// themselves add nothing to what the library does.
type conn interface {
	// ObtainRelease returns a function that obtains the lock on key,
	// without waiting, and releases it.
	ObtainRelease(key string) func(context.Context) error
	// Hold obtains the lock on key without waiting and returns its release.
	Hold(ctx context.Context, key string) (release func(context.Context) error, err error)
	// TryHeld returns a function that makes one attempt, without retry, on
	// key, which another holds: nil when the attempt failed as it should.
	TryHeld(key string) func(context.Context) error
	// Refresh obtains the lock on key and returns a function that extends
	// it, and its release; refresh is nil when the library has no refresh
	// call.
	Refresh(ctx context.Context, key string) (refresh, release func(context.Context) error, err error)
	// Wait returns the obtain function of one hot-key worker: it waits for
	// key with the library's recommended setting, counting each time the
	// library gives up (and the worker calls it again) in gaveUp. Nil when
	// the library does not take part in the hot-key runs.
	Wait(key string, gaveUp *atomic.Int64) contention.ObtainFunc
	// Close closes the client.
	Close()
}

// errObtainedHeld reports an attempt on a held key that succeeded.
var errObtainedHeld = errors.New("obtained a key that another holds")

// libraries returns the libraries compared, the floor first.
func libraries() []library {
	return []library{
		{
			Name: floorName, Module: "github.com/redis/go-redis/v9", Client: "go-redis",
			Waiting: "the floor of a fair handover, not a lock (no TTL, no ownership check): one token on a list; " +
				"BLPOP takes it, a pipeline of RPUSH and PEXPIRE (one round trip) hands it on; the first Obtain " +
				"of a run seeds it with SET NX. Redis serves the client blocked longest first. On a client of its own " +
				"with a pool of 128 connections, since each waiting worker blocks one",
			Connect: func(addr string, counter *contention.Counter) (conn, error) {
				return rawConn{rdb: newGoRedis(addr, counter), ring: newGoRedisPool(addr, counter, 128)}, nil
			},
		},
		{
			Name: "redislock (this)", Module: "github.com/redislock/redislock", Client: "go-redis",
			Waiting: "WaitForRelease(nil)",
			Connect: func(addr string, counter *contention.Counter) (conn, error) {
				rdb := newGoRedis(addr, counter)
				return oursConn{rdb: rdb, locker: redislock.New(rdb)}, nil
			},
		},
		{
			Name: fencedName, Module: "github.com/redislock/redislock", Client: "go-redis",
			Only: []string{workOR1, workORN},
			Connect: func(addr string, counter *contention.Counter) (conn, error) {
				rdb := newGoRedis(addr, counter)
				return oursConn{rdb: rdb, locker: redislock.New(rdb), fenced: true}, nil
			},
		},
		{
			Name: fencedFloorName, Module: "github.com/redis/go-redis/v9", Client: "go-redis",
			Only: []string{workOR1, workORN},
			Connect: func(addr string, counter *contention.Counter) (conn, error) {
				return rawConn{rdb: newGoRedis(addr, counter), fenced: true}, nil
			},
		},
		{
			Name: perLockFloorName, Module: "github.com/redis/go-redis/v9", Client: "go-redis",
			Only: []string{workOR1, workORN},
			Connect: func(addr string, counter *contention.Counter) (conn, error) {
				return rawConn{rdb: newGoRedis(addr, counter), fenced: true, tokened: true}, nil
			},
		},
		{
			Name: intFloorName, Module: "github.com/redis/go-redis/v9", Client: "go-redis",
			Only: []string{workFailed},
			Connect: func(addr string, counter *contention.Counter) (conn, error) {
				return rawConn{rdb: newGoRedis(addr, counter), intReply: true}, nil
			},
		},
		{
			Name: "bsm/redislock", Module: "github.com/bsm/redislock", Client: "go-redis",
			Waiting: "LimitRetry(LinearBackoff(100ms), 3), called again on ErrNotObtained",
			Connect: func(addr string, counter *contention.Counter) (conn, error) {
				rdb := newGoRedis(addr, counter)
				return bsmConn{rdb: rdb, locker: bsm.New(rdb)}, nil
			},
		},
		{
			Name: "redsync", Module: "github.com/go-redsync/redsync/v4", Client: "go-redis (goredis/v9 pool)",
			Waiting: "defaults: 32 tries, 50–250 ms random delay; LockContext called again on failure",
			Connect: func(addr string, counter *contention.Counter) (conn, error) {
				rdb := newGoRedis(addr, counter)
				return redsyncConn{rdb: rdb, rs: redsync.New(goredis.NewPool(rdb))}, nil
			},
		},
		{
			Name: "rueidislock", Module: "github.com/redis/rueidis", Client: "rueidis (its own client)",
			Waiting: "WithContext (waits for client-side-caching invalidations), called again after 1 s without one",
			Connect: newRueidisConn,
		},
	}
}

func newGoRedis(addr string, counter *contention.Counter) *redis.Client {
	return newGoRedisPool(addr, counter, 0)
}

// newGoRedisPool is newGoRedis with a pool of size connections (0: go-redis's default).
func newGoRedisPool(addr string, counter *contention.Counter, size int) *redis.Client {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: size})
	if counter != nil {
		rdb.AddHook(counter)
	}
	return rdb
}

// The raw floor: the same atomic work as one plain go-redis script call
// per operation, with a fixed token (as in the root module's
// bench_test.go). It has no waiting of its own.
var (
	rawObtain  = redis.NewScript(`return redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`)
	rawRelease = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	rawRefresh = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
	// rawFencedObtain is the floor of a fenced obtain with this library's
	// guarantee (tokens strictly increase, and never fall below the
	// server's time in µs, so that a lost counter does not take them
	// back): the server's TIME, the key's SET NX, and the counter's SET …
	// GET, a second SET of each only when the counter is at or ahead of the
	// clock. The key holds "<token>:<fence>"; it replies the fence, or 0
	// when the key is held. No check of the counter's content.
	rawFencedObtain = redis.NewScript(`local t = redis.call("TIME")
local now = t[1] * 1000000 + t[2]
local s = string.format("%d", now)
if not redis.call("SET", KEYS[1], ARGV[1] .. ":" .. s, "NX", "PX", ARGV[2]) then return 0 end
local cur = tonumber(redis.call("SET", KEYS[2], s, "GET"))
if cur and cur >= now then
  now = cur + 1
  s = string.format("%d", now)
  redis.call("SET", KEYS[2], s)
  redis.call("SET", KEYS[1], ARGV[1] .. ":" .. s, "PX", ARGV[2])
end
return now`)
	// rawFencedRelease deletes a key of rawFencedObtain that holds the token.
	rawFencedRelease = redis.NewScript(`local v = redis.call("GET", KEYS[1])
if v and string.sub(v, 1, #ARGV[1] + 1) == ARGV[1] .. ":" then return redis.call("DEL", KEYS[1]) end
return 0`)
	// rawObtainInt replies an integer and takes the arguments of this
	// library's obtain script (token, metadata, TTL, fence flag): the floor
	// of a failed obtain of that shape, which costs go-redis no redis.Nil
	// error.
	rawObtainInt = redis.NewScript(`if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return 1 end return 0`)
)

// The names of the variants' rows.
const (
	floorName        = "raw go-redis (floor)"
	fencedName       = "redislock (this), FenceKey"
	fencedFloorName  = "raw go-redis, fenced"
	perLockFloorName = "raw go-redis, fenced, token per lock"
	intFloorName     = "raw go-redis, integer reply"
)

const rawToken = "0123456789abcdefghijkl" // 22 characters, as this library's tokens

type rawConn struct {
	rdb      *redis.Client
	ring     *redis.Client // the hot-key floor's, nil in the other variants
	intReply bool          // TryHeld with rawObtainInt
	fenced   bool          // ObtainRelease with rawFencedObtain and a counter of the goroutine's own
	// tokened: the fenced ObtainRelease with what any lock library adds
	// on the client (rawLock): a token generated for each lock, and a
	// lock value of its own that holds it, the keys and the fence key's
	// tag.
	tokened bool
}

// rawLock is the least a lock library keeps of a held lock: the fenced
// floor with it is the least a library with generated tokens costs. It is
// 472 bytes, padded so that the allocator serves it from the 480-byte
// size class, as this library's handle.
type rawLock struct {
	keys  []string
	owner [22]byte // base64url of 16 bytes from crypto/rand
	tag   [8]byte  // hex of the first 4 bytes of the fence key's SHA-1
	args  [4]any
	fence int64
	_     [344]byte
}

// newRawLock returns the lock of keys (the lock key, then its fence key)
// with a new token.
func newRawLock(keys []string) *rawLock {
	l := &rawLock{keys: keys}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	base64.RawURLEncoding.Encode(l.owner[:], raw[:])
	sum := sha1.Sum([]byte(keys[1])) //nolint:gosec // G401: a tag, as this library's, not a security measure
	hex.Encode(l.tag[:], sum[:4])
	l.args[0] = string(l.owner[:])
	return l
}

func (c rawConn) ObtainRelease(key string) func(context.Context) error {
	if c.fenced {
		keys := []string{key, key + ":fence"}
		if c.tokened {
			return func(ctx context.Context) error {
				l := newRawLock(keys)
				n, err := c.fencedPair(ctx, l.keys, l.args[0])
				l.fence = n
				return err
			}
		}
		return func(ctx context.Context) error {
			_, err := c.fencedPair(ctx, keys, rawToken)
			return err
		}
	}
	keys := []string{key}
	return func(ctx context.Context) error {
		if err := rawObtain.Run(ctx, c.rdb, keys, rawToken, 60000).Err(); err != nil {
			return err
		}
		if n, err := rawRelease.Run(ctx, c.rdb, keys, rawToken).Int64(); err != nil {
			return fmt.Errorf("release: %w", err)
		} else if n != 1 {
			return fmt.Errorf("release: %d, want 1", n)
		}
		return nil
	}
}

// fencedPair obtains keys (the lock key, then its fence key) with
// rawFencedObtain for token and releases them; it returns the fence.
func (c rawConn) fencedPair(ctx context.Context, keys []string, token any) (int64, error) {
	fence, err := rawFencedObtain.Run(ctx, c.rdb, keys, token, 60000).Int64()
	if err != nil {
		return 0, err
	} else if fence == 0 {
		return 0, errors.New("fenced obtain: the key is held")
	}
	if n, err := rawFencedRelease.Run(ctx, c.rdb, keys[:1], token).Int64(); err != nil {
		return fence, fmt.Errorf("release: %w", err)
	} else if n != 1 {
		return fence, fmt.Errorf("release: %d, want 1", n)
	}
	return fence, nil
}

func (c rawConn) Hold(ctx context.Context, key string) (func(context.Context) error, error) {
	keys := []string{key}
	if err := rawObtain.Run(ctx, c.rdb, keys, rawToken, 60000).Err(); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error { return rawRelease.Run(ctx, c.rdb, keys, rawToken).Err() }, nil
}

func (c rawConn) TryHeld(key string) func(context.Context) error {
	keys := []string{key}
	if c.intReply {
		return func(ctx context.Context) error {
			n, err := rawObtainInt.Run(ctx, c.rdb, keys, "another-token-456789abc", "", 60000, "0").Int64()
			switch {
			case err != nil:
				return err
			case n != 0:
				return errObtainedHeld
			}
			return nil
		}
	}
	return func(ctx context.Context) error {
		err := rawObtain.Run(ctx, c.rdb, keys, "another-token-456789abc", 60000).Err()
		if errors.Is(err, redis.Nil) {
			return nil
		}
		if err == nil {
			return errObtainedHeld
		}
		return err
	}
}

func (c rawConn) Refresh(ctx context.Context, key string) (func(context.Context) error, func(context.Context) error, error) {
	release, err := c.Hold(ctx, key)
	if err != nil {
		return nil, nil, err
	}
	keys := []string{key}
	refresh := func(ctx context.Context) error {
		if n, err := rawRefresh.Run(ctx, c.rdb, keys, rawToken, 60000).Int64(); err != nil {
			return fmt.Errorf("refresh: %w", err)
		} else if n != 1 {
			return fmt.Errorf("refresh: %d, want 1", n)
		}
		return nil
	}
	return refresh, release, nil
}

// Wait returns the hot-key floor: the least a fair handover costs, a
// client blocked on a list that the releaser pushes to. It is no lock: no
// TTL bounds a holder, and a token pushed twice would make two holders.
// Each worker seeds the list's token once: the first SET NX of the run
// (on key itself) makes its caller the holder; every other worker then
// only blocks. It never gives up: a BLPOP that times out (1 s, so that the
// end of the run is seen) blocks again.
func (c rawConn) Wait(key string, _ *atomic.Int64) contention.ObtainFunc {
	if c.ring == nil {
		return nil
	}
	ring := key + ":ring"
	release := func(ctx context.Context) error {
		p := c.ring.Pipeline()
		p.RPush(ctx, ring, rawToken)
		p.PExpire(ctx, ring, ttl)
		_, err := p.Exec(ctx)
		return err
	}
	seeded := false // this worker's: whether its SET NX ran
	return func(ctx context.Context) (func(context.Context) error, error) {
		if !seeded {
			// Longer than any run: the token must not be seeded twice.
			ok, err := c.ring.SetNX(ctx, key, rawToken, 10*ttl).Result()
			if err != nil {
				return nil, err
			}
			seeded = true
			if ok {
				return release, nil
			}
		}
		for {
			err := c.ring.BLPop(ctx, time.Second, ring).Err()
			switch {
			case err == nil:
				return release, nil
			case !errors.Is(err, redis.Nil):
				return nil, err
			case ctx.Err() != nil:
				return nil, ctx.Err()
			}
		}
	}
}

func (c rawConn) Close() {
	_ = c.rdb.Close()
	if c.ring != nil {
		_ = c.ring.Close()
	}
}

// This library, with default options (or a FenceKey, a counter of the
// goroutine's own); WaitForRelease in the hot-key runs.
type oursConn struct {
	rdb    *redis.Client
	locker *redislock.Client
	fenced bool
}

func (c oursConn) ObtainRelease(key string) func(context.Context) error {
	var opt *redislock.Options
	if c.fenced {
		opt = &redislock.Options{FenceKey: key + ":fence"}
	}
	return func(ctx context.Context) error {
		lock, err := c.locker.Obtain(ctx, key, ttl, opt)
		if err != nil {
			return err
		}
		return lock.Release(ctx)
	}
}

func (c oursConn) Hold(ctx context.Context, key string) (func(context.Context) error, error) {
	lock, err := c.locker.Obtain(ctx, key, ttl, nil)
	if err != nil {
		return nil, err
	}
	return lock.Release, nil
}

func (c oursConn) TryHeld(key string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.locker.Obtain(ctx, key, ttl, nil)
		if errors.Is(err, redislock.ErrNotObtained) {
			return nil
		}
		if err == nil {
			return errObtainedHeld
		}
		return err
	}
}

func (c oursConn) Refresh(ctx context.Context, key string) (func(context.Context) error, func(context.Context) error, error) {
	lock, err := c.locker.Obtain(ctx, key, ttl, nil)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) error { return lock.Refresh(ctx, ttl, nil) }, lock.Release, nil
}

func (c oursConn) Wait(key string, _ *atomic.Int64) contention.ObtainFunc {
	if c.fenced {
		return nil // a variant of the micro workloads only
	}
	return oursObtain(c.locker, key, &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)})
}

func (c oursConn) Close() { _ = c.rdb.Close() }

// bsm/redislock v0.10.0, with default options; in the hot-key runs, the
// retry of its documentation's example (ExampleClient_Obtain_retry: "Retry
// every 100ms, for up-to 3x"). Its LimitRetry counts in the strategy
// value, so every call gets a new one.
type bsmConn struct {
	rdb    *redis.Client
	locker *bsm.Client
}

func (c bsmConn) ObtainRelease(key string) func(context.Context) error {
	return func(ctx context.Context) error {
		lock, err := c.locker.Obtain(ctx, key, ttl, nil)
		if err != nil {
			return err
		}
		return lock.Release(ctx)
	}
}

func (c bsmConn) Hold(ctx context.Context, key string) (func(context.Context) error, error) {
	lock, err := c.locker.Obtain(ctx, key, ttl, nil)
	if err != nil {
		return nil, err
	}
	return lock.Release, nil
}

func (c bsmConn) TryHeld(key string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, err := c.locker.Obtain(ctx, key, ttl, nil)
		if errors.Is(err, bsm.ErrNotObtained) {
			return nil
		}
		if err == nil {
			return errObtainedHeld
		}
		return err
	}
}

func (c bsmConn) Refresh(ctx context.Context, key string) (func(context.Context) error, func(context.Context) error, error) {
	lock, err := c.locker.Obtain(ctx, key, ttl, nil)
	if err != nil {
		return nil, nil, err
	}
	return func(ctx context.Context) error { return lock.Refresh(ctx, ttl, nil) }, lock.Release, nil
}

func (c bsmConn) Wait(key string, gaveUp *atomic.Int64) contention.ObtainFunc {
	return func(ctx context.Context) (func(context.Context) error, error) {
		for {
			opt := &bsm.Options{RetryStrategy: bsm.LimitRetry(bsm.LinearBackoff(100*time.Millisecond), 3)}
			lock, err := c.locker.Obtain(ctx, key, hotTTL, opt)
			if err == nil {
				return lock.Release, nil
			}
			if !errors.Is(err, bsm.ErrNotObtained) || ctx.Err() != nil {
				return nil, err
			}
			gaveUp.Add(1)
		}
	}
}

func (c bsmConn) Close() { _ = c.rdb.Close() }

// redsync v4 on one goredis/v9 pool (quorum 1), with default options. A
// Mutex holds the state of one acquisition and is not safe for concurrent
// use, so each acquisition makes its own (NewMutex), as a request handler
// would.
type redsyncConn struct {
	rdb *redis.Client
	rs  *redsync.Redsync
}

func (c redsyncConn) ObtainRelease(key string) func(context.Context) error {
	return func(ctx context.Context) error {
		m := c.rs.NewMutex(key)
		if err := m.TryLockContext(ctx); err != nil {
			return err
		}
		if ok, err := m.UnlockContext(ctx); err != nil {
			return fmt.Errorf("unlock: %w", err)
		} else if !ok {
			return errors.New("unlock: not held")
		}
		return nil
	}
}

func (c redsyncConn) Hold(ctx context.Context, key string) (func(context.Context) error, error) {
	m := c.rs.NewMutex(key)
	if err := m.TryLockContext(ctx); err != nil {
		return nil, err
	}
	return func(ctx context.Context) error {
		_, err := m.UnlockContext(ctx)
		return err
	}, nil
}

func (c redsyncConn) TryHeld(key string) func(context.Context) error {
	return func(ctx context.Context) error {
		err := c.rs.NewMutex(key).TryLockContext(ctx)
		var taken *redsync.ErrTaken
		if errors.As(err, &taken) {
			return nil
		}
		if err == nil {
			return errObtainedHeld
		}
		return err
	}
}

func (c redsyncConn) Refresh(ctx context.Context, key string) (func(context.Context) error, func(context.Context) error, error) {
	m := c.rs.NewMutex(key)
	if err := m.TryLockContext(ctx); err != nil {
		return nil, nil, err
	}
	refresh := func(ctx context.Context) error {
		if ok, err := m.ExtendContext(ctx); err != nil {
			return fmt.Errorf("extend: %w", err)
		} else if !ok {
			return errors.New("extend: not held")
		}
		return nil
	}
	release := func(ctx context.Context) error {
		_, err := m.UnlockContext(ctx)
		return err
	}
	return refresh, release, nil
}

func (c redsyncConn) Wait(key string, gaveUp *atomic.Int64) contention.ObtainFunc {
	return func(ctx context.Context) (func(context.Context) error, error) {
		for {
			m := c.rs.NewMutex(key)
			err := m.LockContext(ctx)
			if err == nil {
				return func(ctx context.Context) error {
					_, err := m.UnlockContext(ctx)
					return err
				}, nil
			}
			if ctx.Err() != nil {
				return nil, err
			}
			gaveUp.Add(1)
		}
	}
}

func (c redsyncConn) Close() { _ = c.rdb.Close() }

// rueidislock, configured as its README says for one Redis 7.0.5 or later:
// KeyMajority 1 and NoLoopTracking; TryNextAfter 1 s (see below). It runs on its own rueidis client
// (client-side caching, auto-pipelining on one connection), not go-redis.
// The lock is the context WithContext returns; its cancel releases it and
// waits for the release. It has no refresh call: a goroutine per lock
// extends it every KeyValidity/2 (2.5 s).
type rueidisConn struct{ locker rueidislock.Locker }

func newRueidisConn(addr string, counter *contention.Counter) (conn, error) {
	opt := rueidislock.LockerOption{
		ClientOption:   rueidis.ClientOption{InitAddress: []string{addr}},
		KeyMajority:    1,
		NoLoopTracking: true,
		// Its default, 20 ms, bounds each attempt (with one key, the next
		// key is none): on two shared, loaded cores a failed attempt
		// outlived it and ended a run with "context deadline exceeded".
		TryNextAfter: time.Second,
	}
	if counter != nil {
		opt.ClientBuilder = func(o rueidis.ClientOption) (rueidis.Client, error) {
			c, err := rueidis.NewClient(o)
			if err != nil {
				return nil, err
			}
			return countingClient{Client: c, counter: counter}, nil
		}
	}
	locker, err := rueidislock.NewLocker(opt)
	if err != nil {
		return nil, err
	}
	return rueidisConn{locker}, nil
}

// released adapts a rueidislock cancel function: it releases the lock and
// waits for the release script to return.
func released(cancel context.CancelFunc) func(context.Context) error {
	return func(context.Context) error {
		cancel()
		return nil
	}
}

func (c rueidisConn) ObtainRelease(key string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, cancel, err := c.locker.WithContext(ctx, key)
		if err != nil {
			return err
		}
		cancel()
		return nil
	}
}

func (c rueidisConn) Hold(ctx context.Context, key string) (func(context.Context) error, error) {
	_, cancel, err := c.locker.TryWithContext(ctx, key)
	if err != nil {
		return nil, err
	}
	return released(cancel), nil
}

func (c rueidisConn) TryHeld(key string) func(context.Context) error {
	return func(ctx context.Context) error {
		_, cancel, err := c.locker.TryWithContext(ctx, key)
		if errors.Is(err, rueidislock.ErrNotLocked) {
			return nil
		}
		if err == nil {
			cancel()
			return errObtainedHeld
		}
		return err
	}
}

func (c rueidisConn) Refresh(ctx context.Context, key string) (func(context.Context) error, func(context.Context) error, error) {
	release, err := c.Hold(ctx, key)
	return nil, release, err
}

// rueidisRewait bounds one WithContext call of rueidisConn.Wait.
const rueidisRewait = time.Second

// Wait waits with WithContext, which returns only on an invalidation of
// the key (or when its context ends). A release whose invalidation the
// waiter misses (seen in CI: TestLibraries's waiter made one attempt and
// waited until its 10 s deadline) would stall it for good: each call
// gets rueidisRewait, then Wait calls again, as the other libraries' waits
// are called again when they give up. The lock's context is the call's
// (rueidislock releases the lock when it ends), so a call's context is
// cancelled only when that call has not obtained; a lock obtained as its
// call's time ran out is released, and Wait calls again.
func (c rueidisConn) Wait(key string, _ *atomic.Int64) contention.ObtainFunc {
	return func(ctx context.Context) (func(context.Context) error, error) {
		for {
			call, stop := context.WithCancel(ctx)
			timer := time.AfterFunc(rueidisRewait, stop)
			_, cancel, err := c.locker.WithContext(call, key)
			inTime := timer.Stop()
			switch {
			case err == nil && inTime:
				return func(ctx context.Context) error {
					err := released(cancel)(ctx)
					stop()
					return err
				}, nil
			case err == nil:
				cancel() // obtained as its call ended: released already
			case ctx.Err() != nil || inTime:
				stop()
				return nil, err
			}
			stop()
		}
	}
}

func (c rueidisConn) Close() { c.locker.Close() }

// countingClient counts the commands a rueidis client sends: each call
// one round trip, however rueidis pipelines calls of different goroutines
// together.
type countingClient struct {
	rueidis.Client
	counter *contention.Counter
}

func (c countingClient) Do(ctx context.Context, cmd rueidis.Completed) rueidis.RedisResult {
	c.counter.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c countingClient) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	c.counter.Add(len(multi))
	return c.Client.DoMulti(ctx, multi...)
}

func (c countingClient) DoCache(ctx context.Context, cmd rueidis.Cacheable, ttl time.Duration) rueidis.RedisResult {
	c.counter.Add(1)
	return c.Client.DoCache(ctx, cmd, ttl)
}

func (c countingClient) DoMultiCache(ctx context.Context, multi ...rueidis.CacheableTTL) []rueidis.RedisResult {
	c.counter.Add(len(multi))
	return c.Client.DoMultiCache(ctx, multi...)
}
