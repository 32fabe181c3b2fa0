package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

func TestRelease(t *testing.T) {
	forEachTopology(t, func(t *testing.T, conn []string, rdb redis.UniversalClient) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		lock, err := redislock.New(rdb).Obtain(ctx, key, time.Minute, &redislock.Options{Metadata: "crashed-host:7"})
		if err != nil {
			t.Fatal(err)
		}

		r := redislockCmd(t, nil, args("release", conn, key, "--token", "wrong-token")...)
		if r.code != exitNotHeld || !strings.Contains(r.stderr, "another token") || !strings.Contains(r.stderr, "crashed-host:7") {
			t.Errorf("wrong token: exit %d, stderr %q; want %d and a refusal naming the holder", r.code, r.stderr, exitNotHeld)
		}
		if !exists(t, rdb, key) {
			t.Fatal("a release with the wrong token deleted the lock")
		}
		// A prefix of the token is another token.
		if r := redislockCmd(t, nil, args("release", conn, key, "--token", lock.Token()[:10])...); r.code != exitNotHeld {
			t.Errorf("token prefix: exit %d, want %d", r.code, exitNotHeld)
		}

		r = redislockCmd(t, nil, args("release", conn, "--token", lock.Token(), key)...)
		if r.code != 0 || r.stdout != "released "+key+"\n" {
			t.Errorf("right token: exit %d, stdout %q, stderr %q; want 0 and a line", r.code, r.stdout, r.stderr)
		}
		if exists(t, rdb, key) {
			t.Error("the lock is still there after its release")
		}

		r = redislockCmd(t, nil, args("release", conn, key, "--token", lock.Token())...)
		if r.code != exitNotHeld || !strings.Contains(r.stderr, "not held") {
			t.Errorf("released twice: exit %d, stderr %q; want %d, not held", r.code, r.stderr, exitNotHeld)
		}
	})
}

// TestReleasePartlyLost: releasing a multi-key lock of which one key is no
// longer held deletes the key still held, exits 3, and says the lock was
// partly lost (not that nothing was deleted).
func TestReleasePartlyLost(t *testing.T) {
	t.Parallel()
	conn, rdb := topologies[0].conn(t)
	ctx := context.Background()
	kept, gone := redistest.Key(t, "kept"), redistest.Key(t, "gone")
	lock, err := redislock.New(rdb).ObtainMulti(ctx, []string{kept, gone}, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, gone).Err(); err != nil {
		t.Fatal(err)
	}
	r := redislockCmd(t, nil, args("release", conn, kept, gone, "--token", lock.Token())...)
	if r.code != exitNotHeld || r.stdout != "released "+kept+"\n" || !strings.Contains(r.stderr, "lock was partly lost") || strings.Contains(r.stderr, "nothing") {
		t.Errorf("exit %d, stdout %q, stderr %q; want %d, %s released, and the lock partly lost", r.code, r.stdout, r.stderr, exitNotHeld, kept)
	}
	if exists(t, rdb, kept) {
		t.Errorf("%s still held", kept)
	}
}
