package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/chaos"
	"github.com/redislock/redislock/internal/redistest"
)

// scale is the size of a run: the short one for make test, the long one
// for make chaos (-chaos.long).
type scale struct {
	runs    int           // runs of each fault kind
	dur     time.Duration // length of one run of a proxied fault kind
	workers int
	keys    int // lock keys the workers contend for
	ttl     time.Duration
	// failovers per run of a Sentinel or Cluster fault kind.
	failovers int
}

func currentScale() scale {
	if *long {
		return scale{runs: 4, dur: 8 * time.Second, workers: 8, keys: 2, ttl: 200 * time.Millisecond, failovers: 3}
	}
	return scale{runs: 1, dur: 1500 * time.Millisecond, workers: 4, keys: 2, ttl: 200 * time.Millisecond, failovers: 1}
}

// kindOrder is the order of the fault kinds in the results table.
var kindOrder = []string{
	"none", "latency", "stall", "lost-reply", "reset", "partition", "pause", "restart",
	"sentinel-failover", "sentinel-failover+ack", "sentinel-kill",
	"cluster-failover", "cluster-takeover", "load",
	"kill-minority", "kill-minority-volatile", "restart-majority-volatile", "amnesia-majority",
}

func kindRank(kind string) int {
	// The other workloads' rows ("semaphore/<kind>", …) follow the locks',
	// one group per workload in the order of workloadPrefixes, each in
	// kindOrder.
	group := 0
	for i, p := range workloadPrefixes {
		if base, ok := strings.CutPrefix(kind, p); ok {
			kind, group = base, i+1
			break
		}
	}
	i := slices.Index(kindOrder, kind)
	if i < 0 {
		i = len(kindOrder)
	}
	return group*(len(kindOrder)+1) + i
}

// workloadPrefixes are the prefixes of the rows of the workloads other than
// the lock's, in the order of the results table.
var workloadPrefixes = []string{"semaphore/", "rw/", "election/", "quorum/", "session/"}

// env is what a fault schedule acts on during one run.
type env struct {
	t     *testing.T
	sc    scale
	h     *chaos.History
	rnd   *rand.Rand
	begin time.Time

	server  *redistest.Server // standalone kinds
	proxies []*proxy          // standalone kinds: one per worker
	heal    func()            // undoes the faults at the end of a run; nil: nothing to undo

	sentinel *redistest.Sentinel
	cluster  *redistest.Cluster
	// masters and links (links[w][m]: worker w to master m) are a
	// quorum's (quorum_test.go).
	masters []*redistest.Server
	links   [][]*proxy
	keys    []string
	wait    bool // the workloads' workers wait with WaitForRelease (see workload.wait)
}

// running reports whether the run is still within its length.
func (e *env) running() bool { return time.Since(e.begin) < e.sc.dur }

// hold lets the schedule's current state last for d. Fault schedules are
// made of time; nothing here waits for another goroutine.
func (e *env) hold(d time.Duration) { time.Sleep(d) }

// victims returns a random non-empty half (or less) of the proxies.
func (e *env) victims() []*proxy {
	n := 1 + e.rnd.IntN(max(1, len(e.proxies)/2))
	perm := e.rnd.Perm(len(e.proxies))
	out := make([]*proxy, n)
	for i := range out {
		out[i] = e.proxies[perm[i]]
	}
	return out
}

// clientsOf returns the worker numbers (1-based) of victims.
func (e *env) clientsOf(victims []*proxy) []int {
	var ids []int
	for _, v := range victims {
		ids = append(ids, slices.Index(e.proxies, v)+1)
	}
	slices.Sort(ids)
	return ids
}

// cycle repeats, until the run ends: calm, then fault applied to some
// victims for faultFor, then healed.
func (e *env) cycle(calm, faultFor time.Duration, name string, apply func(v *proxy)) {
	for e.running() {
		e.hold(calm)
		victims := e.victims()
		e.h.Fault("%s on clients %v", name, e.clientsOf(victims))
		for _, v := range victims {
			apply(v)
		}
		e.hold(faultFor)
		for _, v := range victims {
			v.heal()
		}
		e.h.Fault("healed clients %v", e.clientsOf(victims))
	}
}

