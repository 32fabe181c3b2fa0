// Command sidebyside measures WaitForRelease on one hot key with the
// runner of bench/contention, for the side-by-side check of two builds of
// the library (scripts/sidebyside.sh builds this program against an old
// commit and against the working tree, and runs the builds in turns on
// one redis-server).
//
// One run appends a JSON line per configuration (8 and 64 workers, a
// client each or one shared client) to -out:
//
//	sidebyside -addr 127.0.0.1:PORT -label new -out rows.jsonl
//	sidebyside -addr 127.0.0.1:PORT -label peers -peers -out rows.jsonl
//
// -peers measures bsm/redislock and redsync instead, each waiting as
// bench/ does (make bench); -summary FILE prints the medians of the rows
// of FILE as a Markdown table, with the ratios of each label to the first
// one.
package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	bsm "github.com/bsm/redislock"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/bench/contention"
)

// lockTTL is far above a hold: no lock expires during a run.
const lockTTL = 5 * time.Second

// row is what one run of one configuration measured, as written to -out.
type row struct {
	Label    string             `json:"label"`
	Library  string             `json:"library"`
	Workers  int                `json:"workers"`
	Layout   string             `json:"layout"`
	AcqPerS  float64            `json:"acq_per_s"`
	P50      time.Duration      `json:"p50"`
	P99      time.Duration      `json:"p99"`
	Max      time.Duration      `json:"max"`
	Fair     time.Duration      `json:"fair_bound"`
	Commands float64            `json:"commands_per_acq"`
	Requests float64            `json:"requests_per_acq"`
	Trips    float64            `json:"round_trips_per_acq"`
	CPU      time.Duration      `json:"redis_cpu_per_acq"`
	Mallocs  float64            `json:"allocs_per_acq"`
	Errors   int                `json:"errors"`
	PerCmd   map[string]float64 `json:"per_command"`
}

func main() {
	addr := flag.String("addr", "", "address of the redis-server (no other traffic)")
	label := flag.String("label", "new", "label of this build in the table")
	peers := flag.Bool("peers", false, "measure bsm/redislock and redsync instead of this library")
	duration := flag.Duration("duration", 3*time.Second, "measurement of each configuration (after 500 ms of warm-up)")
	out := flag.String("out", "", "file to append the rows to (JSON lines)")
	summary := flag.String("summary", "", "print the table of the rows in this file and exit")
	memprofile := flag.String("memprofile", "", "write an allocation profile of the run to this file")
	flag.Parse()
	if *memprofile != "" {
		runtime.MemProfileRate = 512
	}
	var err error
	if *summary != "" {
		err = summarize(*summary, os.Stdout)
	} else {
		err = measure(context.Background(), *addr, *label, *peers, *duration, *out)
	}
	if *memprofile != "" {
		writeProfile(*memprofile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sidebyside:", err)
		os.Exit(1)
	}
}

// writeProfile writes the allocation profile to file.
func writeProfile(file string) {
	f, err := os.Create(file) //nolint:gosec // a file named on the command line
	if err != nil {
		fmt.Fprintln(os.Stderr, "sidebyside:", err)
		return
	}
	defer func() { _ = f.Close() }()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		fmt.Fprintln(os.Stderr, "sidebyside:", err)
	}
}

// waiter is a library as the hot-key workload uses it: obtain returns
// the worker's obtain function over rdb.
type waiter struct {
	name   string
	obtain func(rdb *redis.Client, key string) contention.ObtainFunc
}

func ours() waiter {
	opt := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}
	return waiter{"redislock WaitForRelease", func(rdb *redis.Client, key string) contention.ObtainFunc {
		locker := redislock.New(rdb)
		return func(ctx context.Context) (func(context.Context) error, error) {
			lock, err := locker.Obtain(ctx, key, lockTTL, opt)
			if err != nil {
				return nil, err
			}
			return lock.Release, nil
		}
	}}
}

// thePeers wait as bench/ makes them wait: bsm/redislock with the retry of
// its README, called again when it gives up; redsync with its defaults,
// called again on failure.
func thePeers() []waiter {
	return []waiter{
		{"bsm/redislock", func(rdb *redis.Client, key string) contention.ObtainFunc {
			locker := bsm.New(rdb)
			return func(ctx context.Context) (func(context.Context) error, error) {
				for {
					// bsm's strategies count across calls: one per call.
					opt := &bsm.Options{RetryStrategy: bsm.LimitRetry(bsm.LinearBackoff(100*time.Millisecond), 3)}
					lock, err := locker.Obtain(ctx, key, lockTTL, opt)
					switch {
					case err == nil:
						return lock.Release, nil
					case !errors.Is(err, bsm.ErrNotObtained) || ctx.Err() != nil:
						return nil, err
					}
				}
			}
		}},
		{"redsync", func(rdb *redis.Client, key string) contention.ObtainFunc {
			rs := redsync.New(goredis.NewPool(rdb))
			return func(ctx context.Context) (func(context.Context) error, error) {
				for {
					m := rs.NewMutex(key) // its default expiry (8 s) is above every hold
					if err := m.LockContext(ctx); err != nil {
						if ctx.Err() != nil {
							return nil, err
						}
						continue
					}
					return func(ctx context.Context) error {
						_, err := m.UnlockContext(ctx)
						return err
					}, nil
				}
			}
		}},
	}
}

