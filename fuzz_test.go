package redislock_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// Fuzz targets for what parses, validates or encodes input. `go test` runs
// their seeds (below and in testdata/fuzz); `make fuzz` runs each with
// -fuzz for a while.

// recordingClient is a RedisClient that records the script calls it gets
// and answers every one with reply, without any server.
type recordingClient struct {
	redis.Scripter // nil: any other method panics
	reply          int64

	mu    sync.Mutex
	calls []recordedCall
}

type recordedCall struct {
	keys []string
	args []any
}

func (c *recordingClient) record(ctx context.Context, keys []string, args []any) *redis.Cmd {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, recordedCall{keys: append([]string(nil), keys...), args: append([]any(nil), args...)})
	return redis.NewCmdResult(c.reply, nil)
}

func (c *recordingClient) EvalSha(ctx context.Context, _ string, keys []string, args ...any) *redis.Cmd {
	return c.record(ctx, keys, args)
}

func (c *recordingClient) Eval(ctx context.Context, _ string, keys []string, args ...any) *redis.Cmd {
	return c.record(ctx, keys, args)
}

// FuzzObtainValidation checks the validation of Obtain and ObtainMulti
// through the public API against a reference: every bad TTL or key list is
// refused with its error before anything is sent, and every good one is
// sent as given, with the TTL in whole milliseconds.
func FuzzObtainValidation(f *testing.F) {
	f.Add("a", "b", "c", uint8(1), "", int64(time.Second))
	f.Add("a", "b", "c", uint8(3), "f", int64(time.Millisecond))
	f.Add("a", "a", "c", uint8(2), "", int64(time.Second))
	f.Add("a", "", "c", uint8(3), "", int64(time.Second))
	f.Add("a", "b", "c", uint8(0), "", int64(time.Second))
	f.Add("a", "b", "c", uint8(2), "b", int64(time.Second))
	f.Add("a", "b", "c", uint8(1), "", int64(time.Millisecond-1))
	f.Add("a", "b", "c", uint8(1), "", int64(0))
	f.Add("a", "b", "c", uint8(1), "", int64(-time.Second))
	f.Add("a", "b", "c", uint8(1), "", int64(1<<63-1))
	f.Add("{x}", "{x}b", "\x00", uint8(3), "{x}f", int64(1500*time.Microsecond))
	f.Fuzz(func(t *testing.T, k1, k2, k3 string, n uint8, fence string, ttlNs int64) {
		keys := []string{k1, k2, k3}[:n%4]
		ttl := time.Duration(ttlNs)
		fake := &recordingClient{reply: 7}
		var lock *redislock.Lock
		var err error
		if len(keys) == 1 && n%8 < 4 {
			lock, err = redislock.New(fake).Obtain(context.Background(), keys[0], ttl, &redislock.Options{FenceKey: fence})
		} else {
			lock, err = redislock.New(fake).ObtainMulti(context.Background(), keys, ttl, &redislock.Options{FenceKey: fence})
		}

		badTTL := ttl < time.Millisecond
		badKeys := len(keys) == 0
		seen := map[string]bool{}
		for _, k := range keys {
			badKeys = badKeys || k == "" || k == fence || seen[k]
			seen[k] = true
		}
		if badTTL || badKeys {
			if (lock != nil) || !(badTTL && errors.Is(err, redislock.ErrInvalidTTL) || badKeys && errors.Is(err, redislock.ErrInvalidKey)) {
				t.Fatalf("keys %q, fence %q, ttl %v: got (%v, %v), want a validation error (bad ttl %v, bad keys %v)", keys, fence, ttl, lock, err, badTTL, badKeys)
			}
			if len(fake.calls) != 0 {
				t.Fatalf("keys %q, fence %q, ttl %v: refused, but %d script calls were sent", keys, fence, ttl, len(fake.calls))
			}
			return
		}
		if err != nil || lock == nil {
			t.Fatalf("keys %q, fence %q, ttl %v: got (%v, %v), want a lock", keys, fence, ttl, lock, err)
		}
		if len(fake.calls) != 1 {
			t.Fatalf("keys %q: %d script calls, want 1", keys, len(fake.calls))
		}
		call := fake.calls[0]
		wantKeys := keys
		if fence != "" {
			wantKeys = append(append([]string(nil), keys...), fence)
		}
		if len(call.keys) < len(wantKeys) || strings.Join(call.keys[:len(wantKeys)], "\x00|") != strings.Join(wantKeys, "\x00|") {
			t.Fatalf("script keys %q, want %q first", call.keys, wantKeys)
		}
		if len(call.args) < 3 || fmt.Sprint(call.args[2]) != strconv.FormatInt(int64(ttl/time.Millisecond), 10) {
			t.Fatalf("script args %v: want the TTL %v as %d ms third", call.args, ttl, ttl/time.Millisecond)
		}
		if got := lock.Keys(); strings.Join(got, "\x00|") != strings.Join(keys, "\x00|") {
			t.Fatalf("Keys() = %q, want %q", got, keys)
		}
	})
}