// faultKind is one kind of fault: a schedule that runs on the test
// goroutine while the workers run.
type faultKind struct {
	name string
	// lossy kinds (failover, data loss) may let two holders overlap: the
	// overlaps are measured, not forbidden.
	lossy bool
	// pause, when not nil, makes holders pause (see workload.pause).
	pause func(sc scale) func(*rand.Rand) time.Duration
	// options of every obtain.
	options func() redislock.Options
	// believe, when not zero, is how long a holder believes its lease lasts
	// (see workload.believe): longer than the TTL makes an unsafe client.
	believe time.Duration
	// work, when not zero, is the time between two writes of a holder.
	work time.Duration
	// schedule applies the faults; it returns when the run is over.
	schedule func(e *env)
	// effect returns "" when the run shows that the faults bit, or says
	// what is missing; netErrs counts the commands and dials of the
	// workers that failed other than with a Redis reply.
	effect func(r chaos.Report, netErrs int64) string
}

func failedSome(_ chaos.Report, netErrs int64) string {
	if netErrs == 0 {
		return "no command failed: the fault had no effect"
	}
	return ""
}

// standaloneKinds are the faults injected between the clients and one
// redis-server, through a proxy per client.
var standaloneKinds = []faultKind{
	{
		name:     "none",
		schedule: func(e *env) { e.hold(e.sc.dur) },
	},
	{
		name: "latency",
		schedule: func(e *env) {
			ttl := e.sc.ttl
			e.cycle(ttl, 2*ttl, "latency", func(v *proxy) {
				attrs := fmt.Sprintf(`"latency":%d,"jitter":%d`, (ttl / 8).Milliseconds(), (ttl / 16).Milliseconds())
				v.toxic(e.t, "lat-up", "latency", "upstream", attrs)
				v.toxic(e.t, "lat-down", "latency", "downstream", attrs)
			})
		},
	},
	{
		// Commands reach the server late, after the client gave up on them.
		name: "stall",
		schedule: func(e *env) {
			ttl := e.sc.ttl
			e.cycle(ttl, 2*ttl, "stall", func(v *proxy) {
				v.toxic(e.t, "stall", "latency", "upstream", fmt.Sprintf(`"latency":%d`, ttl.Milliseconds()))
			})
		},
		effect: failedSome,
	},
	{
		// Commands run; their replies are dropped: the ambiguous outcome.
		name: "lost-reply",
		schedule: func(e *env) {
			ttl := e.sc.ttl
			e.cycle(ttl, ttl, "replies dropped", func(v *proxy) {
				v.toxic(e.t, "drop", "timeout", "downstream", `"timeout":0`)
			})
		},
		effect: failedSome,
	},
	{
		name: "reset",
		schedule: func(e *env) {
			ttl := e.sc.ttl
			e.cycle(ttl/2, ttl/2, "connection resets", func(v *proxy) {
				// Before the command reaches the server, or after it ran.
				stream := [...]string{"upstream", "downstream"}[e.rnd.IntN(2)]
				v.toxic(e.t, "reset", "reset_peer", stream, `"timeout":0`)
			})
		},
		effect: failedSome,
	},
	{
		// Full partitions of some clients, silent (packets dropped) or
		// loud (connections refused), then healed.
		name: "partition",
		schedule: func(e *env) {
			ttl := e.sc.ttl
			for e.running() {
				e.hold(ttl)
				victims := e.victims()
				silent := e.rnd.IntN(2) == 0
				if silent {
					e.h.Fault("silent partition of clients %v", e.clientsOf(victims))
					for _, v := range victims {
						v.toxic(e.t, "blackhole-up", "timeout", "upstream", `"timeout":0`)
						v.toxic(e.t, "blackhole-down", "timeout", "downstream", `"timeout":0`)
					}
				} else {
					e.h.Fault("connections of clients %v refused", e.clientsOf(victims))
					for _, v := range victims {
						v.disconnect()
					}
				}
				e.hold(2 * ttl)
				for _, v := range victims {
					if silent {
						v.heal()
					} else {
						v.reconnect(e.t)
					}
				}
				e.h.Fault("partition of clients %v healed", e.clientsOf(victims))
			}
		},
		effect: failedSome,
	},
	{
		// A holder stops (a GC pause) after checking its lease and before
		// writing, for longer than the lease, then until another holder has
		// written (at most overtakenWait more), and writes without looking
		// again: that write must be refused, in every run. A pause that no
		// other holder overtakes (none wrote that key meanwhile, or the
		// run ended) makes no stale write, so the run lasts until a write
		// was refused, for at most 20 runs' length more: with few writers
		// (the RW workload's, one cycle in four) a run of sc.dur can end
		// without one (1 run in 20 on an idle machine), and on a loaded
		// machine, where most commands outlive the clients' short
		// timeouts, a run may see only a few obtains (an election: 3 in
		// 10 s beside a CPU hog). An idle machine ends at the first
		// refusal, mostly within sc.dur.
		name: "pause",
		pause: func(sc scale) func(*rand.Rand) time.Duration {
			return func(r *rand.Rand) time.Duration {
				if r.IntN(4) == 0 {
					return 2 * sc.ttl
				}
				return 0
			}
		},
		schedule: holdUntilRefused,
		effect: func(r chaos.Report, _ int64) string {
			if r.StaleRefused == 0 {
				return "no write of a paused holder was refused"
			}
			return ""
		},
	},
	{
		// The server is killed and restarted without persistence: every
		// lock and fence counter is lost.
		name:  "restart",
		lossy: true,
		schedule: func(e *env) {
			for e.running() {
				e.hold(e.sc.dur / 3)
				e.h.Fault("kill and restart the server")
				e.server.Restart(e.t)
				e.h.Fault("server restarted")
			}
		},
		// go-redis drops the pooled connections that the restart closed
		// and dials again, often without a single command failing: what
		// the restart does is lose the data, which the report measures.
	},
}

