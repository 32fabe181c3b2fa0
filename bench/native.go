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
// SET … IFEQ, DELIFEQ), the server's work per Obtain, Refresh and Release
// of a single-key lock: with scripts (the package-level Obtain, whose locks
// run scripts only) and with plain commands (a Client from redislock.New:
// SET … NX to obtain a free key, and the native commands after it asked
// the server once with HELLO).
type nativeSuite struct {
	addr string
	ops  int // obtains, refreshes and releases measured each way
	log  func(format string, args ...any)
}

// nativeBlocks is how many blocks of operations each way takes, in turns.
const nativeBlocks = 10

func (s *nativeSuite) run(ctx context.Context) ([]nativeRow, error) {
	rdb := redis.NewClient(&redis.Options{Addr: s.addr})
	defer rdb.Close()
	admin := redis.NewClient(&redis.Options{Addr: s.addr})
	defer admin.Close()
	native := redislock.New(rdb)
	ways := []struct {
		name   string
		obtain func(ctx context.Context, key string) (*redislock.Lock, error)
		top    []string
	}{
		{"script", func(ctx context.Context, key string) (*redislock.Lock, error) {
			return redislock.Obtain(ctx, rdb, key, ttl, nil)
		}, []string{"evalsha", "eval"}},
		{"native", func(ctx context.Context, key string) (*redislock.Lock, error) {
			return native.Obtain(ctx, key, ttl, nil)
		}, []string{"set", "delifeq", "delex", "get", "hello", "evalsha", "eval"}},
	}
	per := max(s.ops/nativeBlocks, 1)
	// Refresh: a lock each way, refreshed in blocks that alternate between
	// the ways, after a warm-up (which also asks the server its commands).
	// Obtain and Release: in each block, per free keys obtained, then
	// released after the refreshes. A warm-up lock each way, obtained and
	// released first, loads the scripts.
	refreshLocks := make([]*redislock.Lock, len(ways))
	for i, w := range ways {
		lock, err := w.obtain(ctx, "bench:native:refresh:"+w.name)
		if err != nil {
			return nil, err
		}
		defer func() { _ = lock.Release(context.WithoutCancel(ctx)) }()
		for range 100 {
			if err := lock.Refresh(ctx, ttl, nil); err != nil {
				return nil, fmt.Errorf("%s refresh: %w", w.name, err)
			}
		}
		refreshLocks[i] = lock
		warm, err := w.obtain(ctx, "bench:native:warm-up:"+w.name)
		if err != nil {
			return nil, err
		}
		if err := warm.Release(ctx); err != nil {
			return nil, fmt.Errorf("%s release: %w", w.name, err)
		}
	}
	var obtains, refreshes, releases [2][]serverCost
	locks := make([]*redislock.Lock, per)
	for b := range nativeBlocks {
		for i, w := range ways {
			a, err := readStats(ctx, admin)
			if err != nil {
				return nil, err
			}
			for j := range locks {
				if locks[j], err = w.obtain(ctx, fmt.Sprintf("bench:native:release:%s:%d", w.name, b*per+j)); err != nil {
					return nil, fmt.Errorf("%s obtain: %w", w.name, err)
				}
			}
			z, err := readStats(ctx, admin)
			if err != nil {
				return nil, err
			}
			obtains[i] = append(obtains[i], costBetween(a, z, per, w.top...))
			for range per {
				if err := refreshLocks[i].Refresh(ctx, ttl, nil); err != nil {
					return nil, fmt.Errorf("%s refresh: %w", w.name, err)
				}
			}
			if a, err = readStats(ctx, admin); err != nil {
				return nil, err
			}
			refreshes[i] = append(refreshes[i], costBetween(z, a, per, w.top...))
			for _, l := range locks {
				if err := l.Release(ctx); err != nil {
					return nil, fmt.Errorf("%s release: %w", w.name, err)
				}
			}
			if z, err = readStats(ctx, admin); err != nil {
				return nil, err
			}
			releases[i] = append(releases[i], costBetween(a, z, per, w.top...))
		}
	}
	rows := []nativeRow{
		{Op: "Obtain", Script: meanCost(obtains[0]), Native: meanCost(obtains[1])},
		{Op: "Refresh", Script: meanCost(refreshes[0]), Native: meanCost(refreshes[1])},
		{Op: "Release", Script: meanCost(releases[0]), Native: meanCost(releases[1])},
	}
	for _, r := range rows {
		s.log("  %s: script %v command time, %v CPU (%s); native %v command time, %v CPU (%s)", r.Op,
			r.Script.CommandTime, r.Script.CPU, r.Script.Top, r.Native.CommandTime, r.Native.CPU, r.Native.Top)
	}
	return rows, nil
}

// meanCost returns the mean of costs of equal blocks; Top is the first's.
func meanCost(costs []serverCost) serverCost {
	var m serverCost
	for _, c := range costs {
		m.CPU += c.CPU
		m.CommandTime += c.CommandTime
		m.Commands += c.Commands
	}
	n := len(costs)
	if n == 0 {
		return m
	}
	m.CPU /= time.Duration(n)
	m.CommandTime /= time.Duration(n)
	m.Commands /= float64(n)
	m.Top = costs[0].Top
	return m
}

// writeNative writes the table of workload 8.
func writeNative(w io.Writer, server string, ops int, rows []nativeRow) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## 8. Native commands beside scripts (%s)\n\n", server)
	p("The server's work per operation on one single-key lock, %s operations each way in %d blocks that\n", thousands(ops), nativeBlocks)
	p("alternate between the ways, one goroutine, nothing else on the server: a lock of the package-level\n")
	p("`redislock.Obtain` (scripts only) beside one of a Client from `redislock.New` (SET … NX to obtain a free\n")
	p("key; SET … IFEQ and DELIFEQ after one HELLO). Command time: INFO commandstats usec of the commands the client sent (a script's\n")
	p("includes the commands it calls). Server CPU: INFO cpu (used_cpu_user + used_cpu_sys) over the\n")
	p("operations, reading and answering them included, and whatever else the machine made it wait for.\n\n")
	p("| operation | way | commands sent | commands executed | command time/op | ÷ script | server CPU/op | ÷ script |\n")
	p("|---|---|---|--:|--:|--:|--:|--:|\n")
	for _, r := range rows {
		for _, c := range []struct {
			way  string
			cost serverCost
		}{{"script", r.Script}, {"native", r.Native}} {
			p("| %s | %s | %s | %.1f | %v | %s | %v | %s |\n", r.Op, c.way, c.cost.Top, c.cost.Commands,
				c.cost.CommandTime.Round(10*time.Nanosecond), ratio(float64(c.cost.CommandTime), float64(r.Script.CommandTime)),
				c.cost.CPU.Round(10*time.Nanosecond), ratio(float64(c.cost.CPU), float64(r.Script.CPU)))
		}
	}
	p("\n")
}
