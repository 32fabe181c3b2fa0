package redislock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

func TestFenceTokensIncrease(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
		opt := &redislock.Options{FenceKey: fence}
		var prev int64
		for i := range 5 {
			lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, opt)
			if err != nil {
				t.Fatalf("Obtain %d: %v", i, err)
			}
			tok := lock.FenceToken()
			if tok < 1 || tok <= prev {
				t.Fatalf("acquisition %d: fence token %d, want > %d and >= 1", i, tok, prev)
			}
			prev = tok
			if err := lock.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			// Release leaves the counter alone.
			if got := mustGet(t, rdb, fence); got != strconv.FormatInt(tok, 10) {
				t.Fatalf("fence counter after Release = %q, want %d", got, tok)
			}
		}
	})
}

// A re-entrant obtain continues the acquisition: it keeps its token even when
// other lock keys moved the shared counter in between.
func TestFenceTokenReentrantKeepsToken(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a, b, fence := redistest.Key(t, "a"), redistest.Key(t, "b"), redistest.Key(t, "fence")
		first, err := redislock.Obtain(ctx, rdb, a, time.Minute, &redislock.Options{Token: "mine", FenceKey: fence})
		if err != nil {
			t.Fatalf("Obtain a: %v", err)
		}
		other, err := redislock.Obtain(ctx, rdb, b, time.Minute, &redislock.Options{FenceKey: fence})
		if err != nil {
			t.Fatalf("Obtain b: %v", err)
		}
		if other.FenceToken() <= first.FenceToken() {
			t.Fatalf("b's token %d not above a's %d", other.FenceToken(), first.FenceToken())
		}
		again, err := redislock.Obtain(ctx, rdb, a, time.Minute, &redislock.Options{Token: "mine", FenceKey: fence})
		if err != nil {
			t.Fatalf("re-entrant Obtain: %v", err)
		}
		if again.FenceToken() != first.FenceToken() {
			t.Errorf("re-entrant Obtain got token %d, want %d of the acquisition it continues", again.FenceToken(), first.FenceToken())
		}
		// Once released, the same token starts a new acquisition.
		if err := again.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		fresh, err := redislock.Obtain(ctx, rdb, a, time.Minute, &redislock.Options{Token: "mine", FenceKey: fence})
		if err != nil {
			t.Fatalf("Obtain after Release: %v", err)
		}
		if fresh.FenceToken() <= other.FenceToken() {
			t.Errorf("new acquisition got token %d, want above %d", fresh.FenceToken(), other.FenceToken())
		}
		_ = fresh.Release(ctx)
		_ = other.Release(ctx)
	})
}

func TestFenceTokenMulti(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		keys := []string{redistest.Key(t, "a"), redistest.Key(t, "b")}
		fence := redistest.Key(t, "fence")
		lock, err := redislock.ObtainMulti(ctx, rdb, keys, time.Minute, &redislock.Options{FenceKey: fence})
		if err != nil {
			t.Fatalf("ObtainMulti: %v", err)
		}
		if lock.FenceToken() < 1 {
			t.Errorf("FenceToken() = %d, want >= 1", lock.FenceToken())
		}
		if got := mustGet(t, rdb, fence); got != strconv.FormatInt(lock.FenceToken(), 10) {
			t.Errorf("counter = %q, want %d (one increment for all keys)", got, lock.FenceToken())
		}
		if err := lock.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
}