// holdUntilRefused runs for sc.dur, then until the history holds a
// refused write, for at most 20 runs' length more.
func holdUntilRefused(e *env) {
	e.hold(e.sc.dur)
	more := time.NewTimer(20 * e.sc.dur)
	defer more.Stop()
	select {
	case <-e.h.Refused():
	case <-more.C:
	}
}

// clientOptions are the go-redis options of a worker's client: timeouts
// short next to the TTL, bounded by the call's context, one retry.
func clientOptions(addr string, ttl time.Duration) *redis.Options {
	return &redis.Options{
		Addr:                  addr,
		Protocol:              2,
		DisableIdentity:       true,
		DialTimeout:           ttl / 2,
		DialerRetries:         1,
		ReadTimeout:           ttl / 2,
		WriteTimeout:          ttl / 2,
		ContextTimeoutEnabled: true,
		MaxRetries:            1,
		MinRetryBackoff:       5 * time.Millisecond,
		MaxRetryBackoff:       20 * time.Millisecond,
		PoolSize:              4,
	}
}

// TestFaults runs every standalone fault kind (see standaloneKinds) against
// a redis-server of its own, each worker behind a proxy of its own, and
// checks each run's history.
func TestFaults(t *testing.T) {
	t.Parallel()
	eachRun(t, standaloneKinds, func(*testing.T) struct{} { return struct{}{} }, func(t *testing.T, kind faultKind, sc scale, _ struct{}, _ int) {
		e, p := standaloneEnv(t, kind.name, kind, sc, lockKeys(t, sc.keys), nil)
		p.start = lockWorkload(e, kind)
		runParts(t, e, kind, p)
	})
}

// TestFaultsWaitForRelease runs the lock, semaphore and RW workloads with
// every worker waiting event-driven (WaitForRelease: a release hands the
// lock, permit or hold to the longest waiter), and the election workload,
// under every standalone fault kind, at the scale of waitScale (a TTL long
// enough for a block: see workload.wait), and checks each history as
// TestFaults, TestFaultsSemaphore, TestFaultsRWMutex and TestElectionFaults
// do. Its rows in the results table are "wait/<kind>",
// "semaphore-wait/<kind>", "rw-wait/<kind>" and "election-wait/<kind>". A
// run without faults must hand over (checkHandedOver).
func TestFaultsWaitForRelease(t *testing.T) {
	t.Parallel()
	workloads := []struct {
		row   string
		keys  func(t *testing.T, n int) []string
		start func(e *env, kind faultKind, keys []string) func(h *chaos.History) runner
	}{
		{"wait", lockKeys, func(e *env, kind faultKind, _ []string) func(h *chaos.History) runner { return lockWorkload(e, kind) }},
		{"semaphore-wait", semKeys, semaphoreWorkload},
		{"rw-wait", rwKeys, rwMutexWorkload},
	}
	for _, wl := range workloads {
		t.Run(wl.row, func(t *testing.T) {
			t.Parallel()
			eachRun(t, standaloneKinds, func(*testing.T) struct{} { return struct{}{} }, func(t *testing.T, kind faultKind, sc scale, _ struct{}, _ int) {
				waitScale(&sc)
				keys := wl.keys(t, sc.keys)
				e, p := standaloneEnv(t, wl.row+"/"+kind.name, kind, sc, keys, nil)
				e.wait = true
				p.start = wl.start(e, kind, keys)
				runParts(t, e, kind, p)
				checkHandedOver(t, kind, p)
			})
		})
	}
	t.Run("election-wait", func(t *testing.T) {
		t.Parallel()
		electionFaults(t, "election-wait", true)
	})
}

