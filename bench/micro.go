package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/bench/contention"
)

// settle is the pause between two turns of interleave with several
// goroutines.
const settle = time.Millisecond

// parallelGoroutines is the number of goroutines of the parallel
// Obtain+Release workload.
const parallelGoroutines = 32

// figure is one measured operation.
type figure struct {
	// NsPerOp is the wall time per operation of all goroutines together,
	// from the interleaved runs (see interleave).
	NsPerOp float64
	// AllocsPerOp and BytesPerOp come from testing.Benchmark: the whole
	// process's allocations per operation, background goroutines of a
	// client included.
	AllocsPerOp float64
	BytesPerOp  float64
	// RoundTrips is the round trips per operation, counted on a separate
	// client with a counting hook (the timed runs have none).
	RoundTrips float64
	// Goroutines is how many goroutines ran the operation.
	Goroutines int
	// Server is the server's work per operation, measured with the round
	// trips (one library at a time, nothing else on the server).
	Server serverCost
}

// OpsPerSec returns the operations per second of all goroutines together.
func (f figure) OpsPerSec() float64 {
	if f.NsPerOp == 0 {
		return 0
	}
	return 1e9 / f.NsPerOp
}

// microRow is one library's figures; a figure is nil when the library has
// no such operation.
type microRow struct {
	Name       string
	Client     string
	Obtain1    *figure // Obtain+Release, 1 goroutine
	ObtainN    *figure // Obtain+Release, parallelGoroutines goroutines
	Failed     *figure // failed Obtain on a held key
	Refresh    *figure
	IsFloor    bool
	IsPing     bool
	IsThisRepo bool
	Partial    bool // a variant that takes part in some workloads only (library.Only)
}

// op is a function that goroutine g builds once and then calls in a loop.
type op func(g int) func(context.Context) error

// allocations runs build's operation in testing.Benchmark with goroutines
// goroutines (1: b.Loop; more: b.RunParallel) and returns its allocations
// and bytes per operation. Its time is not used: one run of a library
// falls on whatever the machine does meanwhile (see interleave).
func allocations(goroutines int, build op) (figure, error) {
	var (
		mu    sync.Mutex
		first error
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	ctx := context.Background()
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		if goroutines <= 1 {
			f := build(0)
			for b.Loop() {
				if err := f(ctx); err != nil {
					fail(err)
					b.FailNow()
				}
			}
			return
		}
		procs := runtime.GOMAXPROCS(0)
		b.SetParallelism((goroutines + procs - 1) / procs)
		var next atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			f := build(int(next.Add(1) - 1))
			for pb.Next() {
				if err := f(ctx); err != nil {
					fail(err)
					return
				}
			}
		})
	})
	if first != nil {
		return figure{}, first
	}
	if res.N == 0 {
		return figure{}, fmt.Errorf("the benchmark did not run")
	}
	n := float64(res.N)
	return figure{AllocsPerOp: float64(res.MemAllocs) / n, BytesPerOp: float64(res.MemBytes) / n, Goroutines: goroutines}, nil
}

