package chaos_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/chaos"
)

// workload is many clients contending for a few locks: each worker obtains
// a lock (waiting a while for it), keeps it with [redislock.Lock.KeepAlive],
// writes to the fenced store a few times with its fence token while the
// keep-alive says the lock is valid, and releases. Every call, and what the
// keep-alive said at each write and when it ended, is recorded in the
// history, so that each holder's belief that it holds the lock is exactly
// the keep-alive's validity.
type workload struct {
	h     *chaos.History
	store *chaos.Store
	keys  []string // lock keys; each has its fence key fenceOf(key)
	ttl   time.Duration
	// writes per acquisition, and the work between two of them; with vary,
	// each acquisition makes 1 to 2×writes of them, at random, so that
	// holders of one key end in any order.
	writes int
	vary   bool
	work   time.Duration
	// options returns the Options of an obtain (with FenceKey and
	// RetryStrategy set by the worker). Nil: none more.
	options func() redislock.Options
	// believe, when not 0, makes a deliberately unsafe client, to show that
	// the checker catches it: it keeps no keep-alive, refreshes by hand
	// (Lock.Refresh) only when half of what it believes is gone, and
	// believes each obtain or refresh lasts believe from its send, longer
	// than the TTL that the key guarantees.
	believe time.Duration
	// pause, when not nil, returns how long a holder stops after checking
	// its lease and before writing (a GC pause); 0 for none.
	pause func(r *rand.Rand) time.Duration
	// blindSlots makes a deliberately unsafe semaphore resource, to show
	// that the checker catches it: a holder claims a slot as if no other
	// permit were live (see worker.claim).
	blindSlots bool
	// wait makes every worker wait event-driven, handed the lock over by
	// the releases (WaitForRelease); otherwise workers poll every tenth of
	// a TTL. The workers' clients time reads out at half the TTL
	// (clientOptions): below a TTL of about 900 ms that ReadTimeout is too
	// short for a block (250 ms at least, plus a server tick and 100 ms of
	// margin), and WaitForRelease polls instead (see its doc).
	wait bool
	// handed counts the obtains that a release handed over.
	handed handoverCounter
}

// fenceOf returns the fence key of a lock key "{tag}:lock": "{tag}:fence",
// in the same hash slot.
func fenceOf(key string) string { return key + ":fence" }

// check checks the lock workload's history with chaos.Check.
func (w *workload) check(events []chaos.Event) chaos.Report { return chaos.Check(events) }

// handedOver returns how many obtains a release handed over.
func (w *workload) handedOver() int64 { return w.handed.n.Load() }

// strategy returns how the worker waits for a lock (see workload.wait).
func (w *worker) strategy() redislock.RetryStrategy {
	if w.wait {
		return redislock.WaitForRelease(nil)
	}
	return redislock.LinearBackoff(w.ttl / 10)
}

// handoverCounter is a redislock hook that counts the obtains that a
// release handed over ([redislock.ObtainEvent.HandedOver]).
type handoverCounter struct {
	redislock.NopHook
	n atomic.Int64
}

// ObtainDone counts e when a release handed it over.
func (c *handoverCounter) ObtainDone(_ context.Context, e redislock.ObtainEvent) {
	if e.HandedOver {
		c.n.Add(1)
	}
}

