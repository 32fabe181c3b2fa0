package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// rwSuite is workload 7: a read-mostly load on one name, through
// redislock's RWMutex and through its plain Lock doing the same work (every
// operation exclusive), side by side on one server, polling and with
// WaitForRelease; then the wait of a writer among continuous readers, with
// each strategy.
type rwSuite struct {
	addr     string
	workers  int           // 32
	reads    float64       // share of reads, 0.95
	hold     time.Duration // each hold's work, 1 ms
	duration time.Duration // each run
	log      func(format string, args ...any)
}

// rwRow is one run of workload 7.
type rwRow struct {
	Name         string
	Strategy     string
	Acquisitions int64
	Reads        int64
	Elapsed      time.Duration
	CPU          time.Duration // Redis's used_cpu_sys + used_cpu_user during the run
	WriteWaits   []time.Duration
	Base         float64 // acquisitions/s of the Lock run with the same strategy; 0 for none
}

func (r rwRow) PerSecond() float64 { return float64(r.Acquisitions) / r.Elapsed.Seconds() }

func (r rwRow) CPUPerAcquisition() time.Duration {
	if r.Acquisitions == 0 {
		return 0
	}
	return r.CPU / time.Duration(r.Acquisitions)
}

func (r rwRow) WriteWait(p float64) time.Duration {
	if len(r.WriteWaits) == 0 {
		return 0
	}
	s := slices.Clone(r.WriteWaits)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// rwResult is workload 7's outcome.
type rwResult struct {
	Suite   rwSuite
	Rows    []rwRow // per strategy: RWMutex, then Lock
	Writers []rwRow // per strategy: one writer among workers-1 continuous readers
}

// rwStrategy is a retry strategy of workload 7, by name.
type rwStrategy struct {
	name string
	opt  *redislock.Options
}

// rwStrategies are the strategies workload 7 compares: polling every
// millisecond, and waiting for the release (whose fallback, for transient
// errors only here, is the default).
func rwStrategies() []rwStrategy {
	return []rwStrategy{
		{"LinearBackoff(1ms)", &redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)}},
		{"WaitForRelease", &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}},
	}
}

func (s *rwSuite) run(ctx context.Context) (*rwResult, error) {
	admin := redis.NewClient(&redis.Options{Addr: s.addr})
	defer func() { _ = admin.Close() }()
	rdb := redis.NewClient(&redis.Options{Addr: s.addr, PoolSize: s.workers + 4})
	defer func() { _ = rdb.Close() }()
	c := redislock.New(rdb)
	res := &rwResult{Suite: *s}
	const ttl = 10 * time.Second

	mix := func(_ int, rnd *rand.Rand) (bool, time.Duration) { return rnd.Float64() < s.reads, 0 }
	for i, st := range rwStrategies() {
		rw := c.RWMutex(fmt.Sprintf("bench:rw:%d", i))
		rwRun, err := s.measure(ctx, admin, "RWMutex (RLock / Lock)", mix, func(read bool) (func(context.Context) error, error) {
			if read {
				r, err := rw.RLock(ctx, ttl, st.opt)
				if err != nil {
					return nil, err
				}
				return r.Release, nil
			}
			w, err := rw.Lock(ctx, ttl, st.opt)
			if err != nil {
				return nil, err
			}
			return w.Release, nil
		})
		if err != nil {
			return nil, err
		}
		key := fmt.Sprintf("bench:rw:mutex:%d", i)
		lockRun, err := s.measure(ctx, admin, "Lock (every operation exclusive)", mix, func(bool) (func(context.Context) error, error) {
			l, err := c.Obtain(ctx, key, ttl, st.opt)
			if err != nil {
				return nil, err
			}
			return l.Release, nil
		})
		if err != nil {
			return nil, err
		}
		rwRun.Strategy, lockRun.Strategy = st.name, st.name
		rwRun.Base, lockRun.Base = lockRun.PerSecond(), lockRun.PerSecond()
		res.Rows = append(res.Rows, rwRun, lockRun)
		for _, r := range []rwRow{rwRun, lockRun} {
			s.log("  %s, %s: %.0f acquisitions/s, Redis CPU %v per acquisition", r.Name, r.Strategy, r.PerSecond(), r.CPUPerAcquisition())
		}

		// One writer among continuous readers: how long it waits.
		writer, err := s.writerAmongReaders(ctx, admin, c.RWMutex(fmt.Sprintf("bench:rw:writer:%d", i)), st.opt)
		if err != nil {
			return nil, err
		}
		writer.Strategy = st.name
		res.Writers = append(res.Writers, writer)
		s.log("  writer among %d readers, %s: wait p50 %v, p99 %v (%d writes)", s.workers-1, st.name, writer.WriteWait(0.5), writer.WriteWait(0.99), len(writer.WriteWaits))
	}
	return res, nil
}

