package chaos_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/chaos"
)

// leaseHolder is what a worker holds: a lock, or a semaphore's permit.
type leaseHolder interface {
	KeepAlive(ttl time.Duration, opt *redislock.KeepAliveOptions) (*redislock.KeepAlive, error)
	Release(ctx context.Context) error
}

// semLimit is the limit of the semaphore workload: below the workers, so
// that they contend.
const semLimit = 2

// semWorkload is the lock workload (see workload) on semaphores of
// semLimit permits: each cycle acquires a permit of one of the keys, keeps
// it alive, claims a slot of the key's fenced resource (semLimit slots,
// each fenced on its own: chaos.Store.Claim, with the live permits read by
// Semaphore.Holders) and writes to that slot with its fence token (1 to 8
// times, so that the holders of a key end in any order) while the
// keep-alive says the permit is valid, then releases. It is judged by
// chaos.CheckLimit: never more than semLimit holders by local validity
// (unless the fault loses data), tokens in order, and per slot no stale
// write accepted and no valid holder's write refused.
type semWorkload struct{ *workload }

// semaphoreWorkload returns the start of the semaphore workload on keys
// under kind.
func semaphoreWorkload(e *env, kind faultKind, keys []string) func(h *chaos.History) runner {
	return func(h *chaos.History) runner {
		w := &workload{h: h, store: chaos.NewStore(h), keys: keys, ttl: e.sc.ttl, writes: 4, vary: true, work: e.sc.ttl / 20, wait: e.wait}
		if kind.pause != nil {
			w.pause = kind.pause(e.sc)
		}
		if kind.work > 0 {
			w.work = kind.work
		}
		return &semWorkload{w}
	}
}

func (w *semWorkload) check(events []chaos.Event) chaos.Report {
	return chaos.CheckLimit(events, semLimit)
}

func (w *semWorkload) run(clients []client, stop <-chan struct{}) {
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
				wk.semCycle(stop)
			}
		})
	}
	wg.Wait()
}

// semKeys returns n semaphore keys of t, in the hash slot of its lock keys.
func semKeys(t *testing.T, n int) []string { return namedKeys(t, "sem", n) }

// TestFaultsSemaphore runs every standalone fault kind on the semaphore
// workload (see semWorkload): under each, the holders that believe they
// hold a permit of one key are never more than its limit (unless the kind
// loses data), fence tokens increase, no permit is lost early, no write to
// a slot is accepted with a token below one it accepted before and no
// valid holder's write is refused; under "pause", a paused holder's write
// is refused in every run. Its rows are "semaphore/<kind>".
func TestFaultsSemaphore(t *testing.T) {
	t.Parallel()
	eachRun(t, standaloneKinds, func(*testing.T) struct{} { return struct{}{} }, func(t *testing.T, kind faultKind, sc scale, _ struct{}, _ int) {
		keys := semKeys(t, sc.keys)
		e, p := standaloneEnv(t, "semaphore/"+kind.name, kind, sc, keys, nil)
		p.start = semaphoreWorkload(e, kind, keys)
		runParts(t, e, kind, p)
	})
}

// The slot check is only worth something if it catches a resource that
// hands a valid holder's slot to another: here holders claim slots as if
// no other permit were live, and valid holders' writes are refused.
func TestFaultsSemaphoreCatchBlindSlots(t *testing.T) {
	t.Parallel()
	sc := currentScale()
	keys := semKeys(t, 1)
	// The run lasts until a write was refused, for at most 20 runs'
	// length more: beside a CPU hog a run of sc.dur saw 5 acquisitions
	// and no slot taken over.
	kind := faultKind{name: "blind-slots", schedule: holdUntilRefused}
	e, p := standaloneEnv(t, kind.name, kind, sc, keys, nil)
	start := semaphoreWorkload(e, kind, keys)
	p.start = func(h *chaos.History) runner {
		r := start(h)
		r.(*semWorkload).blindSlots = true
		return r
	}
	reps, _ := runReports(t, e, kind, p)
	rep := reps[0]
	t.Logf("blind slots: %d acquisitions, %d over the limit, %d valid holders' writes refused", rep.Obtains, rep.Overlaps, rep.HonestRefused)
	if rep.HonestRefused == 0 {
		t.Errorf("the checker missed valid holders' slots taken over: %+v", rep)
	}
	if rep.Overlaps != 0 || rep.StaleAccepted != 0 {
		t.Errorf("the semaphore itself must stay within its limit and the slots fenced: %d over the limit, %d stale writes accepted", rep.Overlaps, rep.StaleAccepted)
	}
}

// semCycle is one acquire, hold and release of a permit: the lock
// workload's cycle on a semaphore of semLimit permits, with the holder's
// belief taken from its keep-alive, its writes going to the slot it
// claimed (see semWorkload).
func (w *worker) semCycle(stop <-chan struct{}) {
	h := w.h
	key := w.keys[w.rnd.IntN(len(w.keys))]
	var opt redislock.Options
	if w.options != nil {
		opt = w.options()
	}
	opt.MinReplicas = 0 // not a semaphore's option
	opt.FenceKey = fenceOf(key)
	opt.RetryStrategy = w.strategy()

	sem := w.locker.Semaphore(key, semLimit)
	ctx, cancel := context.WithTimeout(context.Background(), w.ttl)
	start := h.Now()
	p, err := sem.Acquire(ctx, w.ttl, &opt)
	end := h.Now()
	cancel()
	ev := w.obtainEvent(key, start, end, nil, err)
	if err == nil {
		ev.Token = p.FenceToken()
	}
	var ka *redislock.KeepAlive
	var kaErr error
	if err == nil {
		ka, kaErr = p.KeepAlive(w.ttl, nil)
		if kaErr == nil {
			ev.TTL = h.At(ka.ValidUntil()) - start
		}
	}
	h.Add(ev)
	if err != nil {
		w.idle(stop, w.ttl/10)
		return
	}
	if kaErr == nil {
		if slot, ok := w.claim(key, sem, ka, ev.Acq, ev.Token); ok {
			w.hold(key, slot, p, ka, ev.Acq, ev.Token)
		}
	}
	w.release(key, p, ka, ev.Acq)
}

// claim takes a slot of key's fenced resource for the permit of acq (see
// chaos.Store.Claim): it reads the live permits (Semaphore.Holders), then,
// while the keep-alive ka says the permit is valid (recorded, as before a
// write), claims a slot whose last writer is not among them. It reads
// again when no slot was free (the live permits it read may have expired
// since), three times at most, and returns the slot's key, or false when
// it got none (the holder then writes nothing).
func (w *worker) claim(key string, sem redislock.Semaphore, ka *redislock.KeepAlive, acq int, token int64) (string, bool) {
	h := w.h
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), w.callTimeout())
		holders, err := sem.Holders(ctx)
		cancel()
		if err != nil {
			return "", false
		}
		live := make(map[int64]bool, len(holders))
		for _, p := range holders {
			live[p.FenceToken] = true
		}
		now := h.Now()
		valid := h.At(ka.ValidUntil())
		select {
		case <-ka.Done():
			w.ended(key, ka, acq)
			return "", false
		default:
		}
		if now >= valid {
			return "", false
		}
		h.Add(chaos.Event{Op: chaos.OpKeepAlive, Client: w.id, Acq: acq, Key: key, Start: now, End: now, Result: chaos.OK, Valid: valid})
		isLive := func(t int64) bool { return live[t] }
		if w.blindSlots {
			isLive = func(int64) bool { return false }
		}
		if slot, ok := w.store.Claim(w.id, acq, key, semLimit, token, isLive); ok {
			return slot, true
		}
	}
	return "", false
}
