package redistest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// EachTopology runs fn as a parallel subtest on every topology of
// [Topologies], each with a new client of it.
func EachTopology(t *testing.T, fn func(t *testing.T, rdb redis.UniversalClient)) {
	t.Helper()
	for _, topo := range Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, topo.NewClient(t))
		})
	}
}

// Exists reports whether key exists; an error fails t.
func Exists(t testing.TB, rdb redis.Cmdable, key string) bool {
	t.Helper()
	n, err := rdb.Exists(context.Background(), key).Result()
	if err != nil {
		t.Fatalf("EXISTS %s: %v", key, err)
	}
	return n == 1
}

// ExpireNow makes key expire within a millisecond (PEXPIRE key 1) and
// waits until it is gone, instead of sleeping through a TTL.
func ExpireNow(t testing.TB, rdb redis.Cmdable, key string) {
	t.Helper()
	if err := rdb.PExpire(context.Background(), key, 1).Err(); err != nil {
		t.Fatalf("PEXPIRE %s 1: %v", key, err)
	}
	for Exists(t, rdb, key) {
		// An expired key is removed on access; each EXISTS is one.
	}
}