// waitScale makes sc the scale of a run whose workers block on Redis while
// they wait: a TTL of a second, so that the clients' ReadTimeout (half
// the TTL) leaves room for a block (see workload.wait), and runs of at
// least 4 s, so that a run has cycles enough at that TTL.
func waitScale(sc *scale) { sc.ttl, sc.dur = time.Second, max(sc.dur, 4*time.Second) }

// checkHandedOver fails a run without faults (kind "none") of part p in
// which no release handed anything over: its workers did not wait
// event-driven.
func checkHandedOver(t *testing.T, kind faultKind, p *part) {
	t.Helper()
	if kind.name == "none" && p.handed == 0 {
		t.Errorf("%s: nothing was handed over: the workers did not wait event-driven", p.row)
	}
}

// standaloneEnv returns the env of one run of a standalone fault kind on a
// redis-server of its own, and the part (see runParts) of one workload on
// keys, reported in row, whose workers each have a client of their own
// behind a proxy of their own (with hook, when not nil, added to each
// client; hook(i) for worker i, from 0). The caller sets the part's start.
func standaloneEnv(t *testing.T, row string, kind faultKind, sc scale, keys []string, hook func(i int) redis.Hook) (*env, *part) {
	srv := redistest.NewServer(t, redistest.Redis)
	e := &env{t: t, sc: sc, server: srv, keys: keys}
	p := &part{row: row, kind: kind, keys: keys}
	p.clients = e.newClients(&p.netErrs, func() redis.UniversalClient {
		px := newProxy(t, srv.Addr())
		e.proxies = append(e.proxies, px)
		c := redis.NewClient(clientOptions(px.Addr(), sc.ttl))
		if hook != nil {
			c.AddHook(hook(len(e.proxies) - 1))
		}
		return c
	})
	e.heal = func() {
		for _, px := range e.proxies {
			px.heal()
		}
	}
	return e, p
}

// eachRun runs each of kinds as a parallel subtest at the current scale:
// own starts what the kind's runs share (a Sentinel setup, a Cluster, or
// nothing), then run runs each of the kind's runs (n from 0) as a subtest
// "runN".
func eachRun[T any](t *testing.T, kinds []faultKind, own func(t *testing.T) T, run func(t *testing.T, kind faultKind, sc scale, inst T, n int)) {
	for _, kind := range kinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()
			sc := currentScale()
			inst := own(t)
			for n := range sc.runs {
				t.Run(fmt.Sprint("run", n+1), func(t *testing.T) { run(t, kind, sc, inst, n) })
			}
		})
	}
}

// client is the Redis client of one worker, and the errors that reads on
// its connections returned.
type client struct {
	rdb  redislock.RedisClient
	errs *connErrs
}

// newClients returns one client per worker, made by newClient, each
// counting its network errors in netErrs and its connections' read errors
// in a connErrs of its own, and closed when the test ends.
func (e *env) newClients(netErrs *errCounter, newClient func() redis.UniversalClient) []client {
	clients := make([]client, e.sc.workers)
	for i := range clients {
		c := newClient()
		errs := &connErrs{}
		c.AddHook(netErrs)
		c.AddHook(errs)
		e.t.Cleanup(func() { _ = c.Close() })
		clients[i] = client{rdb: c, errs: errs}
	}
	return clients
}

// newWorker returns worker i (from 0) of w, on c.
func newWorker(w *workload, i int, c client) *worker {
	//nolint:gosec // the workload's choices, no secret
	rnd := rand.New(rand.NewPCG(uint64(i), uint64(time.Now().UnixNano())))
	locker := redislock.New(c.rdb)
	locker.AddHook(&w.handed)
	return &worker{workload: w, id: i + 1, locker: locker, obtainer: locker, errs: c.errs, rnd: rnd}
}

// runner is a workload as a run drives it: its workers on their clients
// until stop is closed (run returns once every worker has finished its
// cycle), then the check of its share of the history.
type runner interface {
	run(clients []client, stop <-chan struct{})
	check(events []chaos.Event) chaos.Report
	// handedOver returns how many obtains (or campaigns) a release
	// handed over.
	handedOver() int64
}