// The counter may be lost (restart without persistence, failover before it
// was replicated): tokens must not go backwards.
func TestFenceTokenSurvivesLostCounter(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
		opt := &redislock.Options{FenceKey: fence}
		lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, opt)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		before := lock.FenceToken()
		_ = lock.Release(ctx)
		if err := rdb.Del(ctx, fence).Err(); err != nil {
			t.Fatalf("DEL fence: %v", err)
		}
		lock, err = redislock.Obtain(ctx, rdb, key, time.Minute, opt)
		if err != nil {
			t.Fatalf("Obtain after the counter was lost: %v", err)
		}
		if lock.FenceToken() <= before {
			t.Errorf("token after the counter was lost = %d, want above %d", lock.FenceToken(), before)
		}
		_ = lock.Release(ctx)

		// A counter far ahead of the clock keeps counting from itself.
		high := int64(1) << 52
		if err := rdb.Set(ctx, fence, high, 0).Err(); err != nil {
			t.Fatalf("SET fence: %v", err)
		}
		lock, err = redislock.Obtain(ctx, rdb, key, time.Minute, opt)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if lock.FenceToken() != high+1 {
			t.Errorf("token after counter %d = %d, want %d", high, lock.FenceToken(), high+1)
		}
		_ = lock.Release(ctx)
	})
}

// A counter that is not a decimal integer below 2^53 is refused before
// the lock is written, and keeps its value and its TTL.
func TestFenceKeyNotAnInteger(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		for i, bad := range []string{"not-a-number", "-5", "1e300", " 12", "0x10", "", "9007199254740992", "18446744073709551616"} {
			key, fence := redistest.Key(t, "lock"+strconv.Itoa(i)), redistest.Key(t, "fence"+strconv.Itoa(i))
			if err := rdb.Set(ctx, fence, bad, time.Hour).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			_, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{FenceKey: fence})
			if err == nil || errors.Is(err, redislock.ErrNotObtained) || !strings.Contains(err.Error(), "does not hold an integer") {
				t.Fatalf("counter %q: got %v, want a Redis error naming the fence key", bad, err)
			}
			if mustExist(t, rdb, key) {
				t.Errorf("counter %q: lock key written although the fence failed", bad)
			}
			if got := mustGet(t, rdb, fence); got != bad {
				t.Errorf("counter %q: now %q, want it left as it was", bad, got)
			}
			if d := rdb.PTTL(ctx, fence).Val(); d <= 59*time.Minute {
				t.Errorf("counter %q: PTTL %v after the refusal, want its hour kept", bad, d)
			}
		}
	})
}

// The tag that a fenced lock's value records of its counter is computed by
// the client now; it must be the one the server computed before (the first
// 8 hex digits of redis.sha1hex of the key's name), so that a re-entrant
// obtain continues an acquisition that an earlier version recorded.
func TestFenceTagMatchesServerSHA1(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
		// The value as the earlier obtain.lua wrote it, tag from the server.
		old := redis.NewScript(`local tag = string.sub(redis.sha1hex(KEYS[2]), 1, 8)
redis.call("SET", KEYS[1], "4:mine:1234567/" .. tag .. ":meta", "PX", 60000)
return tag`)
		if err := old.Run(ctx, rdb, []string{key, fence}).Err(); err != nil {
			t.Fatalf("writing the old value: %v", err)
		}
		lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: "mine", FenceKey: fence})
		if err != nil {
			t.Fatalf("re-entrant Obtain: %v", err)
		}
		if got := lock.FenceToken(); got != 1234567 {
			t.Errorf("re-entrant Obtain over an earlier version's value: token %d, want 1234567 (the tags differ?)", got)
		}
		if exists := rdb.Exists(ctx, fence).Val(); exists != 0 {
			t.Errorf("re-entrant Obtain wrote the counter")
		}
		_ = lock.Release(ctx)
	})
}

