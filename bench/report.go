package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/redislock/redislock/bench/contention"
)

// report is everything one run measured.
type report struct {
	Env           environment
	Libraries     []library
	Micro         []microRow // PING, then the libraries
	Hot           [][]hotRun // by hotConfigs
	Memory        []memRow
	HotDuration   time.Duration
	HotRounds     int
	MicroTime     time.Duration // each one-goroutine workload of 1–3
	MicroParallel time.Duration // the 32-goroutine workload
	Slice         time.Duration // one library's turn in it
	Native        []nativeRow   // workload 8
	NativeServer  string        // its server, as in "Valkey 9.1.2"
	NativeOps     int
	Quorum        []quorumRow   // workload 9
	QuorumTime    time.Duration // its turns, for each number of masters
}

// version returns the version of module, as built.
func (r *report) version(module string) string {
	if v := r.Env.Versions[module]; v != "" {
		return v
	}
	return "unknown"
}

func (r *report) writeMarkdown(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	e := r.Env
	p("# Lock libraries side by side\n\n")
	p("Written by `make bench` (bench/, `go run .`) on %s, in one run of %v against one\n", e.Date.Format("2006-01-02 15:04 MST"), e.Elapsed.Round(time.Second))
	p("redis-server that internal/redistest started on 127.0.0.1 (loopback, persistence off).\n")
	p("Every figure below comes from this run; ratios are to the raw go-redis floor of the same run.\n\n")
	p("- Machine: %s, %d cores, %s, GOMAXPROCS=%d\n", e.CPU, e.Cores, e.OS, e.Cores)
	p("- %s, %s\n", e.Go, e.Redis)
	p("- Libraries: redislock %s (this module); github.com/bsm/redislock %s; github.com/go-redsync/redsync/v4 %s (one goredis/v9 pool);\n",
		r.version(thisModule), r.version("github.com/bsm/redislock"), r.version("github.com/go-redsync/redsync/v4"))
	p("  github.com/redis/rueidis/rueidislock %s (KeyMajority 1, NoLoopTracking, TryNextAfter 1 s, on **its own client, rueidis %s, not go-redis**);\n",
		r.version("github.com/redis/rueidis"), r.version("github.com/redis/rueidis"))
	p("  the others on github.com/redis/go-redis/v9 %s with default options (pool of %d connections).\n", r.version("github.com/redis/go-redis/v9"), 10*e.Cores)
	p("- PING round trip on an idle connection: p50 %v.\n\n", contention.Round(e.Ping))

	r.writeSummary(w)
	r.writeMicro(w)
	r.writeHot(w)
	r.writeMemory(w)
	if r.Native != nil {
		writeNative(w, r.NativeServer, r.NativeOps, r.Native)
	}
	if r.Quorum != nil {
		writeQuorum(w, r.Quorum, r.QuorumTime)
	}
	r.writeTargets(w)
	r.writeNotes(w)
}

// row returns the micro row of the library called name, or nil.
func (r *report) row(name string) *microRow {
	for i := range r.Micro {
		if r.Micro[i].Name == name {
			return &r.Micro[i]
		}
	}
	return nil
}

// oursName is the name of this library's row with default options.
const oursName = "redislock (this)"

// floor returns the row of the raw go-redis floor.
func (r *report) floor() *microRow {
	for i := range r.Micro {
		if r.Micro[i].IsFloor {
			return &r.Micro[i]
		}
	}
	return nil
}

func (r *report) writeMicro(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	floor := r.floor()
	p("## 1. Uncontended Obtain+Release, distinct keys\n\n")
	p("Each goroutine obtains and releases a key of its own, without waiting, in a loop. On two shared cores a\n")
	p("loopback round trip takes one of two speeds (about 40 and 125 µs, as client and server share a core or\n")
	p("not), each for a while, so that runs of one library after another differ by up to 30%%. The libraries\n")
	p("therefore take turns, in a new random order each cycle: with one goroutine a turn is one operation (%v\n", r.MicroTime)
	p("per workload); with %d, a turn is %v of all goroutines on one library (%v). Time per operation\n", parallelGoroutines, r.Slice, r.MicroParallel)
	p("is the wall time of all of a library's turns over its operations. Allocations: testing.Benchmark, the\n")
	p("whole process's allocations per operation, background goroutines of a client included. Round trips\n")
	p("per operation: counted on a separate client. %s is the floor of a fenced lock: the least a\n", fencedFloorName)
	p("script obtain with this library's fence guarantee costs (the server's TIME, the key's SET NX, the counter's\n")
	p("SET … GET), and the same release as the floor's with a prefix compare. %s is that floor with\n", perLockFloorName)
	p("what any lock library adds on the client: a token generated for each lock (16 bytes of crypto/rand) in a\n")
	p("lock value of its own, which also holds the keys and the fence key's tag (SHA-1).\n\n")
	p("| library | client | 1 goroutine: ns/op | ops/s | allocs/op | B/op | round trips | time ÷ floor | %d goroutines: ns/op | ops/s | allocs/op | B/op | time ÷ floor |\n", parallelGoroutines)
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, row := range r.Micro {
		a, b := row.Obtain1, row.ObtainN
		if a == nil || b == nil {
			continue
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", label(row.Name, row.IsThisRepo), row.Client,
			ns(a.NsPerOp), ops(a.OpsPerSec()), count(a.AllocsPerOp), count(a.BytesPerOp), trips(a.RoundTrips), ratio(a.NsPerOp, floor.Obtain1.NsPerOp),
			ns(b.NsPerOp), ops(b.OpsPerSec()), count(b.AllocsPerOp), count(b.BytesPerOp), ratio(b.NsPerOp, floor.ObtainN.NsPerOp))
	}
	p("\n## 2. Failed Obtain on a held key, no retry\n\n")
	p("Another client of the same library holds the key.\n\n")
	r.writeSingle(w, func(row *microRow) *figure { return row.Failed }, "")
	p("\n## 3. Refresh of a held lock\n\n")
	r.writeSingle(w, func(row *microRow) *figure { return row.Refresh }, "— (no Refresh call: a goroutine per lock extends it every 2.5 s)")
	p("\n")
}

