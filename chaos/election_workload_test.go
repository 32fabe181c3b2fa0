package chaos_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/chaos"
	"github.com/redislock/redislock/internal/redistest"
)

// electionWorkload is the workload of leader election: each worker
// campaigns ([redislock.Election.Campaign], waiting a TTL at most) on one of
// a few elections, and while it leads it writes to the fenced store with its
// term, as long as its leadership is valid by its own clock
// ([redislock.Leadership.ValidUntil]), then resigns. The history records it
// as the lock workload's: a leadership is an acquisition whose token is the
// term, its validity what the leadership's keep-alive says, its end the
// Resign. So the checker's rules are the election's: never two leaders by
// local validity (unless the fault loses data), and no stale write (fenced
// by term) accepted, ever.
type electionWorkload struct {
	h      *chaos.History
	store  *chaos.Store
	names  []string
	ttl    time.Duration
	writes int
	work   time.Duration
}

func (w *electionWorkload) run(clients []redislock.RedisClient, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for i, c := range clients {
		//nolint:gosec // the workload's choices, no secret
		rnd := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
		locker := redislock.New(c)
		id := i + 1
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				w.cycle(locker, id, rnd, stop)
			}
		})
	}
	wg.Wait()
}

func (w *electionWorkload) cycle(locker *redislock.Client, id int, rnd *rand.Rand, stop <-chan struct{}) {
	h := w.h
	name := w.names[rnd.IntN(len(w.names))]
	e := locker.Election(name)
	ctx, cancel := context.WithTimeout(context.Background(), w.ttl)
	start := h.Now()
	lead, err := e.Campaign(ctx, "worker", w.ttl)
	end := h.Now()
	cancel()
	ev := chaos.Event{Op: chaos.OpObtain, Client: id, Key: name, Start: start, End: end, TTL: w.ttl}
	switch {
	case err == nil:
		ev.Result, ev.Acq, ev.Token = chaos.OK, h.NewAcq(), lead.Term()
		ev.TTL = h.At(lead.ValidUntil()) - start
	case errors.Is(err, redislock.ErrNotObtained):
		ev.Result = chaos.No
	default:
		ev.Result, ev.Err = chaos.Failed, err.Error()
	}
	h.Add(ev)
	if err != nil {
		idle(stop, w.ttl/10)
		return
	}
	w.lead(id, name, lead, ev.Acq)
	// The leadership's last validity, then the Resign (which ends it first).
	select {
	case <-lead.Done():
	default:
		now := h.Now()
		if vu := lead.ValidUntil(); !vu.IsZero() {
			h.Add(chaos.Event{Op: chaos.OpKeepAlive, Client: id, Acq: ev.Acq, Key: name, Start: now, End: now, Result: chaos.OK, Valid: h.At(vu)})
		}
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 2*w.ttl)
	rs := h.Now()
	err = lead.Resign(rctx)
	re := h.Now()
	rcancel()
	rev := chaos.Event{Op: chaos.OpRelease, Client: id, Acq: ev.Acq, Key: name, Start: rs, End: re, Result: chaos.OK}
	switch {
	case err == nil:
	case errors.Is(err, redislock.ErrLockNotHeld):
		rev.Result = chaos.No
	default:
		rev.Result, rev.Err = chaos.Failed, err.Error()
	}
	h.Add(rev)
}

// lead writes with the term while the leadership is valid.
func (w *electionWorkload) lead(id int, name string, lead *redislock.Leadership, acq int) {
	h := w.h
	for range w.writes {
		now := h.Now()
		valid := h.At(lead.ValidUntil())
		select {
		case <-lead.Done():
			w.ended(id, name, lead, acq)
			return
		default:
		}
		if now >= valid {
			break
		}
		h.Add(chaos.Event{Op: chaos.OpKeepAlive, Client: id, Acq: acq, Key: name, Start: now, End: now, Result: chaos.OK, Valid: valid})
		w.store.Write(id, acq, name, lead.Term())
		t := time.NewTimer(w.work)
		select {
		case <-t.C:
		case <-lead.Done():
			t.Stop()
			w.ended(id, name, lead, acq)
			return
		}
	}
}

func (w *electionWorkload) ended(id int, name string, lead *redislock.Leadership, acq int) {
	h := w.h
	now := h.Now()
	ev := chaos.Event{Op: chaos.OpKeepAlive, Client: id, Acq: acq, Key: name, Start: now, End: now, Result: chaos.OK}
	if vu := lead.ValidUntil(); !vu.IsZero() {
		ev.Valid = h.At(vu)
	}
	switch err := lead.Err(); {
	case errors.Is(err, redislock.ErrNotObtained):
		ev.Result, ev.Err = chaos.No, err.Error()
	default:
		ev.Result, ev.Err = chaos.Failed, err.Error()
	}
	h.Add(ev)
}

func idle(stop <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-stop:
	}
}