// interleave times the operations of every library, taking turns for
// about total, and returns the wall time per operation of each library,
// all its turns together. Each cycle of turns takes the libraries in a new
// random order, so that none always follows the same one.
//
// With one goroutine a turn is one operation, timed alone. With more, in
// a turn the goroutines run one library's operation until slice has
// passed, and the turn lasts until the last of them returns; turns are a
// millisecond apart, for what a turn leaves running (a client's background
// goroutines, replies in flight) to settle.
//
// Turns that alternate make every library meet the same machine: on two
// shared cores a loopback round trip takes one of two speeds (about 40 and
// 125 µs here, as client and server share a core or not), each for a
// while, so that runs of one library after another differ by up to 30%.
func interleave(goroutines int, ops []op, slice, total time.Duration) ([]float64, error) {
	n := len(ops)
	fs := make([][]func(context.Context) error, n)
	for i, o := range ops {
		fs[i] = make([]func(context.Context) error, goroutines)
		for g := range goroutines {
			fs[i][g] = o(g)
		}
	}
	var (
		elapsed = make([]time.Duration, n)
		count   = make([]int64, n)
		ctx     = context.Background()
		order   = make([]int, n)
	)
	for i := range order {
		order[i] = i
	}
	deadline := time.Now().Add(total)
	for first := true; first || time.Now().Before(deadline); first = false {
		rand.Shuffle(n, func(a, b int) { order[a], order[b] = order[b], order[a] }) //nolint:gosec // G404: the order of turns needs no unpredictability
		for _, i := range order {
			if goroutines == 1 {
				start := time.Now()
				if err := fs[i][0](ctx); err != nil {
					return nil, err
				}
				elapsed[i] += time.Since(start)
				count[i]++
				continue
			}
			time.Sleep(settle)
			var (
				wg     sync.WaitGroup
				done   atomic.Int64
				failed atomic.Value
			)
			start := time.Now()
			end := start.Add(slice)
			for g := range goroutines {
				wg.Go(func() {
					f := fs[i][g]
					for time.Now().Before(end) {
						if err := f(ctx); err != nil {
							failed.CompareAndSwap(nil, err)
							return
						}
						done.Add(1)
					}
				})
			}
			wg.Wait()
			elapsed[i] += time.Since(start)
			count[i] += done.Load()
			if err, _ := failed.Load().(error); err != nil {
				return nil, err
			}
		}
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(elapsed[i].Nanoseconds()) / float64(max(count[i], 1))
	}
	return out, nil
}

// The workloads, as library.Only names them.
const (
	workOR1     = "obtain-release-1"
	workORN     = "obtain-release-n"
	workFailed  = "failed"
	workRefresh = "refresh"
)

// countedOps is how many operations countTrips runs: enough for the
// server's CPU time per operation to stand well above that of the two
// INFO calls around them.
const countedOps = 500

// countTrips runs f countedOps times on a client that counts, and returns
// the round trips per call and, when admin is not nil, the server's work
// per call (top names the commands clients send; see costBetween).
func countTrips(f func(context.Context) error, counter *contention.Counter, admin *redis.Client, top ...string) (float64, serverCost, error) {
	ctx := context.Background()
	// Once first, so that loading scripts (NOSCRIPT, then EVAL) is not
	// counted.
	if err := f(ctx); err != nil {
		return 0, serverCost{}, err
	}
	var a serverStats
	if admin != nil {
		var err error
		if a, err = readStats(ctx, admin); err != nil {
			return 0, serverCost{}, err
		}
	}
	before := counter.RoundTrips()
	for range countedOps {
		if err := f(ctx); err != nil {
			return 0, serverCost{}, err
		}
	}
	trips := float64(counter.RoundTrips()-before) / countedOps
	if admin == nil {
		return trips, serverCost{}, nil
	}
	b, err := readStats(ctx, admin)
	if err != nil {
		return 0, serverCost{}, err
	}
	return trips, costBetween(a, b, countedOps, top...), nil
}

// clientCommands are the commands that clients send in the micro
// workloads, for serverCost.Usec.
var clientCommands = []string{"evalsha", "eval", "set", "get", "del", "delifeq", "pexpire", "ping"}

// microSuite runs workloads 1–3 for every library, and PING beside the
// Obtain+Release workloads: the times interleaved (see interleave), the
// allocations in testing.Benchmark, the round trips on a counting client.
type microSuite struct {
	addr          string
	libs          []library
	slice         time.Duration // one turn of interleave with several goroutines
	total         time.Duration // all turns of a workload with one goroutine
	totalParallel time.Duration // all turns of a workload with several
	log           func(format string, args ...any)
}

