package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/bench/contention"
)

// The contention tables (make bench-contention; go run . -contention MODE):
// this library alone, per retry strategy ("strategies") or beside the
// prototypes of the designs event-driven waiting was chosen from
// ("designs"), 8 and 64 workers on one hot key, each worker with its own
// client and then all sharing one. They print numbers; nothing is checked.

// contentionModes maps the -contention flag to its rows.
var contentionModes = map[string]func() []contentionRow{
	"strategies": strategyRows,
	"designs":    designRows,
}

// contentionRow is one strategy or design: how a worker obtains the lock
// on key through rdb.
type contentionRow struct {
	name   string
	obtain func(rdb redis.UniversalClient, key string) contention.ObtainFunc
}

// strategyRows are this library's retry strategies.
func strategyRows() []contentionRow {
	strategies := []struct {
		name string
		opt  *redislock.Options
	}{
		{"LinearBackoff(10ms)", &redislock.Options{RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)}},
		{"FullJitter(ExponentialBackoff(1ms, 50ms))", &redislock.Options{RetryStrategy: redislock.FullJitter(redislock.ExponentialBackoff(time.Millisecond, 50*time.Millisecond))}},
		{"WaitForRelease", &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}},
	}
	rows := make([]contentionRow, len(strategies))
	for i, s := range strategies {
		rows[i] = contentionRow{name: s.name, obtain: func(rdb redis.UniversalClient, key string) contention.ObtainFunc {
			return oursObtain(redislock.New(rdb), key, s.opt)
		}}
	}
	return rows
}

// oursObtain obtains key with this library's locker and opt, with
// [hotTTL], returning the lock's Release.
func oursObtain(locker *redislock.Client, key string, opt *redislock.Options) contention.ObtainFunc {
	return func(ctx context.Context) (func(context.Context) error, error) {
		lock, err := locker.Obtain(ctx, key, hotTTL, opt)
		if err != nil {
			return nil, err
		}
		return lock.Release, nil
	}
}

// contentionTable runs every row with 8 and 64 workers, each worker with
// its own client and then all sharing one, on the server at addr (whose
// INFO commandstats must see no other traffic); run writes the Markdown
// table to w and returns the results in its order.
type contentionTable struct {
	addr     string
	server   string        // the server's name and version, for the heading
	idle     time.Duration // PING round trip on an idle connection
	duration time.Duration // each row's measurement
	warmup   time.Duration // before each row's measurement; 0: the runner's default
	rows     []contentionRow
	log      func(format string, args ...any)
}

func (c *contentionTable) run(ctx context.Context, w io.Writer) ([]*contention.Result, error) {
	stats := redis.NewClient(&redis.Options{Addr: c.addr})
	defer func() { _ = stats.Close() }()
	var results []*contention.Result
	for _, workers := range []int{8, 64} {
		for _, shared := range []bool{false, true} {
			for _, r := range c.rows {
				res, err := c.runOne(ctx, stats, r, workers, shared)
				if err != nil {
					return nil, fmt.Errorf("%s, %d workers, shared %v: %w", r.name, workers, shared, err)
				}
				if res.Errors > 0 {
					c.log("  %s, %d workers, %s client: %d failed obtain calls", r.name, workers, res.Layout, res.Errors)
				}
				c.log("  %s, %d workers, %s client: %.0f acq/s, p99 %v", r.name, workers, res.Layout, res.Throughput(), contention.Round(res.Wait(0.99)))
				results = append(results, res)
			}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Contention on one key, hold %v, %v per row (%s, GOMAXPROCS=%d). PING round trip on an idle connection, same run: p50 %v.\n\n",
		time.Millisecond, c.duration, c.server, gomaxprocs(), contention.Round(c.idle))
	if err := contention.WriteTable(&b, results); err != nil {
		return nil, err
	}
	b.WriteString("\n")
	for _, r := range results {
		fmt.Fprintf(&b, "- %s, %d workers, %s client: commands %s\n", r.Name, r.Workers, r.Layout, breakdown(r))
	}
	_, err := io.WriteString(w, b.String())
	return results, err
}

func (c *contentionTable) runOne(ctx context.Context, stats *redis.Client, r contentionRow, workers int, shared bool) (*contention.Result, error) {
	key := fmt.Sprintf("bench:contention:%s/%d/%t", r.name, workers, shared)
	counter := &contention.Counter{}
	newClient := func() *redis.Client {
		rdb := redis.NewClient(&redis.Options{Addr: c.addr})
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
	return contention.Run(ctx, contention.Config{
		Name:     r.name,
		Layout:   layout,
		Workers:  workers,
		Hold:     time.Millisecond,
		Duration: c.duration,
		Warmup:   c.warmup,
		Stats:    stats,
		Requests: counter,
		Worker: func(i int) (contention.ObtainFunc, func()) {
			if one != nil {
				return r.obtain(one, key), nil
			}
			rdb := newClient()
			return r.obtain(rdb, key), func() { _ = rdb.Close() }
		},
	})
}

// breakdown lists the commands of r per acquisition, most frequent first.
func breakdown(r *contention.Result) string {
	type entry struct {
		name string
		n    int64
	}
	var es []entry
	for name, n := range r.Commands {
		es = append(es, entry{name, n})
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(b.n, a.n) })
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = fmt.Sprintf("%s %.2f", e.name, float64(e.n)/float64(max(r.Acquisitions(), 1)))
	}
	return strings.Join(parts, ", ")
}
