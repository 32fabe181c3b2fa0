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
)

// leaseHolder is what a worker holds: a lock, or a semaphore's permit.
type leaseHolder interface {
	KeepAlive(ttl time.Duration, opt *redislock.KeepAliveOptions) (*redislock.KeepAlive, error)
	Release(ctx context.Context) error
}

// semLimit is the limit of the semaphore workload: below the workers, so
// that they contend.
const semLimit = 2

// TestFaultsSemaphore runs every standalone fault kind on the semaphore
// workload (see semCycle): under each, the holders that believe they hold a
// permit of one key are never more than its limit (unless the kind loses
// data), fence tokens increase, and no permit is lost early.
func TestFaultsSemaphore(t *testing.T) {
	t.Parallel()
	eachRun(t, standaloneKinds, func(*testing.T) struct{} { return struct{}{} }, func(t *testing.T, kind faultKind, sc scale, _ struct{}, _ int) {
		srv := redistest.NewServer(t, redistest.Redis)
		e := &env{t: t, sc: sc, server: srv, keys: lockKeys(t, sc.keys)}
		clients := e.newClients(func() redis.UniversalClient {
			p := newProxy(t, srv.Addr())
			e.proxies = append(e.proxies, p)
			return redis.NewClient(clientOptions(p.Addr(), sc.ttl))
		})
		heal := func() {
			for _, p := range e.proxies {
				p.heal()
			}
		}
		if kind.name == "pause" {
			// Its effect is a paused holder's write refused by the store;
			// this workload writes nothing.
			kind.effect = nil
		}
		rep := runSemSchedule(t, e, kind, clients, heal)
		netErrs := e.netErrs.n.Load()
		results.add("semaphore/"+kind.name, rep, netErrs)
		t.Logf("semaphore/%s: %d ops, %d acquisitions, %d failed, %d network errors, %d over the limit of %d",
			kind.name, rep.Ops, rep.Obtains, rep.Failed, netErrs, rep.Overlaps, semLimit)
		checkReport(t, kind, rep, netErrs)
	})
}

// runSemSchedule is runSchedule for the semaphore workload, checked with
// chaos.CheckLimit.
func runSemSchedule(t *testing.T, e *env, kind faultKind, clients []redislock.RedisClient, heal func()) chaos.Report {
	t.Helper()
	e.h = chaos.NewHistory()
	e.rnd = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2)) //nolint:gosec // the schedule's choices, no secret
	w := &workload{h: e.h, keys: e.keys, ttl: e.sc.ttl, writes: 4, work: e.sc.ttl / 20, options: kind.options}
	if kind.pause != nil {
		w.pause = kind.pause(e.sc)
	}
	if kind.work > 0 {
		w.work = kind.work
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, c := range clients {
		//nolint:gosec // the workload's choices, no secret
		wk := &worker{workload: w, id: i + 1, locker: redislock.New(c), rnd: rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))}
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
	e.begin = time.Now()
	func() {
		defer func() {
			heal()
			close(stop)
			wg.Wait()
		}()
		kind.schedule(e)
	}()
	return chaos.CheckLimit(e.h.Events(), semLimit)
}

// semCycle is one acquire, hold and release of a permit: the lock
// workload's cycle on a semaphore of semLimit permits, without store
// writes (a store fenced by one highest token does not model limit
// concurrent writers), with the holder's belief taken from its keep-alive.
func (w *worker) semCycle(stop <-chan struct{}) {
	h := w.h
	key := w.keys[w.rnd.IntN(len(w.keys))]
	var opt redislock.Options
	if w.options != nil {
		opt = w.options()
	}
	opt.MinReplicas = 0 // not a semaphore's option
	opt.FenceKey = fenceOf(key)
	opt.RetryStrategy = redislock.LinearBackoff(w.ttl / 10)

	ctx, cancel := context.WithTimeout(context.Background(), w.ttl)
	start := h.Now()
	p, err := w.locker.Semaphore(key, semLimit).Acquire(ctx, w.ttl, &opt)
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
		w.hold(key, p, ka, ev.Acq, ev.Token)
	}
	w.release(key, p, ka, ev.Acq)
}
