package compat_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	bsm "github.com/bsm/redislock"
	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// The drop-in table: code written against github.com/bsm/redislock v0.10.0
// must behave the same on this package (the drop-in contract; the
// maintainers' SPEC numbers its rules, and docs/migrating-from-bsm.md lists
// the differences for users). Each row runs the same
// steps through both libraries, on the same server, with keys of its own,
// and renders what a caller can observe (return values, errors, the keys
// left in Redis) as a string; the two strings must be equal, and equal to
// the row's want. Where this package differs on purpose, the row says why
// (a defect of the reference that SPEC section 4 lists, or a rule of
// SPEC section 2) and gives the reference's result in theirs.
//
// Expiry states are forced, never waited for: a key is made to expire with
// PEXPIRE key 1 (redistest.ExpireNow), given a known expiry with PEXPIRE, or its
// PTTL is pinned to a value through pttlPinner, which makes the scripts of
// both libraries see that PTTL on the real server.

// dropinLib is one of the two libraries, behind the surface they share.
type dropinLib struct {
	name        string
	obtainMulti func(ctx context.Context, rdb redis.Scripter, keys []string, ttl time.Duration, o dropinOptions) (dropinLock, error)
	noRetry     func() dropinStrategy
	linear      func(time.Duration) dropinStrategy
	exponential func(min, max time.Duration) dropinStrategy
	limit       func(dropinStrategy, int) dropinStrategy
	errName     func(error) string
}

// dropinOptions are the Options fields both libraries have. retry, when
// set, builds the strategy with the library's own constructors; the
// strategy of one dropinOptions is built once, so that a reused value
// reuses it, as a reused Options value would.
type dropinOptions struct {
	Token    string
	Metadata string
	Retry    dropinStrategy
}

// dropinStrategy is RetryStrategy: the interface is the same in both.
type dropinStrategy interface{ NextBackoff() time.Duration }

// dropinLock is the Lock surface both libraries have.
type dropinLock interface {
	Key() string
	Keys() []string
	Token() string
	Metadata() string
	TTL(ctx context.Context) (time.Duration, error)
	Refresh(ctx context.Context, ttl time.Duration, o dropinOptions) error
	Release(ctx context.Context) error
}

type oursLock struct{ *redislock.Lock }

func (l oursLock) Refresh(ctx context.Context, ttl time.Duration, o dropinOptions) error {
	return l.Lock.Refresh(ctx, ttl, &redislock.Options{RetryStrategy: o.Retry})
}

type theirsLock struct{ *bsm.Lock }

func (l theirsLock) Refresh(ctx context.Context, ttl time.Duration, o dropinOptions) error {
	return l.Lock.Refresh(ctx, ttl, &bsm.Options{RetryStrategy: o.Retry})
}

var ours = &dropinLib{
	name: "ours",
	obtainMulti: func(ctx context.Context, rdb redis.Scripter, keys []string, ttl time.Duration, o dropinOptions) (dropinLock, error) {
		l, err := redislock.ObtainMulti(ctx, rdb, keys, ttl, &redislock.Options{Token: o.Token, Metadata: o.Metadata, RetryStrategy: o.Retry})
		if err != nil {
			return nil, err
		}
		return oursLock{l}, nil
	},
	noRetry:     func() dropinStrategy { return redislock.NoRetry() },
	linear:      func(d time.Duration) dropinStrategy { return redislock.LinearBackoff(d) },
	exponential: func(min, max time.Duration) dropinStrategy { return redislock.ExponentialBackoff(min, max) },
	limit:       func(s dropinStrategy, n int) dropinStrategy { return redislock.LimitRetry(s, n) },
	errName: func(err error) string {
		switch {
		case err == nil:
			return "nil"
		case errors.Is(err, redislock.ErrNotObtained):
			return "ErrNotObtained"
		case errors.Is(err, redislock.ErrLockNotHeld):
			return "ErrLockNotHeld"
		case errors.Is(err, redislock.ErrInvalidTTL):
			return "ErrInvalidTTL"
		case errors.Is(err, redislock.ErrInvalidKey):
			return "ErrInvalidKey"
		}
		return "other"
	},
}