// writeSingle writes a one-goroutine table of the figure get picks; absent
// is the text of a library without the operation.
func (r *report) writeSingle(w io.Writer, get func(*microRow) *figure, absent string) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	fl := get(r.floor())
	p("| library | client | ns/op | ops/s | allocs/op | B/op | round trips | time ÷ floor | allocs − floor |\n")
	p("|---|---|--:|--:|--:|--:|--:|--:|--:|\n")
	for i := range r.Micro {
		row := &r.Micro[i]
		if row.IsPing {
			continue
		}
		f := get(row)
		if f == nil && row.Partial {
			continue
		}
		if f == nil {
			p("| %s | %s | %s | | | | | | |\n", label(row.Name, row.IsThisRepo), row.Client, absent)
			continue
		}
		p("| %s | %s | %s | %s | %s | %s | %s | %s | %+.0f |\n", label(row.Name, row.IsThisRepo), row.Client,
			ns(f.NsPerOp), ops(f.OpsPerSec()), count(f.AllocsPerOp), count(f.BytesPerOp), trips(f.RoundTrips),
			ratio(f.NsPerOp, fl.NsPerOp), f.AllocsPerOp-fl.AllocsPerOp)
	}
}

func (r *report) writeHot(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## 4. One hot key\n\n")
	p("Workers take turns on one key, each holding it for 1 ms, through the runner of bench/contention: %d runs\n", r.HotRounds)
	p("of %v (after 500 ms of warm-up) per library and configuration, pooled, the runs of all libraries in turn;\n", r.HotDuration)
	p("with a client each (as separate processes would) and all sharing one client. Per worker min–max counts\n")
	p("the acquisitions of one worker in one run.\n")
	p("Wait is from the first Obtain call to lock held: where a library gives up waiting (its retry budget\n")
	p("runs out), the worker calls it again and the wait goes on (\"gave up\" counts those calls). Fair bound:\n")
	p("what a perfect queue gives (workers × mean time per acquisition). Round trips are those clients sent\n")
	p("(a script call or a whole pipeline counting one); commands are those Redis executed (INFO commandstats,\n")
	p("script internals included). Redis CPU is INFO cpu (used_cpu_user + used_cpu_sys) over the run per acquisition:\n")
	p("the server's whole work, reading and answering included, the runner's PINGs too (the same for every\n")
	p("library). PING p50 is that of a PING every 10 ms during the run. Hold is the mean time\n")
	p("from lock held to release called (a 1 ms sleep, and its overrun); gap is the mean time per acquisition\n")
	p("that the lock was not held (1 / acq/s − hold): the handover, release called → next holder has it.\n\n")
	p("Each library waits as its documentation recommends:\n\n")
	for _, lib := range r.Libraries {
		if lib.Waiting != "" {
			p("- %s: %s\n", lib.Name, lib.Waiting)
		}
	}
	p("\n| workers | clients | library | acq/s | hold | gap | wait p50 | wait p99 | wait max | fair bound | per worker min–max | round trips/acq | commands/acq | Redis CPU/acq | gave up | PING p50 |\n")
	p("|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for ci, runs := range r.Hot {
		cfg := hotConfigs[ci]
		for _, run := range runs {
			lo, hi := run.MinMax()
			clients := "own"
			if cfg.Shared {
				clients = "shared"
			}
			p("| %d | %s | %s | %.0f | %v | %v | %v | %v | %v | %v | %d–%d | %.2f | %.1f | %sµs | %d | %v |\n",
				cfg.Workers, clients, label(run.Library, run.IsThisRepo), run.Throughput(),
				contention.Round(run.MeanHold()), contention.Round(run.Gap()),
				contention.Round(run.Wait(0.5)), contention.Round(run.Wait(0.99)), contention.Round(run.MaxWait()),
				contention.Round(run.FairBound()), lo, hi, run.RoundTripsPerAcquisition(), run.CommandsPerAcquisition(),
				us(run.CPUPerAcquisition()), run.GaveUp, contention.Round(run.Ping))
		}
	}
	p("\n![Hot key: wait and throughput by library](chart.svg)\n\n")
}