// workload is one of the micro workloads, for one library.
type workload struct {
	id         string // as in library.Only
	name       string
	goroutines int
	ping       bool // PING runs beside, as the round trip that bounds it
	// build prepares the workload on c; it returns the operation (nil when
	// the library has none) and a function that undoes what build did.
	build func(ctx context.Context, c conn, holder conn, lib int) (op, func(), error)
	// slot stores the figure in the row.
	slot func(r *microRow) **figure
}

func (s *microSuite) workloads() []workload {
	keyOf := func(kind string, lib, g int) string { return fmt.Sprintf("bench:%s:%d:%d", kind, lib, g) }
	return []workload{
		{
			id: workOR1, name: "Obtain+Release, 1 goroutine", goroutines: 1, ping: true,
			build: func(_ context.Context, c, _ conn, lib int) (op, func(), error) {
				return func(g int) func(context.Context) error { return c.ObtainRelease(keyOf("or", lib, g)) }, func() {}, nil
			},
			slot: func(r *microRow) **figure { return &r.Obtain1 },
		},
		{
			id: workORN, name: fmt.Sprintf("Obtain+Release, %d goroutines", parallelGoroutines), goroutines: parallelGoroutines, ping: true,
			build: func(_ context.Context, c, _ conn, lib int) (op, func(), error) {
				return func(g int) func(context.Context) error { return c.ObtainRelease(keyOf("or", lib, g)) }, func() {}, nil
			},
			slot: func(r *microRow) **figure { return &r.ObtainN },
		},
		{
			id: workFailed, name: "failed Obtain on a held key", goroutines: 1,
			build: func(ctx context.Context, c, holder conn, lib int) (op, func(), error) {
				key := keyOf("held", lib, 0)
				release, err := holder.Hold(ctx, key)
				if err != nil {
					return nil, nil, fmt.Errorf("hold %s: %w", key, err)
				}
				return func(int) func(context.Context) error { return c.TryHeld(key) }, func() { _ = release(ctx) }, nil
			},
			slot: func(r *microRow) **figure { return &r.Failed },
		},
		{
			id: workRefresh, name: "Refresh", goroutines: 1,
			build: func(ctx context.Context, c, _ conn, lib int) (op, func(), error) {
				refresh, release, err := c.Refresh(ctx, keyOf("refresh", lib, 0))
				if err != nil {
					return nil, nil, err
				}
				if refresh == nil {
					_ = release(ctx)
					return nil, func() {}, nil
				}
				return func(int) func(context.Context) error { return refresh }, func() { _ = release(ctx) }, nil
			},
			slot: func(r *microRow) **figure { return &r.Refresh },
		},
	}
}

