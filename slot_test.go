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

// Known vectors: from the Redis Cluster specification (CRC16 of
// "123456789" is 0x31C3) and from CLUSTER KEYSLOT on a Redis 7 server.
func TestHashSlot(t *testing.T) {
	cases := []struct {
		key  string
		want int
	}{
		{"123456789", 0x31C3 % 16384},
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363},    // empty first tag: the whole key is hashed
		{"foo{{bar}}zap", 4015}, // the tag is "{bar"
		{"foo{bar}{zap}", 5061}, // only the first tag counts
		{"", 0},
	}
	for _, tc := range cases {
		if got := redislock.HashSlot(tc.key); got != tc.want {
			t.Errorf("HashSlot(%q) = %d, want %d", tc.key, got, tc.want)
		}
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
