// Package contention measures a distributed lock under contention: many
// workers take turns on one hot key, each holding it briefly, and the run
// reports throughput, how long workers waited, how evenly the lock went
// round, and what it cost Redis.
//
// The workload is generic over an obtain function (which returns the
// matching release), so the same runner measures this library's retry
// strategies (go run . -contention strategies, make bench-contention) and
// compares it with other libraries (the hot-key workload of make bench).
//
//	res, err := contention.Run(ctx, contention.Config{
//		Name: "LinearBackoff(10ms)", Workers: 64, Hold: time.Millisecond,
//		Duration: 3 * time.Second, Stats: admin,
//		Worker: func(i int) (contention.ObtainFunc, func()) { ... },
//	})
//	contention.WriteTable(os.Stdout, []*contention.Result{res})
package contention

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ObtainFunc takes the lock, blocking until it is held or ctx ends, and
// returns the function that releases it. It is called by one worker at a
// time.
type ObtainFunc func(ctx context.Context) (release func(context.Context) error, err error)

// Config describes one run.
type Config struct {
	// Name labels the run in the table (the strategy or library).
	Name string

	// Layout labels how workers reach Redis, such as "own client" or
	// "shared client".
	Layout string

	// Workers is the number of workers. Default: 8.
	Workers int

	// Hold is how long a worker holds the lock. Default: 1ms.
	Hold time.Duration

	// Warmup runs before the measurement, not counted. Default: 500ms.
	Warmup time.Duration

	// Duration is how long the measurement lasts. Default: 3s.
	Duration time.Duration

	// Worker returns the obtain function of worker i (0 ≤ i < Workers) and a
	// function, possibly nil, that closes what it opened; it is called
	// before the run, once per worker.
	Worker func(i int) (ObtainFunc, func())

	// Stats is a client of the Redis server that holds the lock, used for
	// INFO commandstats and PING. It must not be one that workers use.
	// Required.
	Stats *redis.Client

	// Requests, if set, counts the commands the workers' clients send (see
	// [Counter]); the table then reports requests per acquisition, and
	// [Result.RoundTripsPerAcquisition] the round trips.
	Requests *Counter
}

// Result is what one run measured.
type Result struct {
	Name, Layout string
	Workers      int
	Hold         time.Duration
	Elapsed      time.Duration   // the measurement's length
	Waits        []time.Duration // Obtain called → lock held, of each acquisition in the window, sorted
	Holds        []time.Duration // lock held → release called, of the same acquisitions, sorted
	PerWorker    []int           // acquisitions of each worker in the window
	Errors       int             // obtain calls that failed (other than at the end)
	Commands     map[string]int64
	Requests     int64         // -1 when not counted
	RoundTrips   int64         // -1 when not counted; a pipeline counts one
	Ping         time.Duration // median PING round trip during the measurement
	// CPU is the server's CPU time (used_cpu_user + used_cpu_sys of INFO
	// cpu) during the measurement, whatever the server did meanwhile.
	CPU time.Duration
	// Mallocs counts the heap allocations of this process during the
	// measurement (runtime.MemStats.Mallocs): the workers', their clients'
	// and the runner's.
	Mallocs uint64
}

// Acquisitions returns the number of acquisitions in the window.
func (r *Result) Acquisitions() int { return len(r.Waits) }

// Throughput returns acquisitions per second.
func (r *Result) Throughput() float64 {
	return float64(len(r.Waits)) / r.Elapsed.Seconds()
}

// Wait returns the p-quantile (0 ≤ p ≤ 1) of the waits; 0 without any.
func (r *Result) Wait(p float64) time.Duration { return quantile(r.Waits, p) }

// MaxWait returns the longest wait.
func (r *Result) MaxWait() time.Duration {
	if len(r.Waits) == 0 {
		return 0
	}
	return r.Waits[len(r.Waits)-1]
}