var theirs = &dropinLib{
	name: "bsm/redislock",
	obtainMulti: func(ctx context.Context, rdb redis.Scripter, keys []string, ttl time.Duration, o dropinOptions) (dropinLock, error) {
		l, err := bsm.ObtainMulti(ctx, rdb, keys, ttl, &bsm.Options{Token: o.Token, Metadata: o.Metadata, RetryStrategy: o.Retry})
		if err != nil {
			return nil, err
		}
		return theirsLock{l}, nil
	},
	noRetry:     func() dropinStrategy { return bsm.NoRetry() },
	linear:      func(d time.Duration) dropinStrategy { return bsm.LinearBackoff(d) },
	exponential: func(min, max time.Duration) dropinStrategy { return bsm.ExponentialBackoff(min, max) },
	limit:       func(s dropinStrategy, n int) dropinStrategy { return bsm.LimitRetry(s, n) },
	errName: func(err error) string {
		switch {
		case err == nil:
			return "nil"
		case errors.Is(err, bsm.ErrNotObtained):
			return "ErrNotObtained"
		case errors.Is(err, bsm.ErrLockNotHeld):
			return "ErrLockNotHeld"
		case errors.Is(err, context.DeadlineExceeded):
			return "DeadlineExceeded"
		}
		var reply redis.Error
		if errors.As(err, &reply) {
			return "redis error"
		}
		return "other"
	},
}

// dropinEnv is what a row's steps work with: the library, a client of the
// shared server (counted and pinnable), an admin client, and the row's keys.
type dropinEnv struct {
	t     *testing.T
	lib   *dropinLib
	rdb   *dropinClient
	admin *redis.Client
	keys  []string // a, b, c: fresh keys of this row and library
}

func (e *dropinEnv) key(i int) string { return e.keys[i] }

// obtain is lib.obtainMulti through the row's client.
func (e *dropinEnv) obtain(keys []string, ttl time.Duration, o dropinOptions) (dropinLock, error) {
	return e.lib.obtainMulti(context.Background(), e.rdb, keys, ttl, o)
}

// mustObtain obtains keys for a minute, failing the row on error.
func (e *dropinEnv) mustObtain(o dropinOptions, keys ...string) dropinLock {
	e.t.Helper()
	l, err := e.obtain(keys, time.Minute, o)
	if err != nil {
		e.t.Fatalf("%s: ObtainMulti(%q): %v", e.lib.name, keys, err)
	}
	return l
}

// err renders an error by name.
func (e *dropinEnv) err(err error) string { return e.lib.errName(err) }

// exists renders which of the row's keys exist, as "a b".
func (e *dropinEnv) exists() string {
	e.t.Helper()
	var have []string
	for i, k := range e.keys {
		if redistest.Exists(e.t, e.admin, k) {
			have = append(have, string(rune('a'+i)))
		}
	}
	if len(have) == 0 {
		return "none"
	}
	return strings.Join(have, " ")
}

// admin runs an admin command, failing the row on error.
func (e *dropinEnv) do(args ...any) {
	e.t.Helper()
	if err := e.admin.Do(context.Background(), args...).Err(); err != nil {
		e.t.Fatalf("%v: %v", args, err)
	}
}

// ttl renders l.TTL: the duration and the error.
func (e *dropinEnv) ttl(l dropinLock) string {
	d, err := l.TTL(context.Background())
	return fmt.Sprintf("ttl=%v err=%s", d, e.err(err))
}

// ttlRange renders l.TTL as whether it lies in (lo, hi], for a TTL read
// from a real expiry that runs down while the row runs.
func (e *dropinEnv) ttlRange(l dropinLock, lo, hi time.Duration) string {
	d, err := l.TTL(context.Background())
	if err != nil || d <= lo || d > hi {
		return fmt.Sprintf("ttl=%v err=%s", d, e.err(err))
	}
	return fmt.Sprintf("ttl in (%v, %v] err=nil", lo, hi)
}

// backoffSeq renders the first n backoffs of s.
func backoffSeq(s dropinStrategy, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(s.NextBackoff().String())
	}
	return b.String()
}

