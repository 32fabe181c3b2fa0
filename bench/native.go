package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// serverStats is what a server reports of its own work: per command, the
// calls and the microseconds spent in them (INFO commandstats, script
// internals counted both in the script and in their own command), and the
// process's CPU time (INFO cpu, used_cpu_user + used_cpu_sys).
type serverStats struct {
	calls map[string]int64
	usec  map[string]int64
	cpu   time.Duration
}

// readStats reads INFO commandstats and cpu of client's server.
func readStats(ctx context.Context, client *redis.Client) (serverStats, error) {
	info, err := client.Info(ctx, "commandstats", "cpu").Result()
	if err != nil {
		return serverStats{}, err
	}
	s := serverStats{calls: map[string]int64{}, usec: map[string]int64{}}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		if name == "used_cpu_user" || name == "used_cpu_sys" {
			sec, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				return serverStats{}, fmt.Errorf("INFO cpu: %q: %w", line, err)
			}
			s.cpu += time.Duration(sec * float64(time.Second))
			continue
		}
		cmd, ok := strings.CutPrefix(name, "cmdstat_")
		if !ok {
			continue
		}
		for field := range strings.SplitSeq(rest, ",") {
			k, v, _ := strings.Cut(field, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			switch k {
			case "calls":
				s.calls[cmd] = n
			case "usec":
				s.usec[cmd] = n
			default:
				continue
			}
			if err != nil {
				return serverStats{}, fmt.Errorf("INFO commandstats: %q: %w", line, err)
			}
		}
	}
	return s, nil
}

// serverCost is the server's work per operation between two readings.
type serverCost struct {
	// CPU is the server process's CPU time per operation: everything it
	// did, reading and answering the commands included.
	CPU time.Duration
	// CommandTime is the time INFO commandstats counts in the top-level commands
	// per operation (the script, or the native commands; INFO excluded).
	CommandTime time.Duration
	// Commands is the commands the server executed per operation, script
	// internals included (INFO excluded).
	Commands float64
	// Top names the top-level commands, with their calls per operation.
	Top string
}

// costBetween returns the server's work per operation from a to b over
// ops operations; top lists the commands that clients sent (not those a
// script called).
func costBetween(a, b serverStats, ops int, top ...string) serverCost {
	per := func(n int64) float64 { return float64(n) / float64(ops) }
	c := serverCost{CPU: (b.cpu - a.cpu) / time.Duration(ops)}
	var usec int64
	var names []string
	for _, name := range top {
		calls := b.calls[name] - a.calls[name]
		if calls == 0 {
			continue
		}
		usec += b.usec[name] - a.usec[name]
		names = append(names, fmt.Sprintf("%s ×%.3g", strings.ToUpper(name), per(calls)))
	}
	c.CommandTime = time.Duration(per(usec) * float64(time.Microsecond))
	c.Top = strings.Join(names, ", ")
	for name, n := range b.calls {
		if name != "info" {
			c.Commands += per(n - a.calls[name])
		}
	}
	return c
}

// nativeRow is one operation measured both ways.
type nativeRow struct {
	Op             string
	Script, Native serverCost
}

// nativeSuite measures, on a server with native commands (Valkey 9.1:
// SET … IFEQ, DELIFEQ), the server's work per Refresh and per Release of a
// single-key lock: with scripts (a lock of the package-level Obtain, which
// runs scripts only) and with the native commands (a lock of a Client from
// redislock.New, which asked the server once with HELLO).
type nativeSuite struct {
	addr string
	ops  int // refreshes and releases measured each way
	log  func(format string, args ...any)
}

