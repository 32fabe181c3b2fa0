package redislock_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// HashSlot is internal/keyslot's Slot, tested there against the Redis
// Cluster specification and a reference; here the documented contract:
// a key's tag decides its slot, and an empty tag is no tag.
func TestHashSlot(t *testing.T) {
	if got, want := redislock.HashSlot("{user1000}.following"), redislock.HashSlot("user1000"); got != want || got != 3443 {
		t.Errorf("HashSlot({user1000}.following) = %d, HashSlot(user1000) = %d; want both 3443", got, want)
	}
	if got := redislock.HashSlot("foo{}{bar}"); got != 8363 {
		t.Errorf("HashSlot(foo{}{bar}) = %d, want 8363 (the whole key hashed)", got)
	}
}

func TestCrossSlotRejectedBeforeSending(t *testing.T) {
	// Nothing listens at this address: had a command been sent, the error
	// would be a dial error, not a *CrossSlotError. TestCrossSlotReachesNoServer
	// checks the same on a real cluster with INFO commandstats.
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
	defer cluster.Close()
	locker := redislock.New(cluster)
	ctx := context.Background()

	_, err := locker.ObtainMulti(ctx, []string{"foo", "bar"}, time.Second, nil)
	var cross *redislock.CrossSlotError
	if !errors.Is(err, redislock.ErrCrossSlot) || !errors.As(err, &cross) {
		t.Fatalf("got %v, want a *CrossSlotError", err)
	}
	if cross.Slots[0] != 12182 || cross.Slots[1] != 5061 || !strings.Contains(err.Error(), `"foo"=12182`) {
		t.Errorf("error %q does not name the keys and their slots", err)
	}
	_, err = locker.Obtain(ctx, "{job}:lock", time.Second, &redislock.Options{FenceKey: "fence"})
	if !errors.As(err, &cross) || len(cross.Keys) != 2 || cross.Keys[1] != "fence" {
		t.Errorf("fence key in another slot: got %v", err)
	}
}