// dropinClient wraps a real client at the client boundary. It counts the
// script calls that ran (a NOSCRIPT reply, answered by loading the script,
// is not an attempt), and, for the keys in pinned, makes the scripts see
// the given PTTL: EVALSHA is answered NOSCRIPT, so that the library sends
// the script's source, and the source is sent with a prelude that answers
// PTTL of those keys with the pinned value. Everything else runs on the
// server unchanged.
type dropinClient struct {
	redis.Scripter

	mu     sync.Mutex
	ran    int
	pinned map[string]int64
}

// pin makes the scripts see PTTL ms for key, until unpin.
func (c *dropinClient) pin(key string, ms int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pinned == nil {
		c.pinned = make(map[string]int64)
	}
	c.pinned[key] = ms
}

// attempts returns the number of script calls that ran on the server.
func (c *dropinClient) attempts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ran
}

// prelude returns the Lua that shadows redis.call for the pinned keys, or
// "" when none is pinned.
func (c *dropinClient) prelude() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pinned) == 0 {
		return ""
	}
	keys := make([]string, 0, len(c.pinned))
	for k := range c.pinned {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("local real = redis\nlocal pinned = {")
	for _, k := range keys {
		fmt.Fprintf(&b, "[%q] = %d, ", k, c.pinned[k])
	}
	b.WriteString("}\n")
	b.WriteString(`local redis = setmetatable({call = function(cmd, key, ...)
  if string.upper(cmd) == "PTTL" and pinned[key] ~= nil then return pinned[key] end
  return real.call(cmd, key, ...)
end}, {__index = real})
`)
	return b.String()
}

func (c *dropinClient) count(cmd *redis.Cmd) *redis.Cmd {
	if !redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		c.mu.Lock()
		c.ran++
		c.mu.Unlock()
	}
	return cmd
}

func noScript(ctx context.Context) *redis.Cmd {
	cmd := redis.NewCmd(ctx)
	cmd.SetErr(replyError("NOSCRIPT No matching script (pinned PTTL: the test sends the source)"))
	return cmd
}

func (c *dropinClient) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.count(c.Scripter.Eval(ctx, c.prelude()+script, keys, args...))
}

func (c *dropinClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if c.prelude() != "" {
		return noScript(ctx)
	}
	return c.count(c.Scripter.EvalSha(ctx, sha, keys, args...))
}

func (c *dropinClient) EvalRO(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.count(c.Scripter.EvalRO(ctx, c.prelude()+script, keys, args...))
}

func (c *dropinClient) EvalShaRO(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if c.prelude() != "" {
		return noScript(ctx)
	}
	return c.count(c.Scripter.EvalShaRO(ctx, sha, keys, args...))
}

// dropinRow is one edge, run through both libraries.
type dropinRow struct {
	name string
	run  func(e *dropinEnv) string
	want string // what both libraries give; ours when they differ
	// diff, when not empty, says why ours differs on purpose; theirs is
	// then what the reference gives.
	diff   string
	theirs string
}