// MeanHold returns the mean time from lock held to release called: Hold,
// and as much as the sleep overran it.
func (r *Result) MeanHold() time.Duration {
	if len(r.Holds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, h := range r.Holds {
		sum += h
	}
	return sum / time.Duration(len(r.Holds))
}

// Gap returns the mean time per acquisition that the lock was not held:
// the mean time per acquisition (elapsed / acquisitions) less the mean
// hold. Under saturation it is the handover: release called → the next
// holder has the lock.
func (r *Result) Gap() time.Duration {
	if len(r.Waits) == 0 {
		return 0
	}
	return r.Elapsed/time.Duration(len(r.Waits)) - r.MeanHold()
}

// FairBound returns the wait of a perfectly fair queue: every worker waits
// for all the others, each holding and handing over for the measured mean
// time per acquisition (workers × elapsed / acquisitions).
func (r *Result) FairBound() time.Duration {
	if len(r.Waits) == 0 {
		return 0
	}
	return time.Duration(float64(r.Workers) * float64(r.Elapsed) / float64(len(r.Waits)))
}

// MinMax returns the fewest and the most acquisitions of one worker.
func (r *Result) MinMax() (int, int) {
	if len(r.PerWorker) == 0 {
		return 0, 0
	}
	return slices.Min(r.PerWorker), slices.Max(r.PerWorker)
}

// Starved reports whether some worker got fewer than half the mean number
// of acquisitions.
func (r *Result) Starved() bool {
	lo, _ := r.MinMax()
	mean := float64(len(r.Waits)) / float64(max(r.Workers, 1))
	return float64(lo) < mean/2
}

// CommandsPerAcquisition returns the commands Redis executed per
// acquisition, from INFO commandstats: those sent by clients and those that
// scripts ran, all counted.
func (r *Result) CommandsPerAcquisition() float64 {
	var n int64
	for _, c := range r.Commands {
		n += c
	}
	return perAcquisition(n, len(r.Waits))
}

// CPUPerAcquisition returns the server's CPU time per acquisition.
func (r *Result) CPUPerAcquisition() time.Duration {
	if len(r.Waits) == 0 {
		return 0
	}
	return r.CPU / time.Duration(len(r.Waits))
}

// MallocsPerAcquisition returns this process's heap allocations per
// acquisition.
func (r *Result) MallocsPerAcquisition() float64 {
	return perAcquisition(int64(r.Mallocs), len(r.Waits)) //nolint:gosec // a count of allocations fits
}

// RequestsPerAcquisition returns the commands clients sent (round trips,
// a script call counting one) per acquisition, or -1 when not counted.
func (r *Result) RequestsPerAcquisition() float64 {
	if r.Requests < 0 {
		return -1
	}
	return perAcquisition(r.Requests, len(r.Waits))
}

// RoundTripsPerAcquisition returns the client round trips (a command alone
// or a whole pipeline counting one) per acquisition, or -1 when not counted.
func (r *Result) RoundTripsPerAcquisition() float64 {
	if r.RoundTrips < 0 {
		return -1
	}
	return perAcquisition(r.RoundTrips, len(r.Waits))
}

func perAcquisition(n int64, acq int) float64 {
	if acq == 0 {
		return 0
	}
	return float64(n) / float64(acq)
}

// Counter is a go-redis hook that counts the commands a client sends, each
// command of a pipeline counting one, and the round trips, a pipeline
// counting one. Add it to every client of the workers
// (client.AddHook(counter)); clients of another library call [Counter.Add].
// It is safe for concurrent use.
type Counter struct{ n, trips atomic.Int64 }

// Count returns the commands counted so far.
func (c *Counter) Count() int64 { return c.n.Load() }

// RoundTrips returns the round trips counted so far.
func (c *Counter) RoundTrips() int64 { return c.trips.Load() }

// Add counts commands sent together in one round trip (1 for a command
// alone), for clients that are not go-redis clients.
func (c *Counter) Add(commands int) {
	c.n.Add(int64(commands))
	c.trips.Add(1)
}

// DialHook passes dialing on.
func (c *Counter) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook counts one command.
func (c *Counter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.Add(1)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook counts the pipeline's commands.
func (c *Counter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.Add(len(cmds))
		return next(ctx, cmds)
	}
}

// acquisition is one obtain that succeeded.
type acquisition struct{ called, held, released time.Time }

// Run runs the workload of cfg: every worker obtains the lock, holds it for
// cfg.Hold, releases it, and starts again, from the start of the warm-up
// to the end of the measurement. The context given to obtain ends when
// the run ends (its deadline is a minute later). It blocks for Warmup+Duration and a little
// more, while the workers stop. Acquisitions count in the window when
// their obtain returned within it. Cancelling ctx ends the run early with
// ctx's error.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Stats == nil || cfg.Worker == nil {
		return nil, errors.New("contention: Config.Stats and Config.Worker are required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.Hold <= 0 {
		cfg.Hold = time.Millisecond
	}
	if cfg.Warmup <= 0 {
		cfg.Warmup = 500 * time.Millisecond
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 3 * time.Second
	}
	obtains := make([]ObtainFunc, cfg.Workers)
	for i := range obtains {
		var closer func()
		obtains[i], closer = cfg.Worker(i)
		if closer != nil {
			defer closer()
		}
	}

	// Obtain calls get a deadline past the run's end, which wins over a
	// TTL-long bound: a wait is measured however long it is.
	runCtx, stop := context.WithTimeout(ctx, cfg.Warmup+cfg.Duration+time.Minute)
	defer stop()
	var (
		wg      sync.WaitGroup
		acqs    = make([][]acquisition, cfg.Workers)
		errs    atomic.Int64
		lastErr atomic.Value
	)
	for i, obtain := range obtains {
		wg.Go(func() {
			for runCtx.Err() == nil {
				called := time.Now()
				release, err := obtain(runCtx)
				if err != nil {
					if runCtx.Err() == nil {
						errs.Add(1)
						lastErr.Store(err)
					}
					continue
				}
				held := time.Now()
				time.Sleep(cfg.Hold)
				acqs[i] = append(acqs[i], acquisition{called, held, time.Now()})
				if err := release(context.WithoutCancel(runCtx)); err != nil {
					errs.Add(1)
					lastErr.Store(err)
				}
			}
		})
	}

	res := &Result{Name: cfg.Name, Layout: cfg.Layout, Workers: cfg.Workers, Hold: cfg.Hold, Requests: -1, RoundTrips: -1}
	err := func() error {
		if !sleep(ctx, cfg.Warmup) {
			return ctx.Err()
		}
		before, err := commandStats(ctx, cfg.Stats)
		if err != nil {
			return err
		}
		cpu0, err := serverCPU(ctx, cfg.Stats)
		if err != nil {
			return err
		}
		var reqs, trips int64
		if cfg.Requests != nil {
			reqs, trips = cfg.Requests.Count(), cfg.Requests.RoundTrips()
		}
		var mem runtime.MemStats
		runtime.ReadMemStats(&mem)
		mallocs := mem.Mallocs
		start := time.Now()
		pings, err := pingDuring(ctx, cfg.Stats, cfg.Duration)
		if err != nil {
			return err
		}
		end := time.Now()
		runtime.ReadMemStats(&mem)
		res.Mallocs = mem.Mallocs - mallocs
		cpu1, err := serverCPU(ctx, cfg.Stats)
		if err != nil {
			return err
		}
		res.CPU = cpu1 - cpu0
		after, err := commandStats(ctx, cfg.Stats)
		if err != nil {
			return err
		}
		if cfg.Requests != nil {
			res.Requests = cfg.Requests.Count() - reqs
			res.RoundTrips = cfg.Requests.RoundTrips() - trips
		}
		stop()
		wg.Wait()

		res.Elapsed = end.Sub(start)
		res.Ping = quantile(pings, 0.5)
		res.Commands = make(map[string]int64)
		for name, n := range after {
			// Our own INFO and PING are not the workload's.
			if d := n - before[name]; d > 0 && name != "info" && name != "ping" {
				res.Commands[name] = d
			}
		}
		res.PerWorker = make([]int, cfg.Workers)
		for i, list := range acqs {
			for _, a := range list {
				if !a.held.Before(start) && a.held.Before(end) {
					res.PerWorker[i]++
					res.Waits = append(res.Waits, a.held.Sub(a.called))
					res.Holds = append(res.Holds, a.released.Sub(a.held))
				}
			}
		}
		slices.Sort(res.Waits)
		slices.Sort(res.Holds)
		res.Errors = int(errs.Load())
		return nil
	}()
	stop()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	if res.Errors > 0 && len(res.Waits) == 0 {
		return nil, fmt.Errorf("contention: %s: every obtain failed, last: %v", cfg.Name, lastErr.Load())
	}
	return res, nil
}

// PingRoundTrip returns the median of n sequential PINGs on client.
func PingRoundTrip(ctx context.Context, client *redis.Client, n int) (time.Duration, error) {
	rtts := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if err := client.Ping(ctx).Err(); err != nil {
			return 0, err
		}
		rtts = append(rtts, time.Since(t))
	}
	slices.Sort(rtts)
	return quantile(rtts, 0.5), nil
}

// pingDuring pings every 10ms for d and returns the round trips, sorted.
func pingDuring(ctx context.Context, client *redis.Client, d time.Duration) ([]time.Duration, error) {
	var rtts []time.Duration
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		t := time.Now()
		if err := client.Ping(ctx).Err(); err != nil {
			return nil, err
		}
		rtts = append(rtts, time.Since(t))
		if !sleep(ctx, min(10*time.Millisecond, time.Until(end))) {
			return nil, ctx.Err()
		}
	}
	slices.Sort(rtts)
	return rtts, nil
}

// commandStats returns the calls of each command from INFO commandstats
// ("evalsha", "get", "client|setinfo", …).
func commandStats(ctx context.Context, client *redis.Client) (map[string]int64, error) {
	info, err := client.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	stats := make(map[string]int64)
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(field, "calls="); ok {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return nil, fmt.Errorf("contention: INFO commandstats: %q: %w", line, err)
				}
				stats[strings.TrimPrefix(name, "cmdstat_")] = n
			}
		}
	}
	return stats, nil
}

// serverCPU returns the server's used_cpu_user + used_cpu_sys (INFO cpu).
func serverCPU(ctx context.Context, client *redis.Client) (time.Duration, error) {
	info, err := client.Info(ctx, "cpu").Result()
	if err != nil {
		return 0, err
	}
	var sum float64
	for line := range strings.SplitSeq(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (k != "used_cpu_user" && k != "used_cpu_sys") {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("contention: INFO cpu: %q: %w", line, err)
		}
		sum += f
	}
	return time.Duration(sum * float64(time.Second)), nil
}

func quantile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p*float64(len(sorted)-1) + 0.5)
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