// A fenced acquisition takes its token from the server's clock in µs when
// the counter is behind it, and from the counter when it is at or ahead.
func TestFenceTokenFromClockOrCounter(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
		opt := &redislock.Options{FenceKey: fence}
		before, err := rdb.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		if err := rdb.Set(ctx, fence, "5", 0).Err(); err != nil {
			t.Fatal(err)
		}
		lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, opt)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if got := lock.FenceToken(); got < before.UnixMicro() {
			t.Errorf("token %d with counter 5, want at least the server time %d µs", got, before.UnixMicro())
		}
		if got, want := mustGet(t, rdb, fence), strconv.FormatInt(lock.FenceToken(), 10); got != want {
			t.Errorf("counter = %s, want the token %s", got, want)
		}
		_ = lock.Release(ctx)
		ahead := before.UnixMicro() + int64(time.Hour/time.Microsecond)
		if err := rdb.Set(ctx, fence, ahead, 0).Err(); err != nil {
			t.Fatal(err)
		}
		lock, err = redislock.Obtain(ctx, rdb, key, time.Minute, opt)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		if got := lock.FenceToken(); got != ahead+1 {
			t.Errorf("token %d with the counter an hour ahead at %d, want %d", got, ahead, ahead+1)
		}
		if got, want := mustGet(t, rdb, fence), strconv.FormatInt(ahead+1, 10); got != want {
			t.Errorf("counter = %s, want %s", got, want)
		}
		// The key records the token the lock was given, not the clock's.
		if got, want := mustGet(t, rdb, key), ":"+strconv.FormatInt(ahead+1, 10)+"/"; !strings.Contains(got, want) {
			t.Errorf("lock key holds %q, want the token %d in it", got, ahead+1)
		}
		_ = lock.Release(ctx)
	})
}

// The pattern fencing exists for: a holder that paused past its lease
// cannot overwrite the work of the holder that followed it.
func TestFenceTokenRefusesStaleHolder(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key, fence := redistest.Key(t, "lock"), redistest.Key(t, "fence")
		opt := &redislock.Options{FenceKey: fence}
		var resource fencedStore

		paused, err := redislock.Obtain(ctx, rdb, key, time.Minute, opt)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		expireNow(t, rdb, key) // the first holder's lease runs out while it is paused
		next, err := redislock.Obtain(ctx, rdb, key, time.Minute, opt)
		if err != nil {
			t.Fatalf("Obtain after expiry: %v", err)
		}
		if !resource.write(next.FenceToken(), "fresh") {
			t.Fatal("resource refused the current holder")
		}
		if resource.write(paused.FenceToken(), "stale") {
			t.Error("resource accepted a write from the holder that lost its lease")
		}
		if resource.value != "fresh" {
			t.Errorf("resource = %q, want fresh", resource.value)
		}
		_ = next.Release(ctx)
	})
}

// fencedStore is a protected resource that applies the fencing rule.
type fencedStore struct {
	highest int64
	value   string
}

func (s *fencedStore) write(token int64, value string) bool {
	if token < s.highest {
		return false
	}
	s.highest, s.value = token, value
	return true
}

// A re-entrant obtain that names another fence counter than the acquisition
// it continues takes a new token from that counter: it must never be below a
// token the new counter already issued (issue 11, item 11).
func TestFenceTokenReentrantOtherCounter(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		first, second := redistest.Key(t, "fence1"), redistest.Key(t, "fence2")
		// The second counter is far ahead of the first: it issued 1<<52.
		if err := rdb.Set(ctx, second, strconv.FormatInt(1<<52, 10), 0).Err(); err != nil {
			t.Fatal(err)
		}
		lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: "mine", FenceKey: first})
		if err != nil {
			t.Fatalf("Obtain with %s: %v", first, err)
		}
		again, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: "mine", FenceKey: second})
		if err != nil {
			t.Fatalf("re-entrant Obtain with %s: %v", second, err)
		}
		if got := again.FenceToken(); got <= 1<<52 {
			t.Errorf("re-entrant Obtain with another counter: token %d, want above %d, the highest that counter issued", got, int64(1<<52))
		}
		if got, want := mustGet(t, rdb, second), strconv.FormatInt(again.FenceToken(), 10); got != want {
			t.Errorf("second counter = %s, want %s: the new token comes from it", got, want)
		}
		// Obtaining again with the second counter continues that acquisition.
		third, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: "mine", FenceKey: second})
		if err != nil {
			t.Fatalf("re-entrant Obtain with %s again: %v", second, err)
		}
		if third.FenceToken() != again.FenceToken() {
			t.Errorf("re-entrant Obtain with the same counter: token %d, want %d", third.FenceToken(), again.FenceToken())
		}
		_ = lock
		if err := third.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
	})
}