// part is one workload of a run. Several parts can run at once under one
// schedule, each on keys and clients of its own, into one history: the
// events of its keys (and the slots of its keys, see chaos.SlotKey) and
// the faults make its share, judged by its runner's check as kind allows.
type part struct {
	row     string    // its row in the results table
	kind    faultKind // the fault kind as this workload is judged by it
	keys    []string
	clients []client
	netErrs errCounter // a hook of every client of the part
	// handed is how many of the part's obtains a release handed over in
	// its last run (set by runParts).
	handed int64
	// start returns the part's runner, recording into h.
	start func(h *chaos.History) runner
}

// owns reports whether the event e belongs to p's share of a history.
func (p *part) owns(e chaos.Event) bool {
	if e.Op == chaos.OpFault {
		return true
	}
	for _, k := range p.keys {
		if e.Key == k || strings.HasPrefix(e.Key, k+"#") {
			return true
		}
	}
	return false
}

// runParts runs parts (see runReports), records each part's report in the
// results table under its row and fails the test for any violation its
// kind does not allow (see checkReport).
func runParts(t *testing.T, e *env, kind faultKind, parts ...*part) {
	t.Helper()
	reps, handed := runReports(t, e, kind, parts...)
	for i, p := range parts {
		rep, netErrs := reps[i], p.netErrs.n.Load()
		p.handed = handed[i]
		results.add(p.row, rep, netErrs)
		t.Logf("%s: %d ops, %d obtains (%d handed over), %d failed, %d network errors, %d overlaps, %d stale writes refused, %d accepted",
			p.row, rep.Ops, rep.Obtains, p.handed, rep.Failed, netErrs, rep.Overlaps, rep.StaleRefused, rep.StaleAccepted)
		pk := p.kind
		pk.name = p.row
		checkReport(t, pk, rep, netErrs)
	}
}

// runReports runs the workloads of parts at once while kind's schedule runs
// on the test goroutine, heals (e.heal, so that the last releases go
// through), lets the workers go on until every part has obtained once
// (waitObtained), waits for every worker to finish, and returns the check of
// each part's share of the history, and how many of each part's obtains a
// release handed over.
func runReports(t *testing.T, e *env, kind faultKind, parts ...*part) ([]chaos.Report, []int64) {
	t.Helper()
	e.h = chaos.NewHistory()
	e.rnd = rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1)) //nolint:gosec // the schedule's choices, no secret
	runners := make([]runner, len(parts))
	for i, p := range parts {
		runners[i] = p.start(e.h)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Go(func() { runners[i].run(p.clients, stop) })
	}
	e.begin = time.Now()
	func() {
		// Stop the workers even when the schedule fails the test.
		defer func() {
			if e.heal != nil {
				e.heal()
			}
			if !t.Failed() {
				waitObtained(e, parts, runners)
			}
			close(stop)
			wg.Wait()
		}()
		kind.schedule(e)
	}()
	reps := reportsOf(e, parts, runners)
	handed := make([]int64, len(parts))
	for i := range parts {
		handed[i] = runners[i].handedOver()
	}
	return reps, handed
}

// obtainGrace bounds how long the workers go on after a schedule (healed)
// for a part that has not obtained once.
const obtainGrace = 10 * time.Second

// waitObtained lets the workers go on after the schedule until every part
// has obtained at least once, for at most obtainGrace: on a loaded machine
// a short run can end before a workload got through a fault that took most
// of it (a Sentinel failover, say), which checkReport would take for a
// workload that never worked. It returns at once when every part has.
func waitObtained(e *env, parts []*part, runners []runner) {
	deadline := time.Now().Add(obtainGrace)
	for {
		all := true
		for _, r := range reportsOf(e, parts, runners) {
			all = all && r.Obtains > 0
		}
		if all || time.Now().After(deadline) {
			return
		}
		time.Sleep(20 * time.Millisecond) // the next look at the history
	}
}

// reportsOf returns the check of each part's share of the history so far.
func reportsOf(e *env, parts []*part, runners []runner) []chaos.Report {
	events := e.h.Events()
	reps := make([]chaos.Report, len(parts))
	for i, p := range parts {
		var own []chaos.Event
		for _, ev := range events {
			if p.owns(ev) {
				own = append(own, ev)
			}
		}
		reps[i] = runners[i].check(own)
	}
	return reps
}