var dropinRows = []dropinRow{
	// TTL at and around expiry.
	{
		name: "TTL, under a millisecond left (PTTL 0)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			e.rdb.pin(e.key(0), 0)
			return e.ttl(l)
		},
		want: "ttl=0s err=nil",
	},
	{
		name: "TTL, one millisecond left (PTTL 1)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			e.rdb.pin(e.key(0), 1)
			return e.ttl(l)
		},
		want: "ttl=1ms err=nil",
	},
	{
		name: "TTL, a known expiry (PEXPIRE 5000)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			e.do("PEXPIRE", e.key(0), 5000)
			return e.ttlRange(l, 4*time.Second, 5*time.Second)
		},
		want: "ttl in (4s, 5s] err=nil",
	},
	{
		name: "TTL, expired (PEXPIRE 1, PTTL -2)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			redistest.ExpireNow(e.t, e.admin, e.key(0))
			return e.ttl(l)
		},
		want: "ttl=0s err=nil",
	},
	{
		name: "TTL, no expiry (PERSIST, PTTL -1)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			e.do("PERSIST", e.key(0))
			return e.ttl(l)
		},
		want: "ttl=0s err=nil",
	},
	{
		name: "TTL, taken by another after expiry",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			redistest.ExpireNow(e.t, e.admin, e.key(0))
			e.mustObtain(dropinOptions{}, e.key(0))
			return e.ttl(l)
		},
		want: "ttl=0s err=nil",
	},
	{
		name: "TTL, multi, least of the keys (pinned 7000 and 3000)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0), e.key(1))
			e.rdb.pin(e.key(0), 7000)
			e.rdb.pin(e.key(1), 3000)
			return e.ttl(l)
		},
		want: "ttl=3s err=nil",
	},
	{
		name: "TTL, multi, one key without expiry (PERSIST a, b pinned 3000)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0), e.key(1))
			e.do("PERSIST", e.key(0))
			e.rdb.pin(e.key(1), 3000)
			return e.ttl(l)
		},
		want: "ttl=3s err=nil",
	},
	{
		name: "TTL, multi, no key with an expiry (PERSIST both)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0), e.key(1))
			e.do("PERSIST", e.key(0))
			e.do("PERSIST", e.key(1))
			return e.ttl(l)
		},
		want: "ttl=0s err=nil",
	},
	{
		name: "TTL, multi, one key under a millisecond (a pinned 0, b 3000)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0), e.key(1))
			e.rdb.pin(e.key(0), 0)
			e.rdb.pin(e.key(1), 3000)
			return e.ttl(l)
		},
		want:   "ttl=0s err=nil",
		diff:   "the reference documents the least TTL among the keys (0 here) but its script skips keys with PTTL 0; a key about to expire is a lock about to be lost, so ours says 0",
		theirs: "ttl=3s err=nil",
	},
	{
		name: "TTL, multi, one key lost (DEL b)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0), e.key(1))
			e.do("DEL", e.key(1))
			return e.ttl(l)
		},
		want: "ttl=0s err=nil",
	},

	// Refresh and Release at expiry.
	{
		name: "Refresh and Release, expired (PEXPIRE 1)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			redistest.ExpireNow(e.t, e.admin, e.key(0))
			refresh := l.Refresh(context.Background(), time.Minute, dropinOptions{})
			release := l.Release(context.Background())
			return fmt.Sprintf("refresh=%s release=%s exists=%s", e.err(refresh), e.err(release), e.exists())
		},
		want: "refresh=ErrNotObtained release=ErrLockNotHeld exists=none",
	},
	{
		name: "Refresh and Release, taken by another after expiry",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			redistest.ExpireNow(e.t, e.admin, e.key(0))
			other := e.mustObtain(dropinOptions{}, e.key(0))
			refresh := l.Refresh(context.Background(), time.Minute, dropinOptions{})
			release := l.Release(context.Background())
			return fmt.Sprintf("refresh=%s release=%s exists=%s %s", e.err(refresh), e.err(release), e.exists(), e.ttlRange(other, 59*time.Second, time.Minute))
		},
		want: "refresh=ErrNotObtained release=ErrLockNotHeld exists=a ttl in (59s, 1m0s] err=nil",
	},
	{
		name: "Refresh, no expiry (PERSIST): the expiry comes back",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			e.do("PERSIST", e.key(0))
			err := l.Refresh(context.Background(), 10*time.Second, dropinOptions{})
			return fmt.Sprintf("refresh=%s %s", e.err(err), e.ttlRange(l, 9*time.Second, 10*time.Second))
		},
		want: "refresh=nil ttl in (9s, 10s] err=nil",
	},
	{
		name: "Refresh, a known expiry (PEXPIRE 5000) renewed",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			e.do("PEXPIRE", e.key(0), 5000)
			err := l.Refresh(context.Background(), time.Minute, dropinOptions{})
			return fmt.Sprintf("refresh=%s %s", e.err(err), e.ttlRange(l, 59*time.Second, time.Minute))
		},
		want: "refresh=nil ttl in (59s, 1m0s] err=nil",
	},
	{
		name: "Refresh with ttl 0, a context with a deadline",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := l.Refresh(ctx, 0, dropinOptions{})
			return fmt.Sprintf("refresh=%s exists=%s", e.err(err), e.exists())
		},
		want:   "refresh=ErrInvalidTTL exists=a",
		diff:   "SPEC 4.2: the reference sends PEXPIRE 0, which deletes the key, and reports success",
		theirs: "refresh=nil exists=none",
	},
	{
		name: "Refresh with ttl 0, a context without deadline",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			err := l.Refresh(context.Background(), 0, dropinOptions{})
			return fmt.Sprintf("refresh=%s exists=%s", e.err(err), e.exists())
		},
		want:   "refresh=ErrInvalidTTL exists=a",
		diff:   "SPEC 4.2: the reference bounds the call by a deadline of now+ttl, already past, and fails with the context's error",
		theirs: "refresh=DeadlineExceeded exists=a",
	},
	{
		name: "Release twice",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			first := l.Release(context.Background())
			second := l.Release(context.Background())
			return fmt.Sprintf("first=%s second=%s exists=%s", e.err(first), e.err(second), e.exists())
		},
		want: "first=nil second=ErrLockNotHeld exists=none",
	},
	{
		name: "Release, multi, one key lost (DEL b)",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0), e.key(1))
			e.do("DEL", e.key(1))
			err := l.Release(context.Background())
			return fmt.Sprintf("release=%s exists=%s", e.err(err), e.exists())
		},
		want:   "release=ErrLockNotHeld exists=none",
		diff:   "SPEC 4.7: the reference deletes nothing when a key is lost, so the keys still held stay locked until they expire",
		theirs: "release=ErrLockNotHeld exists=a",
	},

	// ObtainMulti with some keys held.
	{
		name: "ObtainMulti, b held by another",
		run: func(e *dropinEnv) string {
			e.mustObtain(dropinOptions{}, e.key(1))
			_, err := e.obtain([]string{e.key(0), e.key(1), e.key(2)}, time.Minute, dropinOptions{})
			return fmt.Sprintf("obtain=%s exists=%s", e.err(err), e.exists())
		},
		want: "obtain=ErrNotObtained exists=b",
	},
	{
		name: "ObtainMulti, every key held with our token (re-entrant)",
		run: func(e *dropinEnv) string {
			o := dropinOptions{Token: "tok-" + e.lib.name}
			e.mustObtain(o, e.key(0), e.key(1))
			e.do("PEXPIRE", e.key(0), 5000)
			l, err := e.obtain([]string{e.key(0), e.key(1)}, time.Minute, o)
			if err != nil {
				return "obtain=" + e.err(err)
			}
			return fmt.Sprintf("obtain=nil %s", e.ttlRange(l, 59*time.Second, time.Minute))
		},
		want: "obtain=nil ttl in (59s, 1m0s] err=nil",
	},
	{
		name: "ObtainMulti, b held with our token, a free",
		run: func(e *dropinEnv) string {
			o := dropinOptions{Token: "tok-" + e.lib.name}
			e.mustObtain(o, e.key(1))
			_, err := e.obtain([]string{e.key(0), e.key(1)}, time.Minute, o)
			return fmt.Sprintf("obtain=%s exists=%s", e.err(err), e.exists())
		},
		want:   "obtain=nil exists=a b",
		diff:   "SPEC 2 (re-entrant obtain): a key held with our own token counts as free; the reference compares every key, the free one too, with the token, and refuses",
		theirs: "obtain=ErrNotObtained exists=b",
	},
	{
		name: "ObtainMulti, a key given twice",
		run: func(e *dropinEnv) string {
			_, err := e.obtain([]string{e.key(0), e.key(0)}, time.Minute, dropinOptions{})
			return fmt.Sprintf("obtain=%s exists=%s", e.err(err), e.exists())
		},
		want:   "obtain=ErrInvalidKey exists=none",
		diff:   "SPEC 4.6: duplicate keys are bad input, refused before anything is sent",
		theirs: "obtain=nil exists=a",
	},
	{
		name: "ObtainMulti, no keys",
		run: func(e *dropinEnv) string {
			_, err := e.obtain(nil, time.Minute, dropinOptions{})
			return fmt.Sprintf("obtain=%s attempts=%d", e.err(err), e.rdb.attempts())
		},
		want:   "obtain=ErrInvalidKey attempts=0",
		diff:   "SPEC 4.6: the reference sends the script, which fails with a raw Lua error",
		theirs: "obtain=redis error attempts=1",
	},

	// Obtain's TTL.
	{
		name: "Obtain with ttl 0, a context with a deadline",
		run: func(e *dropinEnv) string {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, err := e.lib.obtainMulti(ctx, e.rdb, []string{e.key(0)}, 0, dropinOptions{})
			return fmt.Sprintf("obtain=%s exists=%s attempts=%d", e.err(err), e.exists(), e.rdb.attempts())
		},
		want:   "obtain=ErrInvalidTTL exists=none attempts=0",
		diff:   "SPEC 4.2: the reference sets the key and deletes it with PEXPIRE 0, and reports success",
		theirs: "obtain=nil exists=none attempts=1",
	},
	{
		name: "Obtain with ttl -1s, a context without deadline",
		run: func(e *dropinEnv) string {
			_, err := e.obtain([]string{e.key(0)}, -time.Second, dropinOptions{})
			return fmt.Sprintf("obtain=%s exists=%s", e.err(err), e.exists())
		},
		want:   "obtain=ErrInvalidTTL exists=none",
		diff:   "SPEC 4.2: the reference bounds the call by a deadline of now+ttl, already past, and fails with the context's error",
		theirs: "obtain=DeadlineExceeded exists=none",
	},
	{
		name: "Obtain with ttl 1.5ms (whole milliseconds)",
		run: func(e *dropinEnv) string {
			e.do("SET", e.key(1), "x", "PX", 60000)
			_, err := e.obtain([]string{e.key(0)}, 1500*time.Microsecond, dropinOptions{})
			return fmt.Sprintf("obtain=%s", e.err(err))
		},
		want: "obtain=nil",
	},

	// Token and metadata.
	{
		name: "Token and Metadata, defaults",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{}, e.key(0))
			return fmt.Sprintf("token=%d chars, url-safe %v, metadata=%q key=%s keys=%d", len(l.Token()), strings.Trim(l.Token(), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") == "", l.Metadata(), strings.TrimPrefix(l.Key(), e.key(0)), len(l.Keys()))
		},
		want: `token=22 chars, url-safe true, metadata="" key= keys=1`,
	},
	{
		name: "Token and Metadata with separators, NUL and UTF-8",
		run: func(e *dropinEnv) string {
			l := e.mustObtain(dropinOptions{Token: "t:1:2", Metadata: ":m\x00ü:"}, e.key(0))
			return fmt.Sprintf("token=%q metadata=%q", l.Token(), l.Metadata())
		},
		want: `token="t:1:2" metadata=":m\x00ü:"`,
	},
	{
		name: "Token, re-entrant with new metadata",
		run: func(e *dropinEnv) string {
			o := dropinOptions{Token: "tok", Metadata: "first"}
			e.mustObtain(o, e.key(0))
			o.Metadata = "second"
			l, err := e.obtain([]string{e.key(0)}, time.Minute, o)
			if err != nil {
				return "obtain=" + e.err(err)
			}
			return fmt.Sprintf("obtain=nil metadata=%q", l.Metadata())
		},
		want: `obtain=nil metadata="second"`,
	},
	{
		name: "Token that is a prefix of the holder's",
		run: func(e *dropinEnv) string {
			e.mustObtain(dropinOptions{Token: "foobar"}, e.key(0))
			_, err := e.obtain([]string{e.key(0)}, time.Minute, dropinOptions{Token: "foo"})
			return "obtain=" + e.err(err)
		},
		want:   "obtain=ErrNotObtained",
		diff:   "SPEC 4.1: the reference compares a prefix of the token, so \"foo\" takes over a lock held as \"foobar\"",
		theirs: "obtain=nil",
	},

	// Retry strategies, counted in script calls on a held key.
	{
		name: "Obtain attempts on a held key, NoRetry",
		run:  func(e *dropinEnv) string { return e.attemptsOn(e.lib.noRetry()) },
		want: "obtain=ErrNotObtained attempts=1",
	},
	{
		name: "Obtain attempts on a held key, LinearBackoff(0)",
		run:  func(e *dropinEnv) string { return e.attemptsOn(e.lib.linear(0)) },
		want: "obtain=ErrNotObtained attempts=1",
	},
	{
		name: "Obtain attempts on a held key, LinearBackoff(-1ms)",
		run:  func(e *dropinEnv) string { return e.attemptsOn(e.lib.linear(-time.Millisecond)) },
		want: "obtain=ErrNotObtained attempts=1",
	},
	{
		name: "Obtain attempts on a held key, LimitRetry(LinearBackoff(1ms), 0)",
		run:  func(e *dropinEnv) string { return e.attemptsOn(e.lib.limit(e.lib.linear(time.Millisecond), 0)) },
		want: "obtain=ErrNotObtained attempts=1",
	},
	{
		name: "Obtain attempts on a held key, LimitRetry(LinearBackoff(1ms), -1)",
		run:  func(e *dropinEnv) string { return e.attemptsOn(e.lib.limit(e.lib.linear(time.Millisecond), -1)) },
		want: "obtain=ErrNotObtained attempts=1",
	},
	{
		name: "Obtain attempts on a held key, LimitRetry(LinearBackoff(1ms), 3)",
		run:  func(e *dropinEnv) string { return e.attemptsOn(e.lib.limit(e.lib.linear(time.Millisecond), 3)) },
		want: "obtain=ErrNotObtained attempts=4",
	},
	{
		name: "Obtain attempts on a held key, LimitRetry(ExponentialBackoff(1ms, 2ms), 2)",
		run: func(e *dropinEnv) string {
			return e.attemptsOn(e.lib.limit(e.lib.exponential(time.Millisecond, 2*time.Millisecond), 2))
		},
		want: "obtain=ErrNotObtained attempts=3",
	},
	{
		name: "Obtain attempts on a held key, ExponentialBackoff(1ms, -1ms)",
		run:  func(e *dropinEnv) string { return e.attemptsOn(e.lib.exponential(time.Millisecond, -time.Millisecond)) },
		want: "obtain=ErrNotObtained attempts=1",
	},
	{
		name: "Obtain attempts, one Options value reused, LimitRetry(LinearBackoff(1ms), 2)",
		run: func(e *dropinEnv) string {
			e.mustObtain(dropinOptions{}, e.key(0))
			o := dropinOptions{Retry: e.lib.limit(e.lib.linear(time.Millisecond), 2)}
			_, first := e.obtain([]string{e.key(0)}, time.Minute, o)
			n := e.rdb.attempts()
			_, second := e.obtain([]string{e.key(0)}, time.Minute, o)
			return fmt.Sprintf("first=%s attempts=%d second=%s attempts=%d", e.err(first), n-1, e.err(second), e.rdb.attempts()-n)
		},
		want:   "first=ErrNotObtained attempts=3 second=ErrNotObtained attempts=3",
		diff:   "SPEC 4.4: the reference's LimitRetry counts across calls, so a reused Options value has no retries left",
		theirs: "first=ErrNotObtained attempts=3 second=ErrNotObtained attempts=1",
	},

	// Backoff sequences, called directly.
	{
		name: "NoRetry",
		run:  func(e *dropinEnv) string { return backoffSeq(e.lib.noRetry(), 3) },
		want: "0s 0s 0s",
	},
	{
		name: "LinearBackoff(0), LinearBackoff(-1ms)",
		run: func(e *dropinEnv) string {
			return backoffSeq(e.lib.linear(0), 2) + " / " + backoffSeq(e.lib.linear(-time.Millisecond), 2)
		},
		want: "0s 0s / -1ms -1ms",
	},
	{
		name: "LimitRetry(LinearBackoff(5ms), 2), 0 and -1",
		run: func(e *dropinEnv) string {
			return backoffSeq(e.lib.limit(e.lib.linear(5*time.Millisecond), 2), 4) + " / " +
				backoffSeq(e.lib.limit(e.lib.linear(5*time.Millisecond), 0), 2) + " / " +
				backoffSeq(e.lib.limit(e.lib.linear(5*time.Millisecond), -1), 2)
		},
		want: "5ms 5ms 0s 0s / 0s 0s / 0s 0s",
	},
	{
		name: "ExponentialBackoff(10ms, 300ms)",
		run: func(e *dropinEnv) string {
			return backoffSeq(e.lib.exponential(10*time.Millisecond, 300*time.Millisecond), 9)
		},
		want: "10ms 10ms 16ms 32ms 64ms 128ms 256ms 300ms 300ms",
	},
	{
		name: "ExponentialBackoff(0, 0), the first 25",
		run:  func(e *dropinEnv) string { return backoffSeq(e.lib.exponential(0, 0), 25) },
		want: "4ms 8ms 16ms 32ms 64ms 128ms 256ms 512ms 1.024s 2.048s 4.096s 8.192s 16.384s 32.768s 1m5.536s 2m11.072s 4m22.144s 8m44.288s 17m28.576s 34m57.152s 1h9m54.304s 2h19m48.608s 4h39m37.216s 9h19m14.432s 18h38m28.864s",
	},
	{
		name: "ExponentialBackoff(0, 0), the 26th and 27th",
		run: func(e *dropinEnv) string {
			s := e.lib.exponential(0, 0)
			backoffSeq(s, 25)
			return backoffSeq(s, 2)
		},
		want:   "37h16m57.728s 74h33m55.456s",
		diff:   "SPEC 2: the n-th backoff is 2^(n+1) ms with max 0 meaning no cap; the reference stops doubling at 2^26 ms (18h38m)",
		theirs: "18h38m28.864s 18h38m28.864s",
	},
	{
		name: "ExponentialBackoff(300ms, 10ms): min above max",
		run: func(e *dropinEnv) string {
			return backoffSeq(e.lib.exponential(300*time.Millisecond, 10*time.Millisecond), 9)
		},
		want: "300ms 300ms 300ms 300ms 300ms 300ms 300ms 10ms 10ms",
	},
	{
		name: "ExponentialBackoff(-5ms, 0) and (0, -1ms): negative bounds",
		run: func(e *dropinEnv) string {
			return backoffSeq(e.lib.exponential(-5*time.Millisecond, 0), 3) + " / " + backoffSeq(e.lib.exponential(0, -time.Millisecond), 3)
		},
		want: "4ms 8ms 16ms / -1ms -1ms -1ms",
	},

	// A nil Lock.
	{
		name: "nil Lock: TTL, Refresh, Release",
		run: func(e *dropinEnv) string {
			var l dropinLock
			if e.lib == ours {
				l = oursLock{nil}
			} else {
				l = theirsLock{nil}
			}
			ctx := context.Background()
			d, ttlErr := l.TTL(ctx)
			return fmt.Sprintf("ttl=%v,%s refresh=%s release=%s", d, e.err(ttlErr), e.err(l.Refresh(ctx, time.Minute, dropinOptions{})), e.err(l.Release(ctx)))
		},
		want: "ttl=0s,ErrLockNotHeld refresh=ErrNotObtained release=ErrLockNotHeld",
	},
}

