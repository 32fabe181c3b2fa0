package redislockprom_test

import (
	"context"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/extra/redislockprom"
	"github.com/redislock/redislock/internal/redistest"
)

// campaignWaits signals each attempt of a campaign that found a leader.
type campaignWaits struct {
	redislock.NopHook
	ch chan struct{}
}

func (c *campaignWaits) ObtainAttempt(_ context.Context, e redislock.AttemptEvent) {
	if e.Kind == redislock.KindElection && e.Outcome == redislock.OutcomeNotObtained {
		select {
		case c.ch <- struct{}{}:
		default:
		}
	}
}

// A semaphore, an RW lock and an election on one Client, on a real
// registry: each reports under its own kind label, with the values of
// what happened.
func TestPrimitives(t *testing.T) {
	rdb := redistest.Standalone(t)
	reg := prometheus.NewPedanticRegistry()
	col := redislockprom.NewCollector(nil)
	reg.MustRegister(col)
	client := redislock.New(rdb)
	client.AddHook(col)
	waits := &campaignWaits{ch: make(chan struct{}, 16)}
	client.AddHook(waits)
	ctx := context.Background()

	acquire := func(kind, outcome, wait string) string {
		return "redislock_acquire_duration_seconds_count{kind=" + kind + ",outcome=" + outcome + ",wait=" + wait + "}"
	}
	hold := func(kind, end string) string {
		return "redislock_hold_duration_seconds_count{end=" + end + ",kind=" + kind + "}"
	}
	gauges := func(kind string, held, waiting float64) map[string]float64 {
		return map[string]float64{"redislock_held{kind=" + kind + "}": held, "redislock_waiting{kind=" + kind + "}": waiting}
	}
	// The series a Collector without KeyName starts with: the locks'.
	want := gauges("lock", 0, 0)
	for _, r := range []string{"gone", "taken", "expired", "max_hold", "error"} {
		want["redislock_lost_total{kind=lock,reason="+r+"}"] = 0
	}
	add := func(m map[string]float64) {
		maps.Copy(want, m)
	}

	// A semaphore of two permits: two taken, a third refused, one given
	// back, one lost to an admin DEL behind its keep-alive.
	semKey := redistest.Key(t, "sem")
	sem := client.Semaphore(semKey, 2)
	p1, err := sem.Acquire(ctx, time.Minute, nil)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	p2, err := sem.Acquire(ctx, time.Minute, nil)
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	if _, err := sem.Acquire(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("third Acquire = %v, want ErrNotObtained", err)
	}
	add(gauges("semaphore", 2, 0))
	add(map[string]float64{acquire("semaphore", "obtained", "none"): 2, acquire("semaphore", "not_obtained", "none"): 1})
	check(t, "two permits", series(t, reg), want)
	if err := p1.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	ka, err := p2.KeepAlive(600*time.Millisecond, nil)
	if err != nil {
		t.Fatalf("KeepAlive: %v", err)
	}
	if err := rdb.Del(ctx, semKey).Err(); err != nil {
		t.Fatalf("DEL: %v", err)
	}
	select {
	case <-ka.Done():
	case <-time.After(waitTimeout):
		t.Fatal("the permit's keep-alive did not end after the DEL")
	}
	ka.Stop() // Lost is reported after Done closes, on the goroutine Stop waits for
	add(gauges("semaphore", 0, 0))
	add(map[string]float64{
		hold("semaphore", "released"):                      1,
		hold("semaphore", "lost"):                          1,
		"redislock_lost_total{kind=semaphore,reason=gone}": 1,
	})
	check(t, "semaphore", series(t, reg), want)

	// An RW lock: a read hold, a writer refused behind it, the write lock
	// taken once the reader left, downgraded, the read hold released.
	rw := client.RWMutex(redistest.Key(t, "rw"))
	r, err := rw.RLock(ctx, time.Minute, nil)
	if err != nil {
		t.Fatalf("RLock: %v", err)
	}
	if _, err := rw.Lock(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Fatalf("Lock = %v, want ErrNotObtained", err)
	}
	if err := r.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	w, err := rw.Lock(ctx, time.Minute, nil)
	if err != nil {
		t.Fatalf("Lock: %v", err)
	}
	r2, err := w.Downgrade(ctx, time.Minute)
	if err != nil {
		t.Fatalf("Downgrade: %v", err)
	}
	add(gauges("read", 1, 0))
	add(gauges("write", 0, 0))
	add(map[string]float64{
		acquire("read", "obtained", "none"):      2,
		acquire("write", "not_obtained", "none"): 1,
		acquire("write", "obtained", "none"):     1,
		hold("read", "released"):                 1,
		hold("write", "released"):                1,
	})
	check(t, "downgraded", series(t, reg), want)
	if err := r2.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	add(gauges("read", 0, 0))
	add(map[string]float64{hold("read", "released"): 2})

	// An election: a elected, b campaigning meanwhile, a resigns and so
	// elects b, b resigns.
	el := client.Election(redistest.Key(t, "election"))
	a, err := el.Campaign(ctx, "a", 2*time.Second)
	if err != nil {
		t.Fatalf("a: Campaign: %v", err)
	}
	type result struct {
		lead *redislock.Leadership
		err  error
	}
	bDone := make(chan result, 1)
	go func() {
		l, err := el.Campaign(ctx, "b", 2*time.Second)
		bDone <- result{l, err}
	}()
	select { // b's first attempt found a leader
	case <-waits.ch:
	case <-time.After(waitTimeout):
		t.Fatal("b made no attempt")
	}
	add(gauges("election", 1, 1))
	add(map[string]float64{acquire("election", "obtained", "none"): 1})
	check(t, "b campaigning", series(t, reg), want)
	if err := a.Resign(ctx); err != nil {
		t.Fatalf("a: Resign: %v", err)
	}
	var b *redislock.Leadership
	select {
	case res := <-bDone:
		if res.err != nil {
			t.Fatalf("b: Campaign: %v", res.err)
		}
		b = res.lead
	case <-time.After(waitTimeout):
		t.Fatal("b not elected after a resigned")
	}
	if err := b.Resign(ctx); err != nil {
		t.Fatalf("b: Resign: %v", err)
	}
	add(gauges("election", 0, 0))
	add(map[string]float64{
		acquire("election", "obtained", "event"): 1,
		hold("election", "handed_over"):          1,
		hold("election", "released"):             1,
	})
	check(t, "the end", series(t, reg), want)
}
