package redislock_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/redistest"
)

// BenchmarkHandoverScripts measures the server time of the three scripts
// of one handover on a hot key (the release that hands over, the
// attempt that follows the woken waiter's block, the failed attempt that
// registers the releaser again: the requeue attempt in this checkout), for this checkout's scripts and, in the
// same run, for those of the old library (commit 96ede5c, kept in
// testdata/scripts-96ede5c), each in a state built by plain commands
// before it; and, as "registered", this checkout's loop of a releaser
// alone in its process, whose release registers it (release.lua's ARGV[3]):
// two scripts, no registration step. It reports the EVALSHA time of INFO
// commandstats (the script with its commands) per step and per handover
// for each, and the ratios now ÷ 96ede5c and registered ÷ now. Between two script calls the server runs other
// commands (the setup, INFO), so the scripts run with cold caches, as in
// the hot-key loop; one to two no-op scripts at random before each step
// keep Lua's periodic garbage collection from landing on one step. The
// server must see no other traffic.
func BenchmarkHandoverScripts(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	type way struct {
		name            string
		release, obtain *redis.Script
		registers       bool             // the release registers the releaser
		step            [3]time.Duration // release, attempt, registration
	}
	ways := []*way{
		{name: "now",
			release: redis.NewScript(luaSource(b, "lua/lib.lua", "lua/handover.lua", "lua/release.lua")),
			obtain:  redis.NewScript(luaSource(b, "lua/lib.lua", "lua/handover.lua", "lua/obtain.lua"))},
		{name: "96ede5c",
			release: redis.NewScript(luaSource(b, "testdata/scripts-96ede5c/handover.lua", "testdata/scripts-96ede5c/release.lua")),
			obtain:  redis.NewScript(luaSource(b, "testdata/scripts-96ede5c/handover.lua", "testdata/scripts-96ede5c/obtain.lua"))},
		{name: "registered", registers: true,
			release: redis.NewScript(luaSource(b, "lua/lib.lua", "lua/handover.lua", "lua/release.lua")),
			obtain:  redis.NewScript(luaSource(b, "lua/lib.lua", "lua/handover.lua", "lua/obtain.lua"))},
	}
	noop := redis.NewScript("return 0")
	evalsha := func() time.Duration {
		v := redistest.Info(b, rdb, "commandstats", "cmdstat_evalsha")
		for f := range strings.SplitSeq(v, ",") {
			if u, ok := strings.CutPrefix(f, "usec="); ok {
				n, err := strconv.ParseInt(u, 10, 64)
				if err != nil {
					b.Fatalf("commandstats: %q", v)
				}
				return time.Duration(n) * time.Microsecond
			}
		}
		b.Fatalf("commandstats: no usec in %q", v)
		return 0
	}
	k := "{" + redistest.Key(b, "lock") + "}"
	queue, wake := k+":redislock:waiters", k+":redislock:wake"
	grants, other := k+":redislock:grant:w1", k+":redislock:grant:w3"
	must := func(err error) {
		b.Helper()
		if err != nil {
			b.Fatal(err)
		}
	}
	// Load the scripts: every call below is an EVALSHA.
	for _, w := range ways {
		must(w.release.Load(ctx, rdb).Err())
		must(w.obtain.Load(ctx, rdb).Err())
	}
	must(noop.Load(ctx, rdb).Err())
	timed := func(w *way, step int, run func() error) {
		for range 1 + rand.IntN(2) {
			must(noop.EvalSha(ctx, rdb, nil).Err())
		}
		t0 := evalsha()
		must(run())
		w.step[step] += evalsha() - t0
	}
	n := 0
	for b.Loop() {
		for _, i := range rand.Perm(len(ways)) {
			w := ways[i]
			// The holder "tok" releases; waiter w1 is registered.
			must(rdb.Del(ctx, k, queue, wake, grants, other).Err())
			must(rdb.Set(ctx, k, "3:tok:0:", time.Minute).Err())
			must(rdb.ZAdd(ctx, queue, redis.Z{Score: float64(time.Now().Add(time.Minute).UnixMilli()), Member: "w1"}).Err())
			timed(w, 0, func() error {
				if w.registers {
					// It hands over to w1 and registers w3, the releaser's next wait.
					n, err := w.release.EvalSha(ctx, rdb, []string{k, queue, wake, other}, "tok", 100, "w3", 2000).Int64()
					if err == nil && n != 3 {
						b.Fatalf("%s: the release replied %d, want 3 (handed over)", w.name, n)
					}
					return err
				}
				return w.release.EvalSha(ctx, rdb, []string{k, queue, wake}, "tok", 100).Err()
			})
			// w1's block moves the grant to its list (over the placeholder
			// of its registration), and its attempt takes the key.
			must(rdb.RPush(ctx, grants, "~").Err())
			must(rdb.LMove(ctx, wake, grants, "LEFT", "LEFT").Err())
			timed(w, 1, func() error {
				v, err := w.obtain.EvalSha(ctx, rdb, []string{k, queue, wake, grants}, "tok2", "", 60000, "0", "w1", 2000, 100, "", 0).Int64()
				if err == nil && v != 0 {
					b.Fatalf("%s: the woken waiter's attempt replied %d", w.name, v)
				}
				return err
			})
			// The releaser asks again: its first attempt registers it (in
			// this checkout, the requeue attempt, ARGV[10] "2", which the
			// old scripts do not read); registered by its release, it
			// sends no script before its block.
			if w.registers {
				continue
			}
			timed(w, 2, func() error {
				return w.obtain.EvalSha(ctx, rdb, []string{k, queue, wake, other}, "tok3", "", 60000, "0", "w3", 2000, 100, "", 0, "2").Err()
			})
		}
		n++
	}
	var cycle [3]float64
	for i, w := range ways {
		for s, name := range []string{"release", "attempt", "registration"} {
			us := float64(w.step[s].Nanoseconds()) / 1000 / float64(n)
			b.ReportMetric(us, w.name+"-"+name+"-server-µs")
			cycle[i] += us
		}
		b.ReportMetric(cycle[i], w.name+"-handover-server-µs")
	}
	b.ReportMetric(cycle[0]/cycle[1], "now÷96ede5c")
	b.ReportMetric(cycle[2]/cycle[0], "registered÷now")
}
