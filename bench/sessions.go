package main

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/bench/contention"
)

// Workload 10 (issue 34): many locks held at once, each kept alive for the
// whole run, by a KeepAlive of its own or by one Session, at several
// counts, in one run and on one server.

// sessTTL is the TTL of every lock of workload 10.
const sessTTL = 3 * time.Second

// sessRow is one row of workload 10.
type sessRow struct {
	Mode       string // sessKeepAlive or sessSession
	Locks      int
	Goroutines int     // while held, beyond those before the obtains
	HeapPerLok float64 // bytes of Go heap per held lock (after GC)
	Calls      float64 // script calls Redis ran per second (EVALSHA, EVAL)
	Commands   float64 // every command Redis ran per second, those inside scripts included
	Trips      float64 // round trips per second, a pipeline counting one
	Refreshes  float64 // lease refreshes per second (the scripts' PEXPIREs)
	CPUPer     float64 // Redis CPU (user+sys) per lease refresh, µs
	CPUShare   float64 // Redis CPU per second of the run: share of one core
	Lost       int     // keep-alives that ended during the run
	Note       string  // why the row was not measured
}

const (
	sessKeepAlive = "KeepAlive per lock"
	sessSession   = "one Session"
	sessUnmerged  = "one Session, a script call per lock"
)

// unmerged is a go-redis client whose type the session does not know, so
// that it pipelines one refresh.lua call per lock instead of merging them
// into refresh_many.lua calls: the ablation row of workload 10.
type unmerged struct{ *redis.Client }

// sessSuite runs workload 10.
type sessSuite struct {
	addr      string
	counts    []int         // locks held in each pair of rows
	window    time.Duration // measurement of each row, after a second of settling
	keepAlive int           // the most locks the KeepAlive rows hold; above it they are skipped
	unmerged  int           // the count of locks at which the unmerged session also runs; 0: none
	log       func(format string, args ...any)
}

func (s *sessSuite) run(ctx context.Context) ([]sessRow, error) {
	admin := redis.NewClient(&redis.Options{Addr: s.addr})
	defer func() { _ = admin.Close() }()
	var rows []sessRow
	for _, n := range s.counts {
		modes := []string{sessKeepAlive, sessSession}
		if n == s.unmerged {
			modes = append(modes, sessUnmerged)
		}
		for _, mode := range modes {
			if mode == sessKeepAlive && n > s.keepAlive {
				rows = append(rows, sessRow{Mode: mode, Locks: n, Note: fmt.Sprintf("not run: above -sessions-keepalive-max %d", s.keepAlive)})
				continue
			}
			row, err := s.runOne(ctx, admin, mode, n)
			if err != nil {
				return nil, fmt.Errorf("%s, %d locks: %w", mode, n, err)
			}
			s.log("  %s, %d locks: %d goroutines, %.0f B/lock, %.0f round trips/s, %.1f µs Redis CPU per refresh, %d lost",
				mode, n, row.Goroutines, row.HeapPerLok, row.Trips, row.CPUPer, row.Lost)
			rows = append(rows, row)
		}
	}
	return rows, admin.FlushAll(ctx).Err()
}

// sessHeld is what one row holds: the locks, and their keep-alives, on
// keys (made before the baseline of the heap: the application's, not the
// library's).
type sessHeld struct {
	keys  []string
	locks []*redislock.Lock
	kas   []*redislock.KeepAlive
	sess  *redislock.Session
}

func (s *sessSuite) runOne(ctx context.Context, admin *redis.Client, mode string, n int) (sessRow, error) {
	row := sessRow{Mode: mode, Locks: n}
	rdb := redis.NewClient(&redis.Options{Addr: s.addr})
	defer func() { _ = rdb.Close() }()
	var trips contention.Counter
	rdb.AddHook(&trips)
	c := redislock.New(rdb)
	if mode == sessUnmerged {
		c = redislock.New(unmerged{rdb})
	}
	// Scripts loaded and connections open before the baseline.
	warm, err := c.Obtain(ctx, "bench:sess:warm", time.Second, nil)
	if err != nil {
		return row, err
	}
	if err := warm.Release(ctx); err != nil {
		return row, err
	}
	if err := admin.FlushAll(ctx).Err(); err != nil {
		return row, err
	}
	h := &sessHeld{keys: make([]string, n), locks: make([]*redislock.Lock, n), kas: make([]*redislock.KeepAlive, n)}
	for i := range h.keys {
		h.keys[i] = "bench:sess:" + strconv.Itoa(i)
	}
	goroutines0, heap0 := runtime.NumGoroutine(), heapNow()

	if mode != sessKeepAlive {
		if h.sess, err = c.Session(sessTTL, nil); err != nil {
			return row, err
		}
		defer h.sess.Close()
	}
	if err := s.holdAll(ctx, c, h); err != nil {
		return row, err
	}
	time.Sleep(time.Second) // the obtains' replies and garbage settle

	row.Goroutines = runtime.NumGoroutine() - goroutines0
	row.HeapPerLok = float64(heapNow()-heap0) / float64(n)
	before, err := sessStats(ctx, admin)
	if err != nil {
		return row, err
	}
	trips0, t0 := trips.RoundTrips(), time.Now()
	time.Sleep(s.window)
	after, err := sessStats(ctx, admin)
	if err != nil {
		return row, err
	}
	secs := time.Since(t0).Seconds()
	row.Trips = float64(trips.RoundTrips()-trips0) / secs
	row.Calls = (after.calls - before.calls) / secs
	row.Commands = (after.commands - before.commands) / secs
	refreshes := after.pexpire - before.pexpire
	row.Refreshes = refreshes / secs
	row.CPUShare = (after.cpu - before.cpu) / secs
	if refreshes > 0 {
		row.CPUPer = (after.cpu - before.cpu) * 1e6 / refreshes
	}
	for _, ka := range h.kas {
		if ka.Err() != nil {
			row.Lost++
		}
	}
	return row, s.releaseAll(ctx, h)
}