// attemptsOn obtains a key held by another with strategy s and renders the
// error and the number of attempts.
func (e *dropinEnv) attemptsOn(s dropinStrategy) string {
	e.t.Helper()
	e.mustObtain(dropinOptions{}, e.key(0))
	before := e.rdb.attempts()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := e.lib.obtainMulti(ctx, e.rdb, []string{e.key(0)}, time.Minute, dropinOptions{Retry: s})
	return fmt.Sprintf("obtain=%s attempts=%d", e.err(err), e.rdb.attempts()-before)
}

func TestDropIn(t *testing.T) {
	t.Parallel()
	server := redistest.SharedServer(t, redistest.Redis)
	admin := server.Client(t)
	for _, row := range dropinRows {
		t.Run(row.name, func(t *testing.T) {
			got := map[*dropinLib]string{}
			for _, lib := range []*dropinLib{ours, theirs} {
				e := &dropinEnv{t: t, lib: lib, rdb: &dropinClient{Scripter: server.Client(t)}, admin: admin}
				for _, name := range []string{"a", "b", "c"} {
					e.keys = append(e.keys, redistest.Key(t, lib.name+"/"+name))
				}
				got[lib] = row.run(e)
			}
			if got[ours] != row.want {
				t.Errorf("ours:   %s\nwant:   %s", got[ours], row.want)
			}
			want := row.want
			if row.diff != "" {
				want = row.theirs
			}
			if got[theirs] != want {
				t.Errorf("bsm/redislock: %s\nwant:          %s", got[theirs], want)
			}
			if row.diff == "" && got[ours] != got[theirs] {
				t.Errorf("ours and bsm/redislock differ:\nours: %s\nbsm:  %s", got[ours], got[theirs])
			}
			if row.diff != "" && got[ours] == got[theirs] {
				t.Errorf("the row says ours differs (%s), but both give %s", row.diff, got[ours])
			}
		})
	}
}