// refEncode is the lock value format of lua/obtain.lua, written again in Go.
// A fenced lock's fence field is followed by "/" and the first 8 hex digits
// of the SHA-1 of its fence key; fenceKey is "" for a lock without one.
func refEncode(token string, fence int64, fenceKey, metadata string) string {
	field := strconv.FormatInt(fence, 10)
	if fenceKey != "" {
		sum := sha1.Sum([]byte(fenceKey))
		field += "/" + hex.EncodeToString(sum[:4])
	}
	return strconv.Itoa(len(token)) + ":" + token + ":" + field + ":" + metadata
}

// refParse splits a lock value "<len>:<token>:<fence>:<metadata>".
func refParse(v string) (token string, fence int64, metadata string, ok bool) {
	lenText, rest, found := strings.Cut(v, ":")
	n, err := strconv.Atoi(lenText)
	if !found || err != nil || n < 0 || n+1 > len(rest) || rest[n] != ':' {
		return "", 0, "", false
	}
	token, rest = rest[:n], rest[n+1:]
	fenceText, metadata, found := strings.Cut(rest, ":")
	fenceText, _, _ = strings.Cut(fenceText, "/")
	fence, err = strconv.ParseInt(fenceText, 10, 64)
	if !found || err != nil {
		return "", 0, "", false
	}
	return token, fence, metadata, true
}

// FuzzLockValue obtains a lock on the shared redis-server with an arbitrary
// token and metadata and checks the value stored (it decodes to exactly
// what was given) and the exactness of ownership: another token, however
// close, neither obtains nor breaks the lock, while the same token
// re-enters it and keeps its fence token.
func FuzzLockValue(f *testing.F) {
	f.Add("tok", "meta", "tok2")
	f.Add("foo", "", "foobar")
	f.Add("foobar", "x", "foo")
	f.Add("a:b", "c:d", "a")
	f.Add("1:a", "", "a")
	f.Add("3:a:b", ":::", "a:b")
	f.Add("\x00\xff", "\r\n", "\x00")
	f.Add("%d+", "%s", "%")
	f.Add("", "meta", "x")
	f.Fuzz(func(t *testing.T, token, metadata, other string) {
		rdb := redistest.Standalone(t)
		ctx := context.Background()
		key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
		lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: token, Metadata: metadata, FenceKey: fence})
		if err != nil {
			t.Fatalf("Obtain(token %q, metadata %q): %v", token, metadata, err)
		}
		defer lock.Release(ctx)
		if token != "" && lock.Token() != token {
			t.Fatalf("Token() = %q, want %q", lock.Token(), token)
		}
		v := mustGet(t, rdb, key)
		if want := refEncode(lock.Token(), lock.FenceToken(), fence, metadata); v != want {
			t.Fatalf("stored %q, want %q", v, want)
		}
		gotTok, gotFence, gotMeta, ok := refParse(v)
		if !ok || gotTok != lock.Token() || gotFence != lock.FenceToken() || gotMeta != metadata {
			t.Fatalf("stored %q decodes to (%q, %d, %q, %v)", v, gotTok, gotFence, gotMeta, ok)
		}

		if other != lock.Token() && other != "" {
			_, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: other, FenceKey: fence})
			if !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("Obtain with token %q of a lock held by %q: %v, want ErrNotObtained", other, lock.Token(), err)
			}
		}
		again, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: lock.Token(), Metadata: other, FenceKey: fence})
		if err != nil {
			t.Fatalf("re-entrant Obtain: %v", err)
		}
		if again.FenceToken() != lock.FenceToken() {
			t.Fatalf("re-entrant Obtain: fence token %d, want %d", again.FenceToken(), lock.FenceToken())
		}
		if err := again.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if mustExist(t, rdb, key) {
			t.Fatal("key still there after Release")
		}
	})
}

// FuzzExponentialBackoff checks the n-th backoff against its definition:
// 2^(n+1) ms, raised to min and lowered to max (max 0: no cap; a negative
// max lowers it too, as in bsm/redislock).
func FuzzExponentialBackoff(f *testing.F) {
	f.Add(int64(10*time.Millisecond), int64(300*time.Millisecond), uint8(9))
	f.Add(int64(0), int64(0), uint8(70))
	f.Add(int64(time.Second), int64(time.Millisecond), uint8(3))
	f.Add(int64(-1), int64(-1), uint8(1))
	f.Fuzz(func(t *testing.T, minNs, maxNs int64, n uint8) {
		lo, hi := time.Duration(minNs), time.Duration(maxNs)
		s := redislock.ExponentialBackoff(lo, hi)
		for i := 1; i <= int(n); i++ {
			got := s.NextBackoff()
			want := time.Duration(1<<41) * time.Millisecond
			if i < 40 {
				want = time.Duration(int64(1)<<(i+1)) * time.Millisecond
			}
			if want < lo {
				want = lo
			} else if hi != 0 && want > hi {
				want = hi
			}
			if got != want {
				t.Fatalf("ExponentialBackoff(%v, %v): backoff %d = %v, want %v", lo, hi, i, got, want)
			}
		}
	})
}