// run returns one row for PING and one per library, in that order.
func (s *microSuite) run(ctx context.Context) ([]microRow, error) {
	rows := make([]microRow, len(s.libs)+1)
	rows[0] = microRow{Name: "PING (one round trip)", Client: "go-redis", IsPing: true}
	// Each library gets a client for the timed runs, one that counts round
	// trips, and another that holds the key of the failed obtains.
	type clients struct{ timed, counted, holder conn }
	cs := make([]clients, len(s.libs))
	counters := make([]*contention.Counter, len(s.libs))
	for i, lib := range s.libs {
		rows[i+1] = microRow{Name: lib.Name, Client: lib.Client, IsFloor: i == 0, IsThisRepo: lib.Module == thisModule, Partial: lib.Only != nil}
		counters[i] = &contention.Counter{}
		var err error
		if cs[i].timed, err = lib.Connect(s.addr, nil); err != nil {
			return nil, fmt.Errorf("%s: %w", lib.Name, err)
		}
		defer cs[i].timed.Close()
		if cs[i].counted, err = lib.Connect(s.addr, counters[i]); err != nil {
			return nil, fmt.Errorf("%s: %w", lib.Name, err)
		}
		defer cs[i].counted.Close()
		if cs[i].holder, err = lib.Connect(s.addr, nil); err != nil {
			return nil, fmt.Errorf("%s: %w", lib.Name, err)
		}
		defer cs[i].holder.Close()
	}
	ping := redis.NewClient(&redis.Options{Addr: s.addr})
	defer ping.Close()
	pingCounter := &contention.Counter{}
	pingCounted := redis.NewClient(&redis.Options{Addr: s.addr})
	pingCounted.AddHook(pingCounter)
	defer pingCounted.Close()
	pingOp := func(c *redis.Client) op {
		return func(int) func(context.Context) error {
			return func(ctx context.Context) error { return c.Ping(ctx).Err() }
		}
	}

	for _, w := range s.workloads() {
		figs := make([]*figure, len(rows))
		// Round trips per operation, on the counting clients.
		if w.ping {
			t, cost, err := countTrips(pingOp(pingCounted)(0), pingCounter, ping, clientCommands...)
			if err != nil {
				return nil, fmt.Errorf("PING: %w", err)
			}
			figs[0] = &figure{RoundTrips: t, Server: cost}
		}
		for i, lib := range s.libs {
			if !lib.takesPart(w.id) {
				continue
			}
			build, undo, err := w.build(ctx, cs[i].counted, cs[i].holder, 100+i)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", lib.Name, w.name, err)
			}
			if build != nil {
				t, cost, err := countTrips(build(0), counters[i], ping, clientCommands...)
				if err != nil {
					undo()
					return nil, fmt.Errorf("%s, %s: %w", lib.Name, w.name, err)
				}
				figs[i+1] = &figure{RoundTrips: t, Server: cost}
			}
			undo()
		}

		// The operations of the timed clients, built once for both the
		// allocations and the times.
		ops := make([]op, len(rows))
		if w.ping {
			ops[0] = pingOp(ping)
		}
		for i, lib := range s.libs {
			if !lib.takesPart(w.id) {
				continue
			}
			build, undo, err := w.build(ctx, cs[i].timed, cs[i].holder, i)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", lib.Name, w.name, err)
			}
			defer undo()
			ops[i+1] = build
		}
		var timed []op
		var index []int
		for i, o := range ops {
			if o == nil || figs[i] == nil {
				continue
			}
			a, err := allocations(w.goroutines, o)
			if err != nil {
				return nil, fmt.Errorf("%s, %s: %w", rows[i].Name, w.name, err)
			}
			figs[i].AllocsPerOp, figs[i].BytesPerOp = a.AllocsPerOp, a.BytesPerOp
			timed = append(timed, o)
			index = append(index, i)
		}
		total := s.total
		if w.goroutines > 1 {
			total = s.totalParallel
		}
		times, err := interleave(w.goroutines, timed, s.slice, total)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.name, err)
		}
		for k, i := range index {
			figs[i].NsPerOp = times[k]
			figs[i].Goroutines = w.goroutines
			*w.slot(&rows[i]) = figs[i]
			s.log("  %s, %s: %.0f ns/op, %.1f allocs/op, %.2f round trips", w.name, rows[i].Name, figs[i].NsPerOp, figs[i].AllocsPerOp, figs[i].RoundTrips)
		}
	}
	return rows, nil
}

// writeMicroLines writes each figure of workloads 1–3 as one line of
// tab-separated fields (workload, row, ns/op, allocs/op, B/op), for
// -micro-only: scripts/sidebyside-micro.sh puts runs of two builds side
// by side from these lines.
func writeMicroLines(w io.Writer, rows []microRow) {
	for _, r := range rows {
		for _, f := range []struct {
			name string
			fig  *figure
		}{{"Obtain+Release, 1 goroutine", r.Obtain1}, {fmt.Sprintf("Obtain+Release, %d goroutines", parallelGoroutines), r.ObtainN}, {"failed Obtain", r.Failed}, {"Refresh", r.Refresh}} {
			if f.fig != nil {
				_, _ = fmt.Fprintf(w, "%s\t%s\t%.0f\t%.1f\t%.0f\n", f.name, r.Name, f.fig.NsPerOp, f.fig.AllocsPerOp, f.fig.BytesPerOp)
			}
		}
	}
}
