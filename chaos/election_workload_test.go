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
//
// Under "pause" a leader stops between its check and its write for longer
// than its TTL, its client frozen meanwhile (see electionWorkload.freezeFor),
// and then writes with its old term: the store must refuse that write in
// every run.
type electionWorkload struct {
	h      *chaos.History
	store  *chaos.Store
	names  []string
	ttl    time.Duration
	writes int
	work   time.Duration
	// pause, when not nil, returns how long a leader stops after checking
	// its validity and before writing; 0 for none. freezers[i] is the
	// freezer of worker i+1's client, which a pause freezes.
	pause    func(r *rand.Rand) time.Duration
	freezers []*freezer
	handed   handoverCounter // campaigns that a resign or release handed over
}

// electionWorkloadStart returns the start of the election workload on the
// elections names under kind; freezers (one per worker, hooks of their
// clients) are what its pauses freeze, nil when kind has none.
func electionWorkloadStart(e *env, kind faultKind, names []string, freezers []*freezer) func(h *chaos.History) runner {
	return func(h *chaos.History) runner {
		w := &electionWorkload{h: h, store: chaos.NewStore(h), names: names, ttl: e.sc.ttl, writes: 4, work: e.sc.ttl / 20, freezers: freezers}
		if kind.pause != nil && freezers != nil {
			w.pause = kind.pause(e.sc)
		}
		if kind.work > 0 {
			w.work = kind.work
		}
		return w
	}
}

// check checks the election workload's history with chaos.Check.
func (w *electionWorkload) check(events []chaos.Event) chaos.Report { return chaos.Check(events) }

// handedOver returns how many campaigns a resign or release handed over.
func (w *electionWorkload) handedOver() int64 { return w.handed.n.Load() }

// electionKeys returns n election names of t, in the hash slot of its lock
// keys.
func electionKeys(t *testing.T, n int) []string { return namedKeys(t, "election", n) }

func (w *electionWorkload) run(clients []client, stop <-chan struct{}) {
	var wg sync.WaitGroup
	for i, c := range clients {
		//nolint:gosec // the workload's choices, no secret
		rnd := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
		locker := redislock.New(c.rdb)
		locker.AddHook(&w.handed)
		id := i + 1
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				w.cycle(locker, c.errs, id, rnd, stop)
			}
		})
	}
	wg.Wait()
}

func (w *electionWorkload) cycle(locker *redislock.Client, errs *connErrs, id int, rnd *rand.Rand, stop <-chan struct{}) {
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
	w.lead(id, rnd, name, lead, ev.Acq)
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
	n := errs.count()
	err = lead.Resign(rctx)
	re := h.Now()
	rcancel()
	h.Add(releaseEvent(id, ev.Acq, name, rs, re, err, errs.count() != n))
}

// lead writes with the term while the leadership is valid.
func (w *electionWorkload) lead(id int, rnd *rand.Rand, name string, lead *redislock.Leadership, acq int) {
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
		if w.pause != nil {
			if d := w.pause(rnd); d > 0 {
				w.freezeFor(id, name, lead, acq, d)
			}
		}
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

// freezeFor models a process pause of the leader of acq between its check
// of its validity and its write, as worker.pauseFor does for a lock holder.
// Such a pause stops the leadership's keep-alive with the rest of the
// process, but a Leadership's keep-alive cannot be stopped without
// resigning, which a paused process does not do. So the pause is made at
// the client boundary: the leader's client is frozen (see freezer) while
// its goroutine sleeps, and no refresh of its keep-alive reaches Redis.
// The keep-alive's validity runs out (it ends by itself, at ValidUntil, as
// the validity was when the pause began), the election key expires on the
// server, and another campaigner is elected with a higher term. The pause
// lasts d, then until the store has accepted a write with a higher term
// for the election, for at most overtakenWait more. Then the client is
// thawed and the leader, resuming, writes with its old term without
// looking again: the stale write the store must refuse.
func (w *electionWorkload) freezeFor(id int, name string, lead *redislock.Leadership, acq int, d time.Duration) {
	h := w.h
	f := w.freezers[id-1]
	f.freeze()
	h.Fault("client %d frozen for %v leading #%d (term %d)", id, d, acq, lead.Term())
	now := h.Now()
	h.Add(chaos.Event{Op: chaos.OpKeepAlive, Client: id, Acq: acq, Key: name, Start: now, End: now, Result: chaos.OK, Valid: h.At(lead.ValidUntil()), Err: "frozen for a pause"})
	idle(nil, d)
	idle(w.store.Above(name, lead.Term()), overtakenWait(w.ttl))
	f.thaw()
	h.Fault("client %d thawed", id)
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
// fault kind, each against a redis-server of its own with each worker
// behind a proxy of its own, and checks each history as TestFaults does.
// Its rows are "election/<kind>". The Sentinel and Cluster kinds run it in
// TestFaultsSentinel and TestFaultsCluster. Campaigns wait with
// WaitForRelease, which polls on these runs' clients (their ReadTimeout,
// half the 200 ms TTL, is too short for a block: see workload.wait);
// TestFaultsWaitForRelease runs it at a TTL whose clients block.
func TestElectionFaults(t *testing.T) {
	t.Parallel()
	electionFaults(t, "election", false)
}

// electionFaults runs the election workload under every standalone fault
// kind in rows "<row>/<kind>"; with waiting, at the scale of waitScale,
// and a run without faults must hand a leadership over.
func electionFaults(t *testing.T, row string, waiting bool) {
	eachRun(t, standaloneKinds, func(*testing.T) struct{} { return struct{}{} }, func(t *testing.T, kind faultKind, sc scale, _ struct{}, _ int) {
		if waiting {
			waitScale(&sc)
		}
		names := electionKeys(t, sc.keys)
		freezers := make([]*freezer, sc.workers)
		for i := range freezers {
			freezers[i] = &freezer{}
		}
		e, p := standaloneEnv(t, row+"/"+kind.name, kind, sc, names, func(i int) redis.Hook { return freezers[i] })
		p.start = electionWorkloadStart(e, kind, names, freezers)
		runParts(t, e, kind, p)
		if waiting {
			checkHandedOver(t, kind, p)
		}
	})
}