func measure(ctx context.Context, addr, label string, peers bool, d time.Duration, out string) error {
	if addr == "" || out == "" {
		return errors.New("-addr and -out are required")
	}
	libs := []waiter{ours()}
	if peers {
		libs = thePeers()
	}
	stats := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = stats.Close() }()
	f, err := os.OpenFile(out, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644) //nolint:gosec // results to read
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	for _, workers := range []int{8, 64} {
		for _, shared := range []bool{false, true} {
			for _, lib := range libs {
				r, err := runOne(ctx, stats, addr, lib, workers, shared, d)
				if err != nil {
					return fmt.Errorf("%s, %d workers, shared %v: %w", lib.name, workers, shared, err)
				}
				r.Label = label
				b, err := json.Marshal(r)
				if err != nil {
					return err
				}
				if _, err := f.Write(append(b, '\n')); err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "%s %s %d %s: %.0f acq/s, p99 %v, %.1f commands, Redis CPU %v, %.1f allocs per acquisition\n",
					label, lib.name, workers, r.Layout, r.AcqPerS, contention.Round(r.P99), r.Commands, contention.Round(r.CPU), r.Mallocs)
			}
		}
	}
	return nil
}

func runOne(ctx context.Context, stats *redis.Client, addr string, lib waiter, workers int, shared bool, d time.Duration) (row, error) {
	key := fmt.Sprintf("sidebyside:{%s}:%d:%t:%d", lib.name, workers, shared, time.Now().UnixNano())
	counter := &contention.Counter{}
	newClient := func() *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: addr})
		rdb.AddHook(counter)
		return rdb
	}
	layout := "own"
	var one *redis.Client
	if shared {
		layout = "shared"
		one = newClient()
		defer func() { _ = one.Close() }()
	}
	res, err := contention.Run(ctx, contention.Config{
		Name: lib.name, Layout: layout, Workers: workers, Hold: time.Millisecond,
		Duration: d, Stats: stats, Requests: counter,
		Worker: func(int) (contention.ObtainFunc, func()) {
			if one != nil {
				return lib.obtain(one, key), nil
			}
			rdb := newClient()
			return lib.obtain(rdb, key), func() { _ = rdb.Close() }
		},
	})
	if err != nil {
		return row{}, err
	}
	per := make(map[string]float64, len(res.Commands))
	for name, n := range res.Commands {
		per[name] = float64(n) / float64(max(res.Acquisitions(), 1))
	}
	return row{
		Library: lib.name, Workers: workers, Layout: layout,
		AcqPerS: res.Throughput(), P50: res.Wait(0.5), P99: res.Wait(0.99), Max: res.MaxWait(), Fair: res.FairBound(),
		Commands: res.CommandsPerAcquisition(), Requests: res.RequestsPerAcquisition(), Trips: res.RoundTripsPerAcquisition(),
		CPU: res.CPUPerAcquisition(), Mallocs: res.MallocsPerAcquisition(), Errors: res.Errors, PerCmd: per,
	}, nil
}

// summarize prints the medians over the rows of file, per configuration
// and build (label) or peer, with the ratio of each to the first label's
// (the old build, in scripts/sidebyside.sh's order).
func summarize(file string, w io.Writer) error {
	f, err := os.Open(file) //nolint:gosec // a file named on the command line
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	type group struct {
		name string // label, or the peer's name
		rows []row
	}
	type config struct {
		workers int
		layout  string
	}
	groups := map[config][]*group{}
	var configs []config
	var labels []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return err
		}
		name := r.Label
		if !strings.HasPrefix(r.Library, "redislock") {
			name = r.Library
		}
		if !slices.Contains(labels, name) {
			labels = append(labels, name)
		}
		c := config{r.Workers, r.Layout}
		if _, ok := groups[c]; !ok {
			configs = append(configs, c)
		}
		i := slices.IndexFunc(groups[c], func(g *group) bool { return g.name == name })
		if i < 0 {
			groups[c] = append(groups[c], &group{name: name})
			i = len(groups[c]) - 1
		}
		groups[c][i].rows = append(groups[c][i].rows, r)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	fmt.Fprintln(w, "| workers | clients | build | runs | acq/s | ÷ first | wait p99 | p99 ÷ fair bound | wait max | commands/acq | round trips/acq | Redis CPU/acq | ÷ first | allocs/acq |")
	fmt.Fprintln(w, "|--:|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, c := range configs {
		gs := groups[c]
		slices.SortFunc(gs, func(a, b *group) int { return cmp.Compare(slices.Index(labels, a.name), slices.Index(labels, b.name)) })
		var firstAcq, firstCPU float64
		for i, g := range gs {
			acq := median(g.rows, func(r row) float64 { return r.AcqPerS })
			cpu := median(g.rows, func(r row) float64 { return float64(r.CPU) })
			if i == 0 {
				firstAcq, firstCPU = acq, cpu
			}
			fmt.Fprintf(w, "| %d | %s | %s | %d | %.0f | %.2f | %v | %.2f | %v | %.1f | %.2f | %v | %.2f | %.1f |\n",
				c.workers, c.layout, g.name, len(g.rows), acq, acq/firstAcq,
				contention.Round(time.Duration(median(g.rows, func(r row) float64 { return float64(r.P99) }))),
				median(g.rows, func(r row) float64 { return float64(r.P99) / float64(r.Fair) }),
				contention.Round(time.Duration(median(g.rows, func(r row) float64 { return float64(r.Max) }))),
				median(g.rows, func(r row) float64 { return r.Commands }),
				median(g.rows, func(r row) float64 { return r.Trips }),
				contention.Round(time.Duration(cpu)), cpu/firstCPU,
				median(g.rows, func(r row) float64 { return r.Mallocs }))
		}
	}
	return nil
}

// median returns the median of f over rows.
func median(rows []row, f func(row) float64) float64 {
	v := make([]float64, len(rows))
	for i, r := range rows {
		v[i] = f(r)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