func (r *report) writeMemory(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	var floor memRow
	for _, m := range r.Memory {
		if m.IsFloor {
			floor = m
		}
	}
	locks := 0
	if len(r.Memory) > 0 {
		locks = r.Memory[0].Locks
	}
	p("## 5. %s locks held at once\n\n", thousands(locks))
	p("Growth of INFO memory's used_memory while the locks are held, per lock, from an empty database, once\n")
	p("Redis has finished growing its hash tables; the same lock names for every library. The connections'\n")
	p("buffers (mem_clients_normal) are left out: they depend on the connections open and on what they last\n")
	p("sent, not on the locks held. The last column keeps them in.\n\n")
	p("| library | keys per lock | bytes per lock | ÷ floor | used_memory growth per lock, buffers included |\n")
	p("|---|--:|--:|--:|--:|\n")
	for _, m := range r.Memory {
		p("| %s | %.2f | %.1f | %s | %.1f |\n", label(m.Library, m.IsThisRepo), float64(m.Keys)/float64(m.Locks),
			m.PerLock(), ratio(m.PerLock(), floor.PerLock()), float64(m.UsedMemory)/float64(m.Locks))
	}
	p("\n")
}

// target is one of the targets for this library, evaluated.
type target struct {
	Name   string
	Met    bool
	Detail string
}

// targets evaluates the targets on the run's figures.
func (r *report) targets() []target {
	var out []target
	floor := r.floor()
	ours, bsmRow := r.row(oursName), r.row("bsm/redislock")
	if ours != nil && floor != nil && bsmRow != nil {
		for _, c := range []struct {
			what     string
			o, f, bs *figure
		}{
			{"1 goroutine", ours.Obtain1, floor.Obtain1, bsmRow.Obtain1},
			{fmt.Sprintf("%d goroutines", parallelGoroutines), ours.ObtainN, floor.ObtainN, bsmRow.ObtainN},
		} {
			q := c.o.NsPerOp / c.f.NsPerOp
			out = append(out, target{
				Name:   "Uncontended Obtain+Release time within 5% of the floor, " + c.what,
				Met:    q <= 1.05,
				Detail: fmt.Sprintf("%s ns/op vs %s: %+.1f%%", ns(c.o.NsPerOp), ns(c.f.NsPerOp), (q-1)*100),
			})
			out = append(out, target{
				Name:   "Uncontended Obtain+Release allocations within 2 of the floor and fewer than bsm/redislock's, " + c.what,
				Met:    math.Round(c.o.AllocsPerOp) <= math.Round(c.f.AllocsPerOp)+2 && math.Round(c.o.AllocsPerOp) < math.Round(c.bs.AllocsPerOp),
				Detail: fmt.Sprintf("%s allocs/op vs floor %s (%+.0f) and bsm %s", count(c.o.AllocsPerOp), count(c.f.AllocsPerOp), c.o.AllocsPerOp-c.f.AllocsPerOp, count(c.bs.AllocsPerOp)),
			})
		}
	}
	for ci, runs := range r.Hot {
		var o *hotRun
		for i := range runs {
			if runs[i].IsThisRepo {
				o = &runs[i]
			}
		}
		if o == nil {
			continue
		}
		cfg := hotConfigs[ci]
		var (
			p99Met, minMet, acqMet, tripsMet = true, true, true, true
			p99s, mins, acqs, tripss         []string
		)
		oLo, _ := o.MinMax()
		for _, run := range runs {
			if run.IsThisRepo || run.IsFloor {
				continue
			}
			lo, _ := run.MinMax()
			p99Met = p99Met && o.Wait(0.99) < run.Wait(0.99)
			minMet = minMet && oLo > lo
			acqMet = acqMet && o.Throughput() >= run.Throughput()
			tripsMet = tripsMet && o.RoundTripsPerAcquisition() < run.RoundTripsPerAcquisition()
			p99s = append(p99s, fmt.Sprintf("%s %v", run.Library, contention.Round(run.Wait(0.99))))
			mins = append(mins, fmt.Sprintf("%s %d", run.Library, lo))
			acqs = append(acqs, fmt.Sprintf("%s %.0f", run.Library, run.Throughput()))
			tripss = append(tripss, fmt.Sprintf("%s %.2f", run.Library, run.RoundTripsPerAcquisition()))
		}
		out = append(out,
			target{"Hot key, " + cfg.String() + ": wait p99 below every alternative's", p99Met,
				fmt.Sprintf("%v vs %s", contention.Round(o.Wait(0.99)), strings.Join(p99s, ", "))},
			target{"Hot key, " + cfg.String() + ": worst-served worker better served than every alternative's", minMet,
				fmt.Sprintf("%d acquisitions vs %s", oLo, strings.Join(mins, ", "))},
			target{"Hot key, " + cfg.String() + ": acquisitions/s no lower than the best alternative's", acqMet,
				fmt.Sprintf("%.0f vs %s", o.Throughput(), strings.Join(acqs, ", "))},
			target{"Hot key, " + cfg.String() + ": fewest round trips per acquisition", tripsMet,
				fmt.Sprintf("%.2f vs %s", o.RoundTripsPerAcquisition(), strings.Join(tripss, ", "))},
		)
	}
	var oMem, bMem *memRow
	for i := range r.Memory {
		switch {
		case r.Memory[i].IsThisRepo:
			oMem = &r.Memory[i]
		case r.Memory[i].Library == "bsm/redislock":
			bMem = &r.Memory[i]
		}
	}
	if oMem != nil && bMem != nil {
		out = append(out, target{"Memory per held lock no more than bsm/redislock's", oMem.PerLock() <= bMem.PerLock(),
			fmt.Sprintf("%.1f vs %.1f bytes", oMem.PerLock(), bMem.PerLock())})
	}
	return out
}

