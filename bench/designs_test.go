package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redislock/redislock/internal/redistest"
)

// TestGrantObtain runs the prototype of a handover without a queue: a
// worker that blocks while another holds the key gets it from that
// holder's release, the key reserved for it (not free) in between, and
// every key the prototype wrote has a TTL.
func TestGrantObtain(t *testing.T) {
	server := redistest.NewServer(t, redistest.Redis)
	admin := server.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	key := redistest.Key(t, "lock")
	holder := grantObtain(server.Client(t), key)
	waiter := grantObtain(server.Client(t), key)

	release, err := holder(ctx)
	if err != nil || release == nil {
		t.Fatalf("obtain of a free key: %v", err)
	}
	type result struct {
		release func(context.Context) error
		err     error
	}
	done := make(chan result, 1)
	go func() {
		r, err := waiter(ctx)
		done <- result{r, err}
	}()
	for {
		info := redistest.Info(t, admin, "clients", "blocked_clients")
		if info != "0" {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the waiter returned before it blocked: %v", r.err)
		case <-time.After(time.Millisecond): // polling the server's blocked clients
		}
	}
	if err := release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.release == nil {
		t.Fatalf("the waiter: %v", r.err)
	}
	v, err := admin.Get(ctx, key).Result()
	if err != nil || strings.HasPrefix(v, "~") {
		t.Errorf("key holds %q (%v), want the waiter's token", v, err)
	}
	for _, k := range admin.Keys(ctx, "*"+key+"*").Val() {
		if ttl := admin.PTTL(ctx, k).Val(); ttl <= 0 {
			t.Errorf("%s: PTTL %v, want an expiry", k, ttl)
		}
	}
	if err := r.release(ctx); err != nil {
		t.Fatal(err)
	}
	// Nobody waited: the key is reserved for a grant no client took, which
	// a newcomer's first attempt treats as free.
	if v := admin.Get(ctx, key).Val(); !strings.HasPrefix(v, "~") {
		t.Fatalf("key holds %q after a release with nobody waiting, want a reservation", v)
	}
	if err := admin.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	newcomer, err := grantObtain(server.Client(t), key)(ctx)
	if err != nil || newcomer == nil {
		t.Fatalf("obtain of a key reserved for a grant no client took: %v", err)
	}
	if stats := admin.Info(ctx, "commandstats").Val(); strings.Contains(stats, "cmdstat_blmove:") {
		t.Error("the newcomer blocked: its first attempt did not take the key")
	}
	if n := admin.Exists(ctx, key+":wake").Val(); n != 0 {
		t.Error("the grant that no client took is still on the wake-up list")
	}
}
