package chaos_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/chaos"
)

// workload is many clients contending for a few locks: each worker obtains
// a lock (waiting a while for it), writes to the fenced store a few times
// with its fence token while its lease is valid, refreshes when half the
// lease is gone, and releases. Every call is recorded in the history.
type workload struct {
	h     *chaos.History
	store *chaos.Store
	keys  []string // lock keys; each has its fence key fenceOf(key)
	ttl   time.Duration
	// writes per acquisition, and the work between two of them.
	writes int
	work   time.Duration
	// options returns the Options of an obtain (with FenceKey and
	// RetryStrategy set by the worker). Nil: none more.
	options func() redislock.Options
	// believe is how long after sending an obtain or refresh the holder
	// believes its lease lasts; 0 means the TTL, which is what the key
	// guarantees. A longer one makes a deliberately unsafe client, to show
	// that the checker catches it.
	believe time.Duration
	// pause, when not nil, returns how long a holder stops after checking
	// its lease and before writing (a GC pause); 0 for none.
	pause func(r *rand.Rand) time.Duration
}

// fenceOf returns the fence key of a lock key "{tag}:lock": "{tag}:fence",
// in the same hash slot.
func fenceOf(key string) string { return key + ":fence" }

// run runs one worker per client until stop is closed, then returns once
// every worker has finished its current cycle (released its lock).
func (w *workload) run(clients []redislock.RedisClient, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for i, c := range clients {
		wk := &worker{workload: w, id: i + 1, locker: redislock.New(c), rnd: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))}
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				wk.cycle(stop)
			}
		})
	}
	wg.Wait()
}

type worker struct {
	*workload
	id     int
	locker *redislock.Client
	rnd    *rand.Rand
}

// callTimeout bounds each call of a worker: with ContextTimeoutEnabled it
// also bounds the socket I/O, so a stalled connection ends the call.
func (w *worker) callTimeout() time.Duration { return 2 * w.ttl }

// cycle is one obtain, hold and release.
func (w *worker) cycle(stop <-chan struct{}) {
	h := w.h
	key := w.keys[w.rnd.IntN(len(w.keys))]
	var opt redislock.Options
	if w.options != nil {
		opt = w.options()
	}
	opt.FenceKey = fenceOf(key)
	opt.RetryStrategy = redislock.LinearBackoff(w.ttl / 10)

	// Waiting for the lock ends after a TTL.
	ctx, cancel := context.WithTimeout(context.Background(), w.ttl)
	start := h.Now()
	lock, err := w.locker.Obtain(ctx, key, w.ttl, &opt)
	end := h.Now()
	cancel()
	lease := w.ttl
	if w.believe > 0 {
		lease = w.believe
	}
	ev := chaos.Event{Op: chaos.OpObtain, Client: w.id, Key: key, Start: start, End: end, TTL: lease}
	switch {
	case err == nil:
		ev.Result, ev.Acq, ev.Token = chaos.OK, h.NewAcq(), lock.FenceToken()
	case errors.Is(err, redislock.ErrNotObtained):
		ev.Result = chaos.No
	default:
		ev.Result, ev.Err = chaos.Failed, err.Error()
	}
	h.Add(ev)
	if err != nil {
		// Do not hammer a failing server.
		w.idle(stop, w.ttl/10)
		return
	}
	acq, token := ev.Acq, ev.Token
	valid := start + lease
	lost := false
	for range w.writes {
		// A careful holder writes only while its lease is valid…
		if h.Now() >= valid {
			break
		}
		// …but may stop right after checking.
		if w.pause != nil {
			if d := w.pause(w.rnd); d > 0 {
				h.Fault("client %d pauses %v holding #%d", w.id, d, acq)
				w.idle(nil, d)
			}
		}
		w.store.Write(w.id, acq, key, token)
		w.idle(nil, w.work)
		if h.Now() < valid-lease/2 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), w.callTimeout())
		rs := h.Now()
		err := lock.Refresh(ctx, w.ttl, nil)
		re := h.Now()
		cancel()
		ev := chaos.Event{Op: chaos.OpRefresh, Client: w.id, Acq: acq, Key: key, Start: rs, End: re, TTL: lease, Result: chaos.OK}
		switch {
		case err == nil:
			valid = rs + lease
		case errors.Is(err, redislock.ErrNotObtained):
			ev.Result, ev.Err = chaos.No, err.Error()
			lost = true
		default:
			ev.Result, ev.Err = chaos.Failed, err.Error()
		}
		h.Add(ev)
		if lost {
			return
		}
	}
	ctx, cancel = context.WithTimeout(context.Background(), w.callTimeout())
	rs := h.Now()
	err = lock.Release(ctx)
	re := h.Now()
	cancel()
	ev = chaos.Event{Op: chaos.OpRelease, Client: w.id, Acq: acq, Key: key, Start: rs, End: re, Result: chaos.OK}
	switch {
	case err == nil:
	case errors.Is(err, redislock.ErrLockNotHeld):
		ev.Result = chaos.No
	default:
		ev.Result, ev.Err = chaos.Failed, err.Error()
	}
	h.Add(ev)
}

// idle waits for d, or until stop is closed (when not nil).
func (w *worker) idle(stop <-chan struct{}, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	}
}
