//go:build contention

// Built only with -tags contention (make bench-contention): these are
// minutes-long measurements, not checks, and stay out of make test.

package contention_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/contention"
	"github.com/redislock/redislock/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// Environment of the contention table (make bench-contention).
const (
	// enableEnv runs the table when set: "1" for the strategies of this
	// module, "designs" for the design candidates of event-driven waiting.
	enableEnv = "REDISLOCK_CONTENTION"
	// addrEnv, when set, is the address of the Redis server to use instead
	// of a private one (its INFO commandstats must not see other traffic).
	addrEnv = "REDISLOCK_CONTENTION_ADDR"
	// durationEnv overrides each row's measurement (a Go duration).
	durationEnv = "REDISLOCK_CONTENTION_DURATION"
	// outEnv names a file to write the Markdown table to, besides stdout.
	outEnv = "REDISLOCK_CONTENTION_OUT"
)

// lockTTL is the TTL of every lock of the table: far above a hold, so
// that no lock expires; waits are bounded by the run, not by the TTL.
const lockTTL = 5 * time.Second

// strategy is one row family: a name and the options of its Obtain calls.
type strategy struct {
	name string
	opt  *redislock.Options
}

func TestContentionTable(t *testing.T) {
	if os.Getenv(enableEnv) != "1" {
		t.Skipf("a few minutes long: set %s=1 (make bench-contention)", enableEnv)
	}
	strategies := []strategy{
		{"LinearBackoff(10ms)", &redislock.Options{RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)}},
		{"FullJitter(ExponentialBackoff(1ms, 50ms))", &redislock.Options{RetryStrategy: redislock.FullJitter(redislock.ExponentialBackoff(time.Millisecond, 50*time.Millisecond))}},
		{"WaitForRelease", &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}},
	}
	var rows []row
	for _, s := range strategies {
		rows = append(rows, row{name: s.name, obtain: func(rdb redis.UniversalClient, key string) contention.ObtainFunc {
			locker := redislock.New(rdb)
			return func(ctx context.Context) (func(context.Context) error, error) {
				lock, err := locker.Obtain(ctx, key, lockTTL, s.opt)
				if err != nil {
					return nil, err
				}
				return lock.Release, nil
			}
		}})
	}
	runTable(t, rows)
}

// row is one strategy or design: how a worker obtains the lock on key
// through rdb.
type row struct {
	name   string
	obtain func(rdb redis.UniversalClient, key string) contention.ObtainFunc
}

// runTable runs every row with 8 and 64 workers, each worker with its own
// client and then all sharing one, and prints the Markdown table.
func runTable(t *testing.T, rows []row) {
	ctx := context.Background()
	duration := 3 * time.Second
	if v := os.Getenv(durationEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s: %v", durationEnv, err)
		}
		duration = d
	}
	opts := &redis.Options{Addr: os.Getenv(addrEnv)}
	if opts.Addr == "" {
		opts = redistest.NewServer(t, redistest.Redis).Options()
	}
	stats := redis.NewClient(opts)
	defer stats.Close()
	idle, err := contention.PingRoundTrip(ctx, stats, 2000)
	if err != nil {
		t.Fatal(err)
	}

	var results []*contention.Result
	for _, workers := range []int{8, 64} {
		for _, shared := range []bool{false, true} {
			for _, r := range rows {
				key := redistest.Key(t, fmt.Sprintf("%s/%d/%t", r.name, workers, shared))
				counter := &contention.Counter{}
				newClient := func() *redis.Client {
					c := redis.NewClient(opts)
					c.AddHook(counter)
					return c
				}
				layout := "own"
				var one *redis.Client
				if shared {
					layout = "shared"
					one = newClient()
				}
				res, err := contention.Run(ctx, contention.Config{
					Name:     r.name,
					Layout:   layout,
					Workers:  workers,
					Hold:     time.Millisecond,
					Duration: duration,
					Stats:    stats,
					Requests: counter,
					Worker: func(i int) (contention.ObtainFunc, func()) {
						if one != nil {
							return r.obtain(one, key), nil
						}
						c := newClient()
						return r.obtain(c, key), func() { c.Close() }
					},
				})
				if one != nil {
					one.Close()
				}
				if err != nil {
					t.Fatalf("%s, %d workers, %s client: %v", r.name, workers, layout, err)
				}
				if res.Errors > 0 {
					t.Logf("%s, %d workers, %s client: %d failed obtain calls", r.name, workers, layout, res.Errors)
				}
				results = append(results, res)
				t.Logf("%s, %d workers, %s client: %.0f acq/s, p99 %v", r.name, workers, layout, res.Throughput(), contention.Round(res.Wait(0.99)))
			}
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "Contention on one key, hold %v, %v per row (%s, GOMAXPROCS=%d). PING round trip on an idle connection, same run: p50 %v.\n\n",
		time.Millisecond, duration, serverVersion(ctx, stats), runtimeProcs(), contention.Round(idle))
	if err := contention.WriteTable(&b, results); err != nil {
		t.Fatal(err)
	}
	b.WriteString("\n")
	for _, r := range results {
		fmt.Fprintf(&b, "- %s, %d workers, %s client: commands %s\n", r.Name, r.Workers, r.Layout, breakdown(r))
	}
	fmt.Print("\n" + b.String())
	if out := os.Getenv(outEnv); out != "" {
		if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
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

func serverVersion(ctx context.Context, c *redis.Client) string {
	info, err := c.Info(ctx, "server").Result()
	if err != nil {
		return "unknown server"
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			return "Redis " + v
		}
	}
	return "unknown server"
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }
