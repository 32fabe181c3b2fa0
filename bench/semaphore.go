package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// The semaphore rows of the benchmark (issue 16): the cost of generality
// (a semaphore of limit 1 beside a Lock, one goroutine, acquire+release on
// one key), and a hot semaphore (limit 4, 64 workers, 1 ms hold) per retry
// strategy.

// semCostRow is one side of the cost-of-generality comparison.
type semCostRow struct {
	name   string
	nsOp   float64 // per acquire+release
	allocs int64   // per acquire+release
}

// semCost measures acquire+release of a Lock and of a Semaphore of limit 1
// on addr, each in turns of slice until d has passed, so that both see the
// same server load; allocations come from one testing.Benchmark run each.
func semCost(ctx context.Context, addr string, d, slice time.Duration) ([]semCostRow, error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = rdb.Close() }()
	c := redislock.New(rdb)
	sem := c.Semaphore("bench:sem:cost", 1)
	ops := []struct {
		name string
		op   func() error
	}{
		{"Lock (Obtain+Release)", func() error {
			l, err := c.Obtain(ctx, "bench:lock:cost", time.Minute, nil)
			if err != nil {
				return err
			}
			return l.Release(ctx)
		}},
		{"Semaphore limit 1 (Acquire+Release)", func() error {
			p, err := sem.Acquire(ctx, time.Minute, nil)
			if err != nil {
				return err
			}
			return p.Release(ctx)
		}},
	}
	n := make([]int64, len(ops))
	spent := make([]time.Duration, len(ops))
	for start := time.Now(); time.Since(start) < d; {
		for i, o := range ops {
			t0 := time.Now()
			for time.Since(t0) < slice {
				if err := o.op(); err != nil {
					return nil, fmt.Errorf("%s: %w", o.name, err)
				}
				n[i]++
			}
			spent[i] += time.Since(t0)
		}
	}
	rows := make([]semCostRow, len(ops))
	for i, o := range ops {
		var failed error
		res := testing.Benchmark(func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := o.op(); err != nil {
					failed = err
					b.FailNow()
				}
			}
		})
		if failed != nil {
			return nil, fmt.Errorf("%s: %w", o.name, failed)
		}
		rows[i] = semCostRow{name: o.name, nsOp: float64(spent[i].Nanoseconds()) / float64(n[i]), allocs: res.AllocsPerOp()}
	}
	return rows, nil
}

// semHotRun is one hot-semaphore run.
type semHotRun struct {
	strategy        string
	acquisitions    int
	perSecond       float64
	p50, p99, worst time.Duration
	minW, maxW      int     // acquisitions of the least and most served worker
	fairBound       float64 // seconds: (workers-1)/throughput, a FIFO's wait
	cpuPerAcq       float64 // Redis CPU (user+sys) µs per acquisition
	cmdsPerAcq      float64 // Redis commands per acquisition
	mostHeld        int     // holders at once, by local validity
}

// semHot runs workers goroutines on one semaphore of limit, each holding
// its permit for hold, for d after warm-up, with the retry strategy
// strategy, spread over clients go-redis clients; stats reads the server's
// INFO.
func semHot(ctx context.Context, addr string, stats *redis.Client, name string, strategy redislock.RetryStrategy, clients, limit, workers int, hold, warm, d time.Duration) (semHotRun, error) {
	sems := make([]redislock.Semaphore, clients)
	for i := range sems {
		rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: workers/clients + 4})
		defer func() { _ = rdb.Close() }()
		sems[i] = redislock.New(rdb).Semaphore("bench:sem:hot:"+name, limit)
	}
	opt := &redislock.Options{RetryStrategy: strategy}

	var (
		mu       sync.Mutex
		waits    []time.Duration
		perW     = make([]int, workers)
		holding  int
		mostHeld int
		firstErr error
		wg       sync.WaitGroup
	)
	start := time.Now()
	measureFrom, measureTo := start.Add(warm), start.Add(warm+d)
	var cpu0, cmds0 float64
	var readErr error
	go func() {
		time.Sleep(warm)
		cpu0, cmds0, readErr = serverCounters(ctx, stats)
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(measureTo) {
				t0 := time.Now()
				actx, cancel := context.WithDeadline(ctx, measureTo.Add(time.Second))
				p, err := sems[w%clients].Acquire(actx, 5*time.Second, opt)
				cancel()
				if err != nil {
					if time.Now().After(measureTo) {
						return
					}
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				got := time.Now()
				mu.Lock()
				holding++
				mostHeld = max(mostHeld, holding)
				if !t0.Before(measureFrom) && got.Before(measureTo) {
					waits = append(waits, got.Sub(t0))
					perW[w]++
				}
				mu.Unlock()
				time.Sleep(hold)
				mu.Lock()
				holding--
				mu.Unlock()
				if err := p.Release(ctx); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	cpu1, cmds1, err := serverCounters(ctx, stats)
	if err == nil {
		err = readErr
	}
	if err == nil {
		err = firstErr
	}
	if err != nil {
		return semHotRun{}, err
	}
	slices.Sort(waits)
	r := semHotRun{strategy: name, acquisitions: len(waits), mostHeld: mostHeld}
	if len(waits) == 0 {
		return r, fmt.Errorf("%s: no acquisition measured", name)
	}
	r.perSecond = float64(len(waits)) / d.Seconds()
	r.p50, r.p99, r.worst = waits[len(waits)/2], waits[len(waits)*99/100], waits[len(waits)-1]
	r.minW, r.maxW = slices.Min(perW), slices.Max(perW)
	r.fairBound = float64(workers-1) / r.perSecond
	// The counters run past the measurement (warm-up end to the last
	// release): a slight overcount, the same for every strategy.
	r.cpuPerAcq = (cpu1 - cpu0) * 1e6 / float64(len(waits))
	r.cmdsPerAcq = (cmds1 - cmds0) / float64(len(waits))
	return r, nil
}

// serverCounters reads Redis's CPU time (user+sys, seconds) and commands
// processed.
func serverCounters(ctx context.Context, stats *redis.Client) (cpu, cmds float64, err error) {
	info, err := stats.Info(ctx, "cpu", "stats").Result()
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(info, "\r\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		f, _ := strconv.ParseFloat(v, 64) // a field that is not a number is not one of these
		switch k {
		case "used_cpu_user", "used_cpu_sys":
			cpu += f
		case "total_commands_processed":
			cmds = f
		}
	}
	return cpu, cmds, nil
}

// semTable formats the semaphore rows as Markdown.
func semTable(cost []semCostRow, hot []semHotRun, limit, workers int, hold time.Duration) string {
	var b strings.Builder
	b.WriteString("| acquire+release, one goroutine | time | allocs |\n|---|---:|---:|\n")
	for _, r := range cost {
		fmt.Fprintf(&b, "| %s | %.1f µs | %d |\n", r.name, r.nsOp/1e3, r.allocs)
	}
	if len(cost) == 2 {
		fmt.Fprintf(&b, "| ratio semaphore / lock | %.2f× | %+d |\n", cost[1].nsOp/cost[0].nsOp, cost[1].allocs-cost[0].allocs)
	}
	fmt.Fprintf(&b, "\nHot semaphore: limit %d, %d workers, %v hold.\n\n", limit, workers, hold)
	b.WriteString("| strategy | acq/s | wait p50 | p99 | max | p99 / fair bound | per worker min–max | Redis CPU µs/acq | cmds/acq | most held |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range hot {
		fmt.Fprintf(&b, "| %s | %.0f | %v | %v | %v | %.2f | %d–%d | %.1f | %.2f | %d |\n",
			r.strategy, r.perSecond, r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.worst.Round(10*time.Microsecond),
			r.p99.Seconds()/r.fairBound, r.minW, r.maxW, r.cpuPerAcq, r.cmdsPerAcq, r.mostHeld)
	}
	return b.String()
}

// semaphoreReport runs the semaphore rows for make bench: the cost
// comparison for costFor, then each hot-semaphore strategy for hotFor after
// 500 ms of warm-up, and returns the Markdown section.
func semaphoreReport(ctx context.Context, addr string, stats *redis.Client, costFor, hotFor time.Duration) (string, error) {
	cost, err := semCost(ctx, addr, costFor, 20*time.Millisecond)
	if err != nil {
		return "", err
	}
	const limit, workers, hold = 4, 64, time.Millisecond
	var hot []semHotRun
	for _, s := range semStrategies() {
		r, err := semHot(ctx, addr, stats, s.name, s.s, s.clients, limit, workers, hold, 500*time.Millisecond, hotFor)
		if err != nil {
			return "", err
		}
		hot = append(hot, r)
	}
	return semTable(cost, hot, limit, workers, hold), nil
}

// semStrategy is a retry strategy of the hot-semaphore rows, and the
// number of go-redis clients its workers share.
type semStrategy struct {
	name    string
	s       redislock.RetryStrategy
	clients int
}

// semStrategies are the hot-semaphore rows' strategies: WaitForRelease
// (the workers of one client block one connection between them, so it is
// run on one client and on 8), then polling on one client.
func semStrategies() []semStrategy {
	return []semStrategy{
		{"WaitForRelease(nil), 1 client", redislock.WaitForRelease(nil), 1},
		{"WaitForRelease(nil), 8 clients", redislock.WaitForRelease(nil), 8},
		{"LinearBackoff(1ms)", redislock.LinearBackoff(time.Millisecond), 1},
		{"Jitter(Exponential(1ms, 16ms), 0.5)", redislock.Jitter(redislock.ExponentialBackoff(time.Millisecond, 16*time.Millisecond), 0.5), 1},
	}
}