// run runs one worker per client until stop is closed, then returns once
// every worker has finished its current cycle (released its lock).
func (w *workload) run(clients []client, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for i, c := range clients {
		wk := newWorker(w, i, c)
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
	// obtainer takes the lock workload's locks: locker, or a Quorum
	// (quorum_test.go).
	obtainer obtainer
	errs     *connErrs // of the client's connections; nil: not counted
	rnd      *rand.Rand
}

// obtainer is what takes a lock: a [redislock.Client], or a
// [redislock.Quorum].
type obtainer interface {
	Obtain(ctx context.Context, key string, ttl time.Duration, opt *redislock.Options) (*redislock.Lock, error)
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
	opt.RetryStrategy = w.strategy()

	// Waiting for the lock ends after a TTL.
	ctx, cancel := context.WithTimeout(context.Background(), w.ttl)
	start := h.Now()
	lock, err := w.obtainer.Obtain(ctx, key, w.ttl, &opt)
	end := h.Now()
	cancel()
	ev := w.obtainEvent(key, start, end, lock, err)
	var ka *redislock.KeepAlive
	var kaErr error
	switch {
	case err != nil:
	case w.believe > 0:
		ev.TTL = w.believe
	default:
		// The holder believes what the keep-alive says: the lease from
		// the obtain's send, less the margin. It fails only when that
		// lease ran out before Obtain returned.
		ka, kaErr = lock.KeepAlive(w.ttl, nil)
		if kaErr == nil {
			ev.TTL = h.At(ka.ValidUntil()) - start
		}
	}
	h.Add(ev)
	if err != nil {
		// Do not hammer a failing server.
		w.idle(stop, w.ttl/10)
		return
	}
	if w.believe > 0 {
		w.holdUnsafe(key, lock, ev.Acq, ev.Token, start+w.believe)
	} else if kaErr == nil {
		w.hold(key, key, lock, ka, ev.Acq, ev.Token)
	}
	w.release(key, lock, ka, ev.Acq)
}

// obtainEvent returns the event of an Obtain of key that ran from start
// to end and returned lock, err: a new acquisition with the lock's fence
// token and a lease of the workload's TTL when it succeeded. It does not
// record it.
func (w *worker) obtainEvent(key string, start, end time.Duration, lock *redislock.Lock, err error) chaos.Event {
	ev := chaos.Event{Op: chaos.OpObtain, Client: w.id, Key: key, Start: start, End: end, TTL: w.ttl}
	switch {
	case err == nil:
		ev.Result, ev.Acq, ev.Token = chaos.OK, w.h.NewAcq(), lock.FenceToken()
	case errors.Is(err, redislock.ErrNotObtained):
		ev.Result = chaos.No
	default:
		ev.Result, ev.Err = chaos.Failed, err.Error()
	}
	return ev
}

// hold writes to the store's key target while the keep-alive ka says the
// lock (of key) is held, recording its validity before each write, and
// when it ended (if it did). A paused holder (workload.pause) on waking
// writes once more to target without looking; its pause lasts until a
// newer holder wrote to target, or at most overtakenWait more.
func (w *worker) hold(key, target string, lock leaseHolder, ka *redislock.KeepAlive, acq int, token int64) {
	h := w.h
	n := w.writes
	if w.vary {
		n = 1 + w.rnd.IntN(2*w.writes)
	}
	for range n {
		// A careful holder writes only while its keep-alive says the
		// lock is valid…
		now := h.Now()
		valid := h.At(ka.ValidUntil())
		select {
		case <-ka.Done():
			w.ended(key, ka, acq)
			return
		default:
		}
		if now >= valid {
			// Not ended yet, but the keep-alive's timer is about to fire.
			break
		}
		h.Add(chaos.Event{Op: chaos.OpKeepAlive, Client: w.id, Acq: acq, Key: key, Start: now, End: now, Result: chaos.OK, Valid: valid})
		// …but may stop right after checking.
		if w.pause != nil {
			if d := w.pause(w.rnd); d > 0 {
				ka = w.pauseFor(key, lock, ka, acq, d, w.store.Above(target, token))
			}
		}
		w.store.Write(w.id, acq, target, token)
		// Work until the next write, or until the keep-alive ends: then
		// the lock is lost, and the holder stops writing at once.
		t := time.NewTimer(w.work)
		select {
		case <-t.C:
		case <-ka.Done():
			t.Stop()
			w.ended(key, ka, acq)
			return
		}
	}
}

// pauseFor models a process pause (a stop-the-world GC, a stopped VM) of d
// between the holder's check of its validity and its write. Such a pause
// stops every goroutine of the process, the keep-alive's included, so the
// keep-alive must not refresh during it: the worker stops it (which sends
// nothing more and leaves ValidUntil at the end of the last lease), sleeps,
// and on waking does what the resumed keep-alive would: if the lease still
// lasts it keeps the lock alive again with a new keep-alive (KeepAlive
// replaces a stopped one); if the lease ran out during the pause, the
// returned keep-alive is the stopped one, whose validity is over, so the
// holder stops writing after the write it was about to make when it
// paused. That write is the stale one that fencing must refuse when another
// client obtained the lock meanwhile. When overtaken is not nil, the pause
// goes on after d until it is closed (another holder wrote with a higher
// token), for at most overtakenWait. It returns the keep-alive to go on
// with.
func (w *worker) pauseFor(key string, lock leaseHolder, ka *redislock.KeepAlive, acq int, d time.Duration, overtaken <-chan struct{}) *redislock.KeepAlive {
	h := w.h
	h.Fault("client %d pauses %v holding #%d", w.id, d, acq)
	ka.Stop()
	now := h.Now()
	h.Add(chaos.Event{Op: chaos.OpKeepAlive, Client: w.id, Acq: acq, Key: key, Start: now, End: now, Result: chaos.OK, Valid: h.At(ka.ValidUntil()), Err: "stopped for a pause"})
	w.idle(nil, d)
	if overtaken != nil {
		w.idle(overtaken, overtakenWait(w.ttl))
	}
	if time.Now().Before(ka.ValidUntil()) {
		if next, err := lock.KeepAlive(w.ttl, nil); err == nil {
			return next
		}
	}
	return ka
}

// overtakenWait bounds how long a paused holder waits, after its pause,
// for another holder to write with a higher token (see worker.pauseFor).
func overtakenWait(ttl time.Duration) time.Duration { return 4 * ttl }

// ended records how the keep-alive ka ended, once its Done is closed.
func (w *worker) ended(key string, ka *redislock.KeepAlive, acq int) {
	h := w.h
	now := h.Now()
	ev := chaos.Event{Op: chaos.OpKeepAlive, Client: w.id, Acq: acq, Key: key, Start: now, End: now, Result: chaos.OK}
	if vu := ka.ValidUntil(); !vu.IsZero() {
		ev.Valid = h.At(vu)
	}
	switch err := ka.Err(); {
	case errors.Is(err, redislock.ErrKeepAliveStopped):
		// Stopped for a pause: recorded then.
		return
	case errors.Is(err, redislock.ErrNotObtained):
		ev.Result, ev.Err = chaos.No, err.Error()
	default:
		ev.Result, ev.Err = chaos.Failed, err.Error()
	}
	h.Add(ev)
}

// holdUnsafe is the hold of the deliberately unsafe client (see
// workload.believe): it believes its lease lasts until valid, extended by
// each successful refresh.
func (w *worker) holdUnsafe(key string, lock *redislock.Lock, acq int, token int64, valid time.Duration) {
	h := w.h
	lease := w.believe
	for range w.writes {
		if h.Now() >= valid {
			return
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
		default:
			ev.Result, ev.Err = chaos.Failed, err.Error()
		}
		h.Add(ev)
		if ev.Result == chaos.No {
			return
		}
	}
}

// release records the keep-alive's last validity (when it is still
// running: Release stops it first) and releases the lock.
func (w *worker) release(key string, lock leaseHolder, ka *redislock.KeepAlive, acq int) {
	h := w.h
	if ka != nil {
		select {
		case <-ka.Done():
		default:
			now := h.Now()
			if vu := ka.ValidUntil(); !vu.IsZero() {
				h.Add(chaos.Event{Op: chaos.OpKeepAlive, Client: w.id, Acq: acq, Key: key, Start: now, End: now, Result: chaos.OK, Valid: h.At(vu)})
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.callTimeout())
	rs := h.Now()
	errs := w.errs.count()
	err := lock.Release(ctx)
	re := h.Now()
	cancel()
	h.Add(releaseEvent(w.id, acq, key, rs, re, err, w.errs.count() != errs))
}

// releaseEvent returns the event of a release (or resign) of acquisition
// acq of key by client that ran from start to end and returned err. A "not
// held" after a read on the client's connections failed during the call
// (connErr) is an unknown outcome, not a loss: go-redis runs a command
// again after some connection errors (EOF), even one that had run, and a
// release that ran once finds nothing to release the second time.
func releaseEvent(client, acq int, key string, start, end time.Duration, err error, connErr bool) chaos.Event {
	ev := chaos.Event{Op: chaos.OpRelease, Client: client, Acq: acq, Key: key, Start: start, End: end, Result: chaos.OK}
	switch {
	case err == nil:
	case errors.Is(err, redislock.ErrLockNotHeld) && connErr:
		ev.Result, ev.Err = chaos.Failed, err.Error()+", after a connection error in the call (go-redis may have run it twice)"
	case errors.Is(err, redislock.ErrLockNotHeld):
		ev.Result = chaos.No
	default:
		ev.Result, ev.Err = chaos.Failed, err.Error()
	}
	return ev
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
