package chaos_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/chaos"
)

// rwHandle is what the RW workload needs of a read hold or a write lock.
type rwHandle interface {
	KeepAlive(ttl time.Duration, opt *redislock.KeepAliveOptions) (*redislock.KeepAlive, error)
	Release(ctx context.Context) error
	FenceToken() int64
}

// rwWorkload is the workload of [workload] on RWMutexes: each cycle takes
// a read hold (3 in 4) or the write lock of one of the keys' RWMutexes,
// keeps it alive, and, for a write lock, writes to the fenced store a few
// times with its fence token while the keep-alive says it is valid.
// Readers work as long without writing. reads records which acquisitions
// are read holds, for [chaos.CheckRW].
type rwWorkload struct {
	*workload
	mu    sync.Mutex
	reads map[int]bool
}

func (w *rwWorkload) run(clients []client, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for i, c := range clients {
		wk := newWorker(w.workload, i, c)
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				w.cycle(wk, stop)
			}
		})
	}
	wg.Wait()
}

func (w *rwWorkload) cycle(wk *worker, stop <-chan struct{}) {
	h := w.h
	key := w.keys[wk.rnd.IntN(len(w.keys))]
	write := wk.rnd.IntN(4) == 0
	rw := wk.locker.RWMutex(key)
	opt := redislock.Options{FenceKey: fenceOf(key), RetryStrategy: wk.strategy()}
	ctx, cancel := context.WithTimeout(context.Background(), w.ttl)
	start := h.Now()
	var handle rwHandle
	var err error
	if write {
		var l *redislock.WriteLock
		if l, err = rw.Lock(ctx, w.ttl, &opt); err == nil {
			handle = l
		}
	} else {
		var r *redislock.ReadLock
		if r, err = rw.RLock(ctx, w.ttl, &opt); err == nil {
			handle = r
		}
	}
	end := h.Now()
	cancel()
	ev := chaos.Event{Op: chaos.OpObtain, Client: wk.id, Key: key, Start: start, End: end, TTL: w.ttl}
	switch {
	case err == nil:
		ev.Result, ev.Acq, ev.Token = chaos.OK, h.NewAcq(), handle.FenceToken()
		if !write {
			w.mu.Lock()
			w.reads[ev.Acq] = true
			w.mu.Unlock()
		}
	case errors.Is(err, redislock.ErrNotObtained):
		ev.Result = chaos.No
	default:
		ev.Result, ev.Err = chaos.Failed, err.Error()
	}
	var ka *redislock.KeepAlive
	var kaErr error
	if err == nil {
		ka, kaErr = handle.KeepAlive(w.ttl, nil)
		if kaErr == nil {
			ev.TTL = h.At(ka.ValidUntil()) - start
		}
	}
	h.Add(ev)
	if err != nil {
		wk.idle(stop, w.ttl/10)
		return
	}
	if kaErr == nil {
		w.hold(wk, key, handle, ka, ev.Acq, ev.Token, write)
	}
	w.release(wk, key, handle, ka, ev.Acq)
}

// hold is worker.hold for a read hold or a write lock: only writers write.
func (w *rwWorkload) hold(wk *worker, key string, handle rwHandle, ka *redislock.KeepAlive, acq int, token int64, write bool) {
	h := w.h
	for range w.writes {
		now := h.Now()
		valid := h.At(ka.ValidUntil())
		select {
		case <-ka.Done():
			wk.ended(key, ka, acq)
			return
		default:
		}
		if now >= valid {
			break
		}
		h.Add(chaos.Event{Op: chaos.OpKeepAlive, Client: wk.id, Acq: acq, Key: key, Start: now, End: now, Result: chaos.OK, Valid: valid})
		if write {
			if w.pause != nil {
				if d := w.pause(wk.rnd); d > 0 {
					ka = wk.pauseFor(key, handle, ka, acq, d, w.store.Above(key, token))
				}
			}
			w.store.Write(wk.id, acq, key, token)
		}
		t := time.NewTimer(w.work)
		select {
		case <-t.C:
		case <-ka.Done():
			t.Stop()
			wk.ended(key, ka, acq)
			return
		}
	}
}

// release is worker.release for a read hold or a write lock.
func (w *rwWorkload) release(wk *worker, key string, handle rwHandle, ka *redislock.KeepAlive, acq int) {
	h := w.h
	if ka != nil {
		select {
		case <-ka.Done():
		default:
			now := h.Now()
			if vu := ka.ValidUntil(); !vu.IsZero() {
				h.Add(chaos.Event{Op: chaos.OpKeepAlive, Client: wk.id, Acq: acq, Key: key, Start: now, End: now, Result: chaos.OK, Valid: h.At(vu)})
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), wk.callTimeout())
	rs := h.Now()
	errs := wk.errs.count()
	err := handle.Release(ctx)
	re := h.Now()
	cancel()
	h.Add(releaseEvent(wk.id, acq, key, rs, re, err, wk.errs.count() != errs))
}

// TestFaultsRWMutex runs the RW workload under every standalone fault kind
// (see standaloneKinds), as TestFaults does the lock workload, and checks
// each history with chaos.CheckRW: never a writer together with any other
// holder by local validity (unless the kind loses data), no stale write
// accepted, write tokens in order. Its rows in the results table are
// "rw/<kind>".
func TestFaultsRWMutex(t *testing.T) {
	t.Parallel()
	eachRun(t, standaloneKinds, func(*testing.T) struct{} { return struct{}{} }, func(t *testing.T, kind faultKind, sc scale, _ struct{}, _ int) {
		keys := rwKeys(t, sc.keys)
		e, p := standaloneEnv(t, "rw/"+kind.name, kind, sc, keys, nil)
		p.start = rwMutexWorkload(e, kind, keys)
		runParts(t, e, kind, p)
	})
}

// rwKeys returns n RWMutex names of t, in the hash slot of its lock keys.
func rwKeys(t *testing.T, n int) []string { return namedKeys(t, "rw", n) }

// rwMutexWorkload returns the start of the RW workload on keys under kind.
func rwMutexWorkload(e *env, kind faultKind, keys []string) func(h *chaos.History) runner {
	return func(h *chaos.History) runner {
		w := &rwWorkload{workload: &workload{
			h:      h,
			store:  chaos.NewStore(h),
			keys:   keys,
			ttl:    e.sc.ttl,
			writes: 4,
			work:   e.sc.ttl / 20,
			wait:   e.wait,
		}, reads: map[int]bool{}}
		if kind.pause != nil {
			w.pause = kind.pause(e.sc)
		}
		return w
	}
}

// check checks the RW workload's history with chaos.CheckRW.
func (w *rwWorkload) check(events []chaos.Event) chaos.Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	return chaos.CheckRW(events, w.reads)
}
