package chaos_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/chaos"
	"github.com/redislock/redislock/internal/redistest"
	"go.uber.org/goleak"
)

// TestLoad runs 200 goroutines contending for 50 locks on one server, each
// making a fixed number of obtain attempts (50 in make test, 5,000 with
// -chaos.long: a million), each lock obtained followed by one write to the
// fenced [chaos.Store] and a release. Every call is recorded in a
// [chaos.History] and judged by [chaos.Check], as the fault schedules are:
// nothing but ErrNotObtained may come back, no two holders may overlap, no
// obtain may succeed inside another holder's validity, fence tokens must
// follow real time and the store must refuse no write. It also checks that
// no goroutine is left.
//
// It is not parallel: goleak must see this test's goroutines alone.
func TestLoad(t *testing.T) {
	const goroutines, keys = 200, 50
	const ttl = 10 * time.Second
	ops := 50
	if *long {
		ops = 5000
	}
	srv := redistest.NewServer(t, redistest.Redis)
	ignore := goleak.IgnoreCurrent()

	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 64, ReadTimeout: ttl, WriteTimeout: ttl})
	h := chaos.NewHistory()
	w := &workload{h: h, store: chaos.NewStore(h), keys: lockKeys(t, keys), ttl: ttl}
	locker := redislock.New(rdb)
	start := time.Now()
	var wg sync.WaitGroup
	for g := range goroutines {
		//nolint:gosec // the workload's choice of keys, no secret
		wk := &worker{workload: w, id: g + 1, locker: locker, obtainer: locker, rnd: rand.New(rand.NewPCG(uint64(g), uint64(start.UnixNano())))}
		wg.Go(func() {
			for range ops {
				wk.attempt()
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := rdb.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	rep := chaos.Check(h.Events())
	total := goroutines * ops
	t.Logf("%d goroutines × %d obtains over %d keys in %v (%.0f obtains/s): %d obtained, %d failed, %d overlaps, %d token-order violations",
		goroutines, ops, keys, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(),
		rep.Obtains, rep.Failed, rep.Overlaps, rep.TokenOrder)
	// Every attempt, and for each lock obtained its write and release.
	if want := total + 2*rep.Obtains; rep.Ops != want {
		t.Errorf("%d calls and writes recorded, want %d", rep.Ops, want)
	}
	if rep.Obtains == 0 {
		t.Error("no lock was ever obtained")
	}
	bad := []struct {
		what string
		n    int
	}{
		{"calls failed other than with ErrNotObtained or ErrLockNotHeld", rep.Failed},
		{"overlaps", rep.Overlaps},
		{"obtains inside another holder's validity", rep.ObtainedWhileHeld},
		{"locks lost early", rep.LostEarly},
		{"token-order violations", rep.TokenOrder},
		{"stale writes accepted", rep.StaleAccepted},
		{"fenced writes refused", rep.StaleRefused},
	}
	for _, b := range bad {
		if b.n > 0 {
			t.Errorf("%d %s; want none", b.n, b.what)
		}
	}
	for _, v := range rep.Violations {
		t.Logf("%s", v)
	}
	results.add("load", rep, 0)
	left := "none"
	if err := goleak.Find(ignore); err != nil {
		left = err.Error()
		t.Errorf("goroutines left after the load: %v", err)
	}
	results.note("load: %d goroutines × %d obtain attempts over %d keys in %v (%.0f/s, -race), %d failed calls, %d overlaps, goroutines left: %s",
		goroutines, ops, keys, elapsed.Round(time.Millisecond), float64(total)/elapsed.Seconds(), rep.Failed, rep.Overlaps, left)
}

// attempt is one obtain of a random key without waiting, recorded; when it
// returns a lock, one write to the store with its fence token and the
// release follow.
func (w *worker) attempt() {
	h := w.h
	key := w.keys[w.rnd.IntN(len(w.keys))]
	start := h.Now()
	lock, err := w.locker.Obtain(context.Background(), key, w.ttl, &redislock.Options{FenceKey: fenceOf(key)})
	ev := w.obtainEvent(key, start, h.Now(), lock, err)
	h.Add(ev)
	if err != nil {
		return
	}
	w.store.Write(w.id, ev.Acq, key, ev.Token)
	w.release(key, lock, nil, ev.Acq)
}
