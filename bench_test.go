package redislock_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// The floor each benchmark is compared with: the same atomic work as plain
// go-redis script calls, with a fixed token and no library around them.
var (
	rawObtain    = redis.NewScript(`return redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2])`)
	rawRelease   = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0`)
	rawRefresh   = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PEXPIRE", KEYS[1], ARGV[2]) end return 0`)
	rawObtainInt = redis.NewScript(`if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return 1 end return 0`)
	rawTTL       = redis.NewScript(`if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("PTTL", KEYS[1]) end return 0`)
)

const rawToken = "0123456789abcdefghijkl"

// serverCPU reports, as the metric server-µs/op, the CPU time the server
// behind rdb spent per operation of the benchmark (INFO cpu,
// used_cpu_user + used_cpu_sys), from the call until the benchmark ends:
// call it after the setup. The server must see no other traffic.
func serverCPU(b *testing.B, rdb *redis.Client) {
	b.Helper()
	read := func() float64 {
		info := redistest.Info(b, rdb, "cpu", "used_cpu_user")
		sys := redistest.Info(b, rdb, "cpu", "used_cpu_sys")
		u, err1 := strconv.ParseFloat(info, 64)
		s, err2 := strconv.ParseFloat(sys, 64)
		if err1 != nil || err2 != nil {
			b.Fatalf("INFO cpu: %q, %q", info, sys)
		}
		return u + s
	}
	start := read()
	b.Cleanup(func() {
		if b.N > 0 {
			b.ReportMetric((read()-start)*1e6/float64(b.N), "server-µs/op")
		}
	})
}