// measure runs s.workers goroutines for s.duration, each taking a hold
// through acquire (a read or a write as pick says), working s.hold,
// releasing, and resting as pick says, and counts acquisitions and Redis
// CPU.
func (s *rwSuite) measure(ctx context.Context, admin *redis.Client, name string, pick func(worker int, rnd *rand.Rand) (read bool, rest time.Duration), acquire func(read bool) (func(context.Context) error, error)) (rwRow, error) {
	row := rwRow{Name: name}
	var acqs, nreads atomic.Int64
	var mu sync.Mutex
	var firstErr error
	cpu0, err := redisCPU(ctx, admin)
	if err != nil {
		return row, err
	}
	start := time.Now()
	deadline := start.Add(s.duration)
	var wg sync.WaitGroup
	for i := range s.workers {
		rnd := rand.New(rand.NewPCG(uint64(i), 7)) //nolint:gosec // the workload's choices
		wg.Go(func() {
			for time.Now().Before(deadline) {
				read, rest := pick(i, rnd)
				begin := time.Now()
				release, err := acquire(read)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				waited := time.Since(begin)
				time.Sleep(s.hold)
				_ = release(ctx) // a hold that expired is still counted: it was held
				acqs.Add(1)
				if read {
					nreads.Add(1)
				} else {
					mu.Lock()
					row.WriteWaits = append(row.WriteWaits, waited)
					mu.Unlock()
				}
				time.Sleep(rest)
			}
		})
	}
	wg.Wait()
	row.Elapsed = time.Since(start)
	cpu1, err := redisCPU(ctx, admin)
	if err != nil {
		return row, err
	}
	row.CPU = cpu1 - cpu0
	row.Acquisitions, row.Reads = acqs.Load(), nreads.Load()
	return row, firstErr
}

// writerAmongReaders runs s.workers-1 readers that take read holds back to
// back, and one writer that takes the write lock, holds it s.hold and
// rests 10 ms, recording how long each write acquisition waited.
func (s *rwSuite) writerAmongReaders(ctx context.Context, admin *redis.Client, rw *redislock.RWMutex, strategy *redislock.Options) (rwRow, error) {
	const ttl = 10 * time.Second
	pick := func(i int, _ *rand.Rand) (bool, time.Duration) {
		if i == 0 {
			return false, 10 * time.Millisecond
		}
		return true, 0
	}
	return s.measure(ctx, admin, fmt.Sprintf("1 writer (every 10 ms) among %d continuous readers", s.workers-1), pick, func(read bool) (func(context.Context) error, error) {
		if read {
			r, err := rw.RLock(ctx, ttl, strategy)
			if err != nil {
				return nil, err
			}
			return r.Release, nil
		}
		w, err := rw.Lock(ctx, ttl, strategy)
		if err != nil {
			return nil, err
		}
		return w.Release, nil
	})
}

// redisCPU returns the server's used_cpu_sys + used_cpu_user.
func redisCPU(ctx context.Context, admin *redis.Client) (time.Duration, error) {
	info, err := admin.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "used_cpu_sys" || k == "used_cpu_user") {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("INFO cpu %s: %w", k, err)
			}
			total += f
		}
	}
	return time.Duration(total * float64(time.Second)), nil
}

// writeMarkdown writes workload 7's section of results.md.
func (r *rwResult) writeMarkdown(w io.Writer) {
	s := r.Suite
	fmt.Fprintf(w, "\n## Workload 7: read-write lock, %.0f%% reads over %d workers\n\n", s.reads*100, s.workers)
	fmt.Fprintf(w, "Each worker takes a hold (a read with probability %.2f, else a write), works %v, releases, for %v per run, one go-redis client; the plain Lock does the same work with every operation exclusive, with the same strategy (× Lock compares the two). Then one writer (every 10 ms) among %d readers that take holds back to back. Redis CPU per acquisition includes the failed attempts of waiting callers.\n\n", s.reads, s.hold, s.duration, s.workers-1)
	_, _ = fmt.Fprintln(w, "| run | strategy | acquisitions/s | × Lock | write wait p50 | write wait p99 | Redis CPU per acquisition |")
	_, _ = fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|")
	for _, row := range append(slices.Clone(r.Rows), r.Writers...) {
		ratio := "—"
		if row.Base > 0 {
			ratio = fmt.Sprintf("%.2f", row.PerSecond()/row.Base)
		}
		fmt.Fprintf(w, "| %s | %s | %.0f | %s | %v | %v | %v |\n", row.Name, row.Strategy, row.PerSecond(), ratio,
			row.WriteWait(0.5).Round(10*time.Microsecond), row.WriteWait(0.99).Round(10*time.Microsecond), row.CPUPerAcquisition().Round(100*time.Nanosecond))
	}
}
