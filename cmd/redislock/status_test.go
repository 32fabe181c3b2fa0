package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

func TestStatus(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, rdb redis.UniversalClient) {
		ctx := context.Background()
		held, free, foreign := redistest.Key(t, "held"), redistest.Key(t, "free"), redistest.Key(t, "foreign")
		fence := redistest.Key(t, "fence")
		lock, err := redislock.New(rdb).Obtain(ctx, held, time.Minute, &redislock.Options{Metadata: "host-1:42", FenceKey: fence})
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = lock.Release(ctx) }() // the test is over: a failure changes nothing
		if err := rdb.Set(ctx, foreign, "not a lock", 0).Err(); err != nil {
			t.Fatal(err)
		}

		r := redislockCmd(t, nil, args("status", conn, "--json", held, free, foreign, "--fence-key", fence)...)
		if r.code != 0 {
			t.Fatalf("status --json: exit %d; stderr: %s", r.code, r.stderr)
		}
		var got statusReport
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("status --json output does not parse: %v\n%s", err, r.stdout)
		}
		if len(got.Locks) != 3 {
			t.Fatalf("status --json: %d locks, want 3\n%s", len(got.Locks), r.stdout)
		}
		h := got.Locks[0]
		if h.Key != held || !h.Held || h.Foreign || h.Token != lock.Token() || h.Metadata != "host-1:42" ||
			h.FenceToken != lock.FenceToken() || h.TTLms <= 0 || h.TTLms > time.Minute.Milliseconds() {
			t.Errorf("held key: %+v, want held with token %q, metadata host-1:42, fence token %d, a TTL up to 1m",
				h, lock.Token(), lock.FenceToken())
		}
		if f := got.Locks[1]; !reflect.DeepEqual(f, lockStatus{Key: free}) {
			t.Errorf("free key: %+v, want only its name", f)
		}
		if f := got.Locks[2]; !f.Held || !f.Foreign || f.TTLms != -1 {
			t.Errorf("foreign key: %+v, want held, foreign, no expiry (-1)", f)
		}
		if got.FenceKey != fence || got.FenceCounter == nil || *got.FenceCounter != lock.FenceToken() {
			t.Errorf("fence: %q = %v, want %q = %d", got.FenceKey, got.FenceCounter, fence, lock.FenceToken())
		}
		if !strings.Contains(r.stdout, `"fence_counter"`) {
			t.Errorf("status --json lacks fence_counter:\n%s", r.stdout)
		}

		r = redislockCmd(t, nil, args("status", conn, held, free)...)
		if r.code != 0 {
			t.Fatalf("status: exit %d; stderr: %s", r.code, r.stderr)
		}
		if !strings.Contains(r.stdout, lock.Token()[:8]+"…") || strings.Contains(r.stdout, lock.Token()) {
			t.Errorf("status shows the token in full, or not at all:\n%s", r.stdout)
		}
		if !strings.Contains(r.stdout, `"host-1:42"`) || strings.Contains(r.stdout, "fence counter") {
			t.Errorf("status output lacks the metadata, or shows a fence counter not asked for:\n%s", r.stdout)
		}
		r = redislockCmd(t, nil, args("status", conn, "--show-token", held)...)
		if !strings.Contains(r.stdout, lock.Token()) {
			t.Errorf("status --show-token lacks the token:\n%s", r.stdout)
		}
	})
}
