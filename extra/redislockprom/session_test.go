package redislockprom_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockprom"
	"github.com/redislock/redislock/internal/redistest"
)

// The leases of a session report as those kept alive one by one: three
// locks held; one taken by another holder is lost alone ("taken"); the
// session's Release ends the two others' holds as released.
func TestSession(t *testing.T) {
	rdb := redistest.Standalone(t)
	reg := prometheus.NewRegistry()
	col := redislockprom.NewCollector(nil)
	reg.MustRegister(col)
	client := redislock.New(rdb)
	client.AddHook(col)
	ctx := context.Background()

	sess, err := client.Session(600*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("Session: %v", err)
	}
	defer sess.Close()
	var kas []*redislock.KeepAlive
	for i := range 3 {
		_, ka, err := sess.Obtain(ctx, redistest.Key(t, fmt.Sprint("lock", i)), nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		kas = append(kas, ka)
	}
	if v := series(t, reg)["redislock_held{kind=lock}"]; v != 3 {
		t.Errorf("held = %v, want 3", v)
	}
	if err := rdb.Set(ctx, redistest.Key(t, "lock1"), "5:other:0:", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	select {
	case <-kas[1].Done():
	case <-time.After(waitTimeout):
		t.Fatal("the lease taken was not signalled lost")
	}
	if err := sess.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	check(t, "the end", series(t, reg), map[string]float64{
		"redislock_acquire_duration_seconds_count{kind=lock,outcome=obtained,wait=none}": 3,
		"redislock_hold_duration_seconds_count{end=lost,kind=lock}":                      1,
		"redislock_hold_duration_seconds_count{end=released,kind=lock}":                  2,
		"redislock_lost_total{kind=lock,reason=gone}":                                    0,
		"redislock_lost_total{kind=lock,reason=taken}":                                   1,
		"redislock_lost_total{kind=lock,reason=expired}":                                 0,
		"redislock_lost_total{kind=lock,reason=max_hold}":                                0,
		"redislock_lost_total{kind=lock,reason=error}":                                   0,
		"redislock_held{kind=lock}":                                                      0,
		"redislock_waiting{kind=lock}":                                                   0,
	})
}