func (r *report) writeTargets(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## Targets for this library, in this run\n\n")
	p("Why a target is missed, and what would close it: docs/benchmarks.md.\n\n")
	p("| target | met | figures |\n|---|---|---|\n")
	for _, t := range r.targets() {
		met := "**missed**"
		if t.Met {
			met = "met"
		}
		p("| %s | %s | %s |\n", t.Name, met, t.Detail)
	}
	p("\n")
}

func (r *report) writeNotes(w io.Writer) {
	fmt.Fprint(w, `## How each library is driven

- **raw go-redis (floor)**: one script call per operation with a fixed 22-character token (`+"`SET NX PX`"+`;
  `+"`GET`"+`+`+"`DEL`"+` and `+"`GET`"+`+`+"`PEXPIRE`"+` when the token matches), as in the root module's bench_test.go. No waiting of its own.
- **redislock (this)**: `+"`Client.Obtain`"+` with nil options, `+"`Lock.Release`"+`, `+"`Lock.Refresh`"+`; in the hot-key runs
  `+"`WaitForRelease(nil)`"+` with a 5 s TTL.
- **bsm/redislock**: the same calls with nil options; in the hot-key runs the retry of its documentation's
  example (`+"`ExampleClient_Obtain_retry`"+`, "Retry every 100ms, for up-to 3x"), a new strategy per call
  (its `+"`LimitRetry`"+` counts in the value), with a 5 s TTL. Its README recommends no retry strategy.
- **redsync**: a `+"`Mutex`"+` per acquisition (`+"`NewMutex`"+`; a Mutex holds one acquisition's state and is not
  safe for concurrent use), `+"`TryLockContext`"+` without waiting, `+"`LockContext`"+` (its defaults: 32 tries,
  a random 50–250 ms delay, 8 s expiry) in the hot-key runs, `+"`UnlockContext`"+`, `+"`ExtendContext`"+`.
  A failed attempt also runs its release script: two round trips.
- **rueidislock**: `+"`WithContext`"+` (waits) and `+"`TryWithContext`"+`; the lock is the returned context and its
  cancel function releases it (and waits for the release). It runs on rueidis, with client-side caching:
  a waiter retries when Redis invalidates the key it tracks. Each lock has a goroutine that extends it
  every 2.5 s; there is no Refresh call.
- Round trips in the hot-key runs are counted by a go-redis hook, and for rueidis by a wrapper of its
  client that counts each call; rueidis pipelines the calls of different goroutines on one connection.
`)
}

func label(name string, ours bool) string {
	if ours {
		return "**" + name + "**"
	}
	return name
}

func ns(v float64) string { return thousands(int(math.Round(v))) }

func ops(v float64) string { return thousands(int(math.Round(v))) }

func count(v float64) string {
	if math.Abs(v-math.Round(v)) < 0.05 || v >= 100 {
		return thousands(int(math.Round(v)))
	}
	return fmt.Sprintf("%.1f", v)
}

func trips(v float64) string {
	if math.Abs(v-math.Round(v)) < 0.005 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func ratio(v, floor float64) string {
	if floor == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", v/floor)
}

// thousands formats n with thin separators: 12 345.
func thousands(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString(",")
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