// Run with: go test -run '^$' -bench . -benchmem
func BenchmarkObtainRelease(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	b.Run("redislock", func(b *testing.B) {
		key := redistest.Key(b, "lock")
		locker := redislock.New(rdb)
		serverCPU(b, rdb)
		for b.Loop() {
			lock, err := locker.Obtain(ctx, key, time.Minute, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := lock.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("redislock-fenced", func(b *testing.B) {
		key := redistest.Key(b, "lock")
		opt := &redislock.Options{FenceKey: redistest.Key(b, "fence")}
		locker := redislock.New(rdb)
		serverCPU(b, rdb)
		for b.Loop() {
			lock, err := locker.Obtain(ctx, key, time.Minute, opt)
			if err != nil {
				b.Fatal(err)
			}
			if err := lock.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-go-redis", func(b *testing.B) {
		keys := []string{redistest.Key(b, "lock")}
		serverCPU(b, rdb)
		for b.Loop() {
			if err := rawObtain.Run(ctx, rdb, keys, rawToken, 60000).Err(); err != nil {
				b.Fatal(err)
			}
			if n, err := rawRelease.Run(ctx, rdb, keys, rawToken).Int64(); err != nil || n != 1 {
				b.Fatal(n, err)
			}
		}
	})
}

func BenchmarkObtainHeld(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	key := redistest.Key(b, "held")
	held, err := redislock.Obtain(ctx, rdb, key, time.Hour, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer held.Release(ctx)
	b.Run("redislock", func(b *testing.B) {
		locker := redislock.New(rdb)
		for b.Loop() {
			if _, err := locker.Obtain(ctx, key, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-go-redis", func(b *testing.B) {
		keys := []string{key}
		for b.Loop() {
			if err := rawObtain.Run(ctx, rdb, keys, rawToken, 60000).Err(); !errors.Is(err, redis.Nil) {
				b.Fatal(err)
			}
		}
	})
	// The floor of a failed obtain of this library's shape: the same four
	// arguments, an integer reply (no redis.Nil error to build).
	b.Run("raw-go-redis-int", func(b *testing.B) {
		keys := []string{key}
		for b.Loop() {
			if n, err := rawObtainInt.Run(ctx, rdb, keys, rawToken, "", 60000, "0").Int64(); err != nil || n != 0 {
				b.Fatal(n, err)
			}
		}
	})
}

func BenchmarkRefresh(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	b.Run("redislock", func(b *testing.B) {
		lock, err := redislock.Obtain(ctx, rdb, redistest.Key(b, "lock"), time.Minute, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer lock.Release(ctx)
		for b.Loop() {
			if err := lock.Refresh(ctx, time.Minute, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-go-redis", func(b *testing.B) {
		keys := []string{redistest.Key(b, "lock")}
		if err := rawObtain.Run(ctx, rdb, keys, rawToken, 60000).Err(); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if n, err := rawRefresh.Run(ctx, rdb, keys, rawToken, 60000).Int64(); err != nil || n != 1 {
				b.Fatal(n, err)
			}
		}
	})
}

func BenchmarkTTL(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	b.Run("redislock", func(b *testing.B) {
		lock, err := redislock.Obtain(ctx, rdb, redistest.Key(b, "lock"), time.Minute, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer lock.Release(ctx)
		for b.Loop() {
			if ttl, err := lock.TTL(ctx); err != nil || ttl <= 0 {
				b.Fatal(ttl, err)
			}
		}
	})
	b.Run("raw-go-redis", func(b *testing.B) {
		keys := []string{redistest.Key(b, "lock")}
		if err := rawObtain.Run(ctx, rdb, keys, rawToken, 60000).Err(); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if ms, err := rawTTL.Run(ctx, rdb, keys, rawToken).Int64(); err != nil || ms <= 0 {
				b.Fatal(ms, err)
			}
		}
	})
}

// BenchmarkFencedObtainScript sets the fenced obtain of v0.1.0 (GET
// counter, TIME, SET in the script, redis.sha1hex for the tag; the script
// is testdata/obtain-v0.1.0.lua) beside the current one, the current one
// unfenced, and the floor's SET NX, as plain go-redis script calls of one
// key each followed by the same release, in blocks of 100 pairs that
// alternate, so that all meet the same machine. It reports each one's wall
// time, the server's CPU time (INFO cpu) and the time Redis spent in the
// two scripts (INFO commandstats) per pair.
func BenchmarkFencedObtainScript(b *testing.B) {
	rdb := redistest.Standalone(b)
	ctx := context.Background()
	release := redis.NewScript(`if string.sub(redis.call("GET", KEYS[1]) or "", 1, 26) == "22:" .. ARGV[1] .. ":" then return redis.call("DEL", KEYS[1]) end return 0`)
	now := redis.NewScript(luaSource(b, "lua/lib.lua", "lua/handover.lua", "lua/obtain.lua"))
	ways := []struct {
		name   string
		script *redis.Script
		fenced any
	}{
		{"floor", redis.NewScript(`return redis.call("SET", KEYS[1], "22:" .. ARGV[1] .. ":0:", "NX", "PX", ARGV[3]) and 0`), "0"},
		{"unfenced", now, "0"},
		{"fenced-v0.1.0", redis.NewScript(luaSource(b, "lua/lib.lua", "lua/handover.lua", "testdata/obtain-v0.1.0.lua")), "1"},
		{"fenced", now, "212e1d38"}, // the tag of "fence"
	}
	cpu := func() time.Duration {
		u, err1 := strconv.ParseFloat(redistest.Info(b, rdb, "cpu", "used_cpu_user"), 64)
		s, err2 := strconv.ParseFloat(redistest.Info(b, rdb, "cpu", "used_cpu_sys"), 64)
		if err1 != nil || err2 != nil {
			b.Fatal("INFO cpu")
		}
		return time.Duration((u + s) * float64(time.Second))
	}
	// The time Redis spent in the scripts (INFO commandstats), reading and
	// answering them aside.
	scripts := func() time.Duration {
		stat := redistest.Info(b, rdb, "commandstats", "cmdstat_evalsha")
		if stat == "" {
			return 0 // none ran yet
		}
		for f := range strings.SplitSeq(stat, ",") {
			if v, ok := strings.CutPrefix(f, "usec="); ok {
				us, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					b.Fatal("INFO commandstats:", f)
				}
				return time.Duration(us) * time.Microsecond
			}
		}
		b.Fatal("INFO commandstats: no evalsha usec")
		return 0
	}
	keys := []string{redistest.Key(b, "lock"), redistest.Key(b, "fence")}
	var wall, server, script [4]time.Duration
	n := 0
	for b.Loop() {
		for i, w := range ways {
			c0, s0, t0 := cpu(), scripts(), time.Now()
			k := keys
			if w.fenced == "0" {
				k = keys[:1]
			}
			for range 100 {
				if err := w.script.Run(ctx, rdb, k, rawToken, "", 60000, w.fenced).Err(); err != nil {
					b.Fatal(w.name, err)
				}
				if n, err := release.Run(ctx, rdb, keys[:1], rawToken).Int64(); err != nil || n != 1 {
					b.Fatal(w.name, n, err)
				}
			}
			wall[i] += time.Since(t0)
			server[i] += cpu() - c0
			script[i] += scripts() - s0
		}
		n += 100
	}
	for i, w := range ways {
		b.ReportMetric(float64(wall[i].Microseconds())/float64(n), w.name+"-µs/op")
		b.ReportMetric(float64(server[i].Nanoseconds())/1000/float64(n), w.name+"-server-µs/op")
		b.ReportMetric(float64(script[i].Nanoseconds())/1000/float64(n), w.name+"-script-µs/op")
	}
}