func (s *nativeSuite) run(ctx context.Context) ([]nativeRow, error) {
	rdb := redis.NewClient(&redis.Options{Addr: s.addr})
	defer rdb.Close()
	admin := redis.NewClient(&redis.Options{Addr: s.addr})
	defer admin.Close()
	ways := []struct {
		name   string
		obtain func(ctx context.Context, key string) (*redislock.Lock, error)
		top    []string
	}{
		{"script", func(ctx context.Context, key string) (*redislock.Lock, error) {
			return redislock.Obtain(ctx, rdb, key, ttl, nil)
		}, []string{"evalsha", "eval"}},
		{"native", func(ctx context.Context, key string) (*redislock.Lock, error) {
			return redislock.New(rdb).Obtain(ctx, key, ttl, nil)
		}, []string{"set", "delifeq", "delex", "get", "hello", "evalsha", "eval"}},
	}
	rows := []nativeRow{{Op: "Refresh"}, {Op: "Release"}}
	for _, w := range ways {
		// Refresh: one lock, refreshed ops times, after a warm-up that
		// also asks the server its commands.
		lock, err := w.obtain(ctx, "bench:native:refresh:"+w.name)
		if err != nil {
			return nil, err
		}
		for range 100 {
			if err := lock.Refresh(ctx, ttl, nil); err != nil {
				return nil, fmt.Errorf("%s refresh: %w", w.name, err)
			}
		}
		a, err := readStats(ctx, admin)
		if err != nil {
			return nil, err
		}
		for range s.ops {
			if err := lock.Refresh(ctx, ttl, nil); err != nil {
				return nil, fmt.Errorf("%s refresh: %w", w.name, err)
			}
		}
		b, err := readStats(ctx, admin)
		if err != nil {
			return nil, err
		}
		refresh := costBetween(a, b, s.ops, w.top...)
		if err := lock.Release(ctx); err != nil {
			return nil, err
		}

		// Release: ops locks on keys of their own, obtained first (one
		// Client for the native way, which asked once already above).
		var locker *redislock.Client
		if w.name == "native" {
			locker = redislock.New(rdb)
		}
		locks := make([]*redislock.Lock, s.ops+1)
		for i := range locks {
			key := fmt.Sprintf("bench:native:release:%s:%d", w.name, i)
			if locker != nil {
				locks[i], err = locker.Obtain(ctx, key, ttl, nil)
			} else {
				locks[i], err = w.obtain(ctx, key)
			}
			if err != nil {
				return nil, err
			}
		}
		if err := locks[s.ops].Release(ctx); err != nil { // the Client's HELLO, not measured
			return nil, err
		}
		if a, err = readStats(ctx, admin); err != nil {
			return nil, err
		}
		for _, l := range locks[:s.ops] {
			if err := l.Release(ctx); err != nil {
				return nil, fmt.Errorf("%s release: %w", w.name, err)
			}
		}
		if b, err = readStats(ctx, admin); err != nil {
			return nil, err
		}
		release := costBetween(a, b, s.ops, w.top...)
		if w.name == "script" {
			rows[0].Script, rows[1].Script = refresh, release
		} else {
			rows[0].Native, rows[1].Native = refresh, release
		}
		s.log("  %s: refresh %v CPU (%s), release %v CPU (%s)", w.name, refresh.CPU, refresh.Top, release.CPU, release.Top)
	}
	return rows, nil
}

// writeNative writes the table of workload 8.
func writeNative(w io.Writer, server string, ops int, rows []nativeRow) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## 8. Native commands beside scripts (%s)\n\n", server)
	p("The server's work per operation on one single-key lock, %s operations each way, one goroutine, nothing\n", thousands(ops))
	p("else on the server: a lock of the package-level `redislock.Obtain` (scripts only) beside one of a Client\n")
	p("from `redislock.New` (SET … IFEQ and DELIFEQ, after one HELLO). Server CPU: INFO cpu\n")
	p("(used_cpu_user + used_cpu_sys) over the operations, reading and answering them included; command time:\n")
	p("INFO commandstats usec of the commands the client sent.\n\n")
	p("| operation | way | commands sent | commands executed | server CPU/op | command time/op | CPU ÷ script |\n")
	p("|---|---|---|--:|--:|--:|--:|\n")
	for _, r := range rows {
		for _, c := range []struct {
			way  string
			cost serverCost
		}{{"script", r.Script}, {"native", r.Native}} {
			p("| %s | %s | %s | %.1f | %v | %v | %s |\n", r.Op, c.way, c.cost.Top, c.cost.Commands,
				c.cost.CPU.Round(10*time.Nanosecond), c.cost.CommandTime.Round(10*time.Nanosecond), ratio(float64(c.cost.CPU), float64(r.Script.CPU)))
		}
	}
	p("\n")
}
