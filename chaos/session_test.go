package chaos_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/chaos"
)

// sessionFillers is how many locks of its own each worker's session keeps
// besides the one it contends for, so that its batches refresh several
// leases at once (one script call on a Cluster slot; they are in the
// worker's slot).
const sessionFillers = 6

// sessWorkload is the lock workload (see workload) with each worker's
// locks kept alive by a Session of its own, as a process would keep all
// its locks: each cycle obtains the contended lock through the session
// (Session.Obtain), holds it while its KeepAlive (the session's entry)
// says it is valid, and releases it; the session also keeps fillers. A
// session that ends (it could not reach Redis in time) is closed, and the
// next cycle starts a new one. It is judged by chaos.Check, as the lock
// workload is: a session's lease must be as safe as a keep-alive's.
type sessWorkload struct{ *workload }

// sessionWorkload returns the start of the session workload on e.keys
// under kind.
func sessionWorkload(e *env, kind faultKind) func(h *chaos.History) runner {
	return func(h *chaos.History) runner { return &sessWorkload{newLockWorkload(e, kind, h)} }
}

func (w *sessWorkload) run(clients []client, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for i, c := range clients {
		s := &sessWorker{worker: newWorker(w.workload, i, c)}
		wg.Go(func() {
			defer s.close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				s.cycle(stop)
			}
		})
	}
	wg.Wait()
}

// sessWorker is a worker whose locks a session keeps alive.
type sessWorker struct {
	*worker
	sess *redislock.Session
}

// session returns the worker's session, started (with its fillers) when
// there is none or the last one ended.
func (w *sessWorker) session() *redislock.Session {
	if w.sess != nil {
		select {
		case <-w.sess.Done():
			w.sess.Close()
			w.sess = nil
		default:
			return w.sess
		}
	}
	sess, err := w.locker.Session(w.ttl, nil)
	if err != nil {
		panic(err) // the workload's TTL is valid
	}
	w.sess = sess
	ctx, cancel := context.WithTimeout(context.Background(), w.callTimeout())
	defer cancel()
	for i := range sessionFillers {
		// Best effort: a filler not obtained is not kept.
		_, _, _ = sess.Obtain(ctx, fmt.Sprintf("%s:filler:%d:%d", w.keys[0], w.id, i), nil)
	}
	return sess
}

// close releases what the worker's session keeps.
func (w *sessWorker) close() {
	if w.sess == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), w.callTimeout())
	defer cancel()
	_ = w.sess.Release(ctx)
}

// cycle is one obtain, hold and release, the lock kept by the session.
func (w *sessWorker) cycle(stop <-chan struct{}) {
	h := w.h
	key := w.keys[w.rnd.IntN(len(w.keys))]
	sess := w.session()
	opt := redislock.Options{FenceKey: fenceOf(key), RetryStrategy: w.strategy()}
	ctx, cancel := context.WithTimeout(context.Background(), w.ttl)
	start := h.Now()
	lock, ka, err := sess.Obtain(ctx, key, &opt)
	end := h.Now()
	cancel()
	ev := w.obtainEvent(key, start, end, lock, err)
	if err == nil {
		// The holder believes what the session's keep-alive says.
		ev.TTL = h.At(ka.ValidUntil()) - start
	}
	h.Add(ev)
	if err != nil {
		w.idle(stop, w.ttl/10)
		return
	}
	held := sessionLock{Lock: lock, sess: sess}
	w.hold(key, key, held, ka, ev.Acq, ev.Token)
	w.release(key, held, ka, ev.Acq)
}

// sessionLock is a lock of a session: keeping it alive again (after a
// pause, see worker.pauseFor) puts it back under the session.
type sessionLock struct {
	*redislock.Lock
	sess *redislock.Session
}

func (l sessionLock) KeepAlive(time.Duration, *redislock.KeepAliveOptions) (*redislock.KeepAlive, error) {
	return l.sess.Add(l.Lock)
}

// TestFaultsSession runs every standalone fault kind on the session
// workload (see sessWorkload): under each, a lock kept by a session is as
// safe as one kept by its own keep-alive (no overlap, no stale write
// accepted, no early loss, tokens in order); under "pause", a paused
// holder's write is refused in every run. Its rows are "session/<kind>".
func TestFaultsSession(t *testing.T) {
	t.Parallel()
	eachRun(t, standaloneKinds, func(*testing.T) struct{} { return struct{}{} }, func(t *testing.T, kind faultKind, sc scale, _ struct{}, _ int) {
		keys := namedKeys(t, "session", sc.keys)
		e, p := standaloneEnv(t, "session/"+kind.name, kind, sc, keys, nil)
		p.start = sessionWorkload(e, kind)
		runParts(t, e, kind, p)
	})
}