// lockWorkload returns the start of the lock workload (see workload) on
// e.keys under kind.
func lockWorkload(e *env, kind faultKind) func(h *chaos.History) runner {
	return func(h *chaos.History) runner { return newLockWorkload(e, kind, h) }
}

// newLockWorkload returns the lock workload on e.keys under kind,
// recording into h.
func newLockWorkload(e *env, kind faultKind, h *chaos.History) *workload {
	w := &workload{
		h:       h,
		store:   chaos.NewStore(h),
		keys:    e.keys,
		ttl:     e.sc.ttl,
		writes:  4,
		work:    e.sc.ttl / 20,
		options: kind.options,
		believe: kind.believe,
		wait:    e.wait,
	}
	if kind.pause != nil {
		w.pause = kind.pause(e.sc)
	}
	if kind.work > 0 {
		w.work = kind.work
	}
	return w
}

// The checker is only worth something if it catches an unsafe client on a
// real server: here the holders believe their lease lasts four TTLs.
func TestFaultsCatchUnsafeClient(t *testing.T) {
	t.Parallel()
	sc := currentScale()
	sc.dur = time.Second
	srv := redistest.NewServer(t, redistest.Redis)
	e := &env{t: t, sc: sc, server: srv, keys: lockKeys(t, 1)}
	// Each holder works for two TTLs without refreshing.
	kind := faultKind{name: "unsafe", believe: 4 * sc.ttl, work: sc.ttl / 2, schedule: func(e *env) { e.hold(e.sc.dur) }}
	p := &part{row: kind.name, kind: kind, keys: e.keys, start: lockWorkload(e, kind)}
	p.clients = e.newClients(&p.netErrs, func() redis.UniversalClient { return redis.NewClient(clientOptions(srv.Addr(), sc.ttl)) })
	reps, _ := runReports(t, e, kind, p)
	rep := reps[0]
	t.Logf("unsafe client: %d obtains, %d overlaps, %d obtained while held, %d honest writes refused",
		rep.Obtains, rep.Overlaps, rep.ObtainedWhileHeld, rep.HonestRefused)
	if rep.Overlaps == 0 || rep.ObtainedWhileHeld == 0 || rep.HonestRefused == 0 {
		t.Errorf("the checker missed an unsafe client: %+v", rep)
	}
	if rep.StaleAccepted != 0 || rep.TokenOrder != 0 {
		t.Errorf("fencing must hold even for an unsafe client: %d stale writes accepted, %d token-order violations", rep.StaleAccepted, rep.TokenOrder)
	}
	if len(rep.Violations) > 0 {
		t.Logf("for example:\n%s", rep.Violations[0])
	}
}

// checkReport fails the test for what must never happen, and for what must
// not happen without failover or data loss, printing the minimal history
// of each violation.
func checkReport(t *testing.T, kind faultKind, rep chaos.Report, netErrs int64) {
	t.Helper()
	if rep.Obtains == 0 {
		t.Errorf("%s: no lock was ever obtained", kind.name)
	}
	always := map[string]int{"stale write accepted": rep.StaleAccepted, "token order": rep.TokenOrder}
	unlessLossy := map[string]int{
		"overlap": rep.Overlaps, "obtained while held": rep.ObtainedWhileHeld,
		"lost early": rep.LostEarly, "honest write refused": rep.HonestRefused,
	}
	bad := map[string]bool{}
	for k, n := range always {
		if n > 0 {
			bad[k] = true
			t.Errorf("%s: %d × %s", kind.name, n, k)
		}
	}
	if !kind.lossy {
		for k, n := range unlessLossy {
			if n > 0 {
				bad[k] = true
				t.Errorf("%s: %d × %s (none expected without failover or data loss)", kind.name, n, k)
			}
		}
	}
	for _, v := range rep.Violations {
		if bad[v.Kind] {
			t.Log(v)
		}
	}
	if kind.effect != nil {
		if msg := kind.effect(rep, netErrs); msg != "" {
			t.Errorf("%s: %s", kind.name, msg)
		}
	}
}

// ctxTimeout is a context for an admin command of a schedule.
func ctxTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// lockKeys returns n lock keys of t, in one hash slot.
func lockKeys(t *testing.T, n int) []string { return namedKeys(t, "lock", n) }

// namedKeys returns the keys name1 … name<n> of t, all in t's hash slot.
func namedKeys(t *testing.T, name string, n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = redistest.Key(t, fmt.Sprint(name, i+1))
	}
	return keys
}