// TestElectionFaults runs the election workload under every standalone
// fault kind but "pause" (a pause must stop the leadership's keep-alive,
// which the workload cannot reach; the lock workload covers that path of
// the same keep-alive), each against a redis-server of its own with each
// worker behind a proxy of its own, and checks each history as
// TestFaults does. Its rows are "election/<kind>".
func TestElectionFaults(t *testing.T) {
	t.Parallel()
	var kinds []faultKind
	for _, k := range standaloneKinds {
		if k.name == "pause" || k.options != nil || k.believe != 0 {
			continue
		}
		kinds = append(kinds, k)
	}
	eachRun(t, electionKinds(kinds), func(*testing.T) struct{} { return struct{}{} }, func(t *testing.T, kind faultKind, sc scale, _ struct{}, _ int) {
		srv := redistest.NewServer(t, redistest.Redis)
		e := &env{t: t, sc: sc, server: srv, keys: lockKeys(t, sc.keys)}
		clients := e.newClients(func() redis.UniversalClient {
			p := newProxy(t, srv.Addr())
			e.proxies = append(e.proxies, p)
			return redis.NewClient(clientOptions(p.Addr(), sc.ttl))
		})
		runElectionKind(t, e, kind, clients, func() {
			for _, p := range e.proxies {
				p.heal()
			}
		})
	})
}

// TestElectionFaultsSentinel and TestElectionFaultsCluster run the election
// workload under the Sentinel and Cluster fault kinds, as TestFaultsSentinel
// and TestFaultsCluster run the lock workload.
func TestElectionFaultsSentinel(t *testing.T) {
	t.Parallel()
	newSentinel := func(t *testing.T) *redistest.Sentinel { return redistest.NewSentinel(t, redistest.Redis) }
	eachRun(t, electionKinds(sentinelKinds), newSentinel, func(t *testing.T, kind faultKind, sc scale, s *redistest.Sentinel, n int) {
		e := &env{t: t, sc: sc, sentinel: s, keys: lockKeys(t, sc.keys)}
		if n > 0 {
			waitReplicaInSync(e)
		}
		clients := e.newClients(func() redis.UniversalClient {
			o := s.Options()
			o.Protocol, o.DisableIdentity = 2, true
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout = sc.ttl/2, sc.ttl/2, sc.ttl/2
			o.ContextTimeoutEnabled, o.MaxRetries, o.PoolSize = true, 1, 4
			return redis.NewFailoverClient(o)
		})
		runElectionKind(t, e, kind, clients, func() {})
	})
}

func TestElectionFaultsCluster(t *testing.T) {
	t.Parallel()
	newCluster := func(t *testing.T) *redistest.Cluster { return redistest.NewCluster(t, redistest.Redis) }
	eachRun(t, electionKinds(clusterKinds), newCluster, func(t *testing.T, kind faultKind, sc scale, c *redistest.Cluster, _ int) {
		e := &env{t: t, sc: sc, cluster: c, keys: lockKeys(t, sc.keys)}
		clients := e.newClients(func() redis.UniversalClient {
			o := c.Options()
			o.Protocol, o.DisableIdentity = 2, true
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout = sc.ttl/2, sc.ttl/2, sc.ttl/2
			o.ContextTimeoutEnabled, o.PoolSize = true, 4
			return redis.NewClusterClient(o)
		})
		runElectionKind(t, e, kind, clients, func() {})
	})
}

// electionKinds returns kinds renamed "election/<kind>", without those
// whose options the election does not take.
func electionKinds(kinds []faultKind) []faultKind {
	var out []faultKind
	for _, k := range kinds {
		if k.options != nil || k.believe != 0 || k.pause != nil {
			continue
		}
		k.name = "election/" + k.name
		out = append(out, k)
	}
	return out
}

// runElectionKind runs the election workload on clients (the elections are
// e.keys) while kind's schedule runs, heals, checks the history, records
// the report in the results table and fails the test as runKind does.
func runElectionKind(t *testing.T, e *env, kind faultKind, clients []redislock.RedisClient, heal func()) {
	t.Helper()
	e.h = chaos.NewHistory()
	e.rnd = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 18)) //nolint:gosec // the schedule's choices, no secret
	w := &electionWorkload{h: e.h, store: chaos.NewStore(e.h), names: e.keys, ttl: e.sc.ttl, writes: 4, work: e.sc.ttl / 20}
	if kind.work > 0 {
		w.work = kind.work
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(clients, stop)
	}()
	e.begin = time.Now()
	func() {
		defer func() {
			heal()
			close(stop)
			<-done
		}()
		kind.schedule(e)
	}()
	rep := chaos.Check(e.h.Events())
	netErrs := e.netErrs.n.Load()
	results.add(kind.name, rep, netErrs)
	t.Logf("%s: %d ops, %d leaderships, %d failed, %d network errors, %d overlaps, %d stale writes refused, %d accepted",
		kind.name, rep.Ops, rep.Obtains, rep.Failed, netErrs, rep.Overlaps, rep.StaleRefused, rep.StaleAccepted)
	checkReport(t, kind, rep, netErrs)
}