// holdAll obtains len(h.locks) locks with memWorkers goroutines, each kept
// alive by its own KeepAlive or by h.sess.
func (s *sessSuite) holdAll(ctx context.Context, c *redislock.Client, h *sessHeld) error {
	errs := make([]error, memWorkers)
	var wg sync.WaitGroup
	for w := range memWorkers {
		wg.Go(func() {
			for i := w; i < len(h.locks); i += memWorkers {
				key := h.keys[i]
				if h.sess != nil {
					h.locks[i], h.kas[i], errs[w] = h.sess.Obtain(ctx, key, nil)
				} else if h.locks[i], errs[w] = c.Obtain(ctx, key, sessTTL, nil); errs[w] == nil {
					h.kas[i], errs[w] = h.locks[i].KeepAlive(sessTTL, nil)
				}
				if errs[w] != nil {
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// releaseAll releases the locks of h: the session's in one Release, the
// others one by one.
func (s *sessSuite) releaseAll(ctx context.Context, h *sessHeld) error {
	if h.sess != nil {
		return h.sess.Release(ctx)
	}
	var wg sync.WaitGroup
	for w := range memWorkers {
		wg.Go(func() {
			for i := w; i < len(h.locks); i += memWorkers {
				if h.locks[i] != nil {
					_ = h.locks[i].Release(ctx)
				}
			}
		})
	}
	wg.Wait()
	return nil
}

// heapNow returns the Go heap in use after a full collection.
func heapNow() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc) //nolint:gosec // G115: a heap below 2^63 bytes
}

// sessCounters is what INFO says of the server's work so far.
type sessCounters struct{ calls, commands, pexpire, cpu float64 }

// sessStats reads INFO commandstats and cpu.
func sessStats(ctx context.Context, admin *redis.Client) (sessCounters, error) {
	info, err := admin.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return sessCounters{}, err
	}
	var c sessCounters
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		if name, ok := strings.CutPrefix(k, "cmdstat_"); ok {
			calls, _, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
			f, err := strconv.ParseFloat(calls, 64)
			if err != nil {
				return c, fmt.Errorf("INFO commandstats %s: %w", line, err)
			}
			if name == "info" {
				continue // the bench's own
			}
			c.commands += f
			switch name {
			case "evalsha", "eval", "evalsha_ro", "eval_ro":
				c.calls += f
			case "pexpire":
				c.pexpire += f
			}
			continue
		}
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			c.cpu += f
		}
	}
	return c, nil
}

// writeSessions writes workload 10's section.
func writeSessions(b *strings.Builder, rows []sessRow, window time.Duration) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("Locks held at once, each with a %v TTL kept alive for the run: by a `Lock.KeepAlive` each, or all by one\n", sessTTL)
	p("`Session` (`Client.Session`, `Session.Obtain`). Each row obtains its locks with %d goroutines, lets a second\n", memWorkers)
	p("pass, then measures for %v. Goroutines and Go heap per held lock (after a GC) are the growth from before\n", window)
	p("the obtains: the Lock handles and what keeps them alive, not the bench's keys and slices, made before.\n")
	p("Script calls and commands are what Redis ran (INFO commandstats;\n")
	p("commands count those inside the scripts too); round trips are what the client sent, a pipeline counting one\n")
	p("(a go-redis hook). A lease refresh is one lock's key extended (the scripts' PEXPIRE calls). Redis CPU is INFO\n")
	p("cpu (used_cpu_user + used_cpu_sys) over the window. Lost: keep-alives that ended during the run (must be 0).\n\n")
	p("| mode | locks | goroutines | heap B/lock | script calls/s | commands/s | round trips/s | lease refreshes/s | Redis CPU µs/refresh | Redis CPU (core) | lost |\n")
	p("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		if r.Note != "" {
			p("| %s | %s | %s | | | | | | | | |\n", r.Mode, thousands(r.Locks), r.Note)
			continue
		}
		p("| %s | %s | %s | %.0f | %s | %s | %s | %s | %.2f | %.0f%% | %d |\n", label(r.Mode, r.Mode != sessKeepAlive), thousands(r.Locks),
			thousands(r.Goroutines), r.HeapPerLok, thousands(int(r.Calls)), thousands(int(r.Commands)), thousands(int(r.Trips)),
			thousands(int(r.Refreshes)), r.CPUPer, 100*r.CPUShare, r.Lost)
	}
	p("\n")
	for _, s := range rows {
		if s.Mode != sessSession || s.Note != "" {
			continue
		}
		for _, k := range rows {
			if k.Locks != s.Locks || k.Note != "" || k.CPUPer == 0 {
				continue
			}
			switch k.Mode {
			case sessKeepAlive:
				p("- %s locks: Redis CPU per lease refresh, session ÷ KeepAlive = %.2f; round trips %.4f×; heap %.2f×.\n",
					thousands(s.Locks), s.CPUPer/k.CPUPer, s.Trips/k.Trips, s.HeapPerLok/k.HeapPerLok)
			case sessUnmerged:
				p("- %s locks: Redis CPU per lease refresh, refresh_many.lua ÷ a refresh.lua call per lock = %.2f.\n",
					thousands(s.Locks), s.CPUPer/k.CPUPer)
			}
		}
	}
	p("\n")
}
