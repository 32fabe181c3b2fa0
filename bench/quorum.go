package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncpool "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/bench/contention"
)

// Workload 9 (issue 35): Obtain+Release of one lock on N independent
// masters, this library's Quorum (unfenced, and with a FenceKey) beside
// redsync's Redlock (redsync.New with one goredis/v9 pool per master) on
// the same servers, one goroutine, in turns as in workload 1; beside them
// the floor of any protocol of two rounds: a PING to every master at
// once, twice.

// quorumMaxTTL is the MaxTTL of the quorums, and their locks' TTL. A
// master without persistence takes nothing until it has been up that long
// (plus a second: INFO counts whole seconds), so the servers are started
// first (quorumMasters) and waited for (waitUp).
const quorumMaxTTL = time.Second

// quorumSizes are the numbers of masters measured.
var quorumSizes = []int{3, 5}

// quorumRow is one library on N masters.
type quorumRow struct {
	Name        string
	N           int
	NsPerOp     float64
	AllocsPerOp float64
	BytesPerOp  float64
	// Rounds is the most commands one master received per operation:
	// each round goes to every master at once, so these are the
	// operation's round trips one after another.
	Rounds float64
	// Commands is the commands of all masters together per operation.
	Commands float64
	// ServerCPU is the CPU time of all masters together per operation
	// (INFO cpu around the counted operations), and CommandTime the time
	// INFO commandstats counts in the commands clients sent (scripts
	// whole, SET, PING), both per operation.
	ServerCPU, CommandTime time.Duration
	IsFloor                bool
	IsRedsync              bool
	IsFenced               bool
}

// quorumLib is one way of taking a lock on a quorum.
type quorumLib struct {
	name           string
	floor, redsync bool
	fenced         bool
	// build returns the Obtain+Release of one lock on key over clients,
	// one client per master.
	build func(clients []*redis.Client, key string) (func(context.Context) error, error)
}

func quorumLibs() []quorumLib {
	return []quorumLib{
		{name: "floor: PING every master, twice", floor: true, build: func(clients []*redis.Client, _ string) (func(context.Context) error, error) {
			round := func(ctx context.Context) error {
				errs := make([]error, len(clients))
				var wg sync.WaitGroup
				for i, c := range clients {
					wg.Go(func() { errs[i] = c.Ping(ctx).Err() })
				}
				wg.Wait()
				return errors.Join(errs...)
			}
			return func(ctx context.Context) error {
				if err := round(ctx); err != nil {
					return err
				}
				return round(ctx)
			}, nil
		}},
		{name: "redsync (Redlock)", redsync: true, build: func(clients []*redis.Client, key string) (func(context.Context) error, error) {
			pools := make([]redsyncpool.Pool, len(clients))
			for i, c := range clients {
				pools[i] = goredis.NewPool(c)
			}
			rs := redsync.New(pools...)
			return func(ctx context.Context) error {
				m := rs.NewMutex(key)
				if err := m.TryLockContext(ctx); err != nil {
					return err
				}
				if ok, err := m.UnlockContext(ctx); err != nil {
					return fmt.Errorf("unlock: %w", err)
				} else if !ok {
					return errors.New("unlock: not held")
				}
				return nil
			}, nil
		}},
		{name: "redislock Quorum", build: ourQuorum(false)},
		{name: "redislock Quorum, FenceKey", fenced: true, build: ourQuorum(true)},
	}
}

// ourQuorum builds the Obtain+Release of this library's Quorum, fenced or
// not (one fence key for every acquisition: the uncontended case).
func ourQuorum(fenced bool) func(clients []*redis.Client, key string) (func(context.Context) error, error) {
	return func(clients []*redis.Client, key string) (func(context.Context) error, error) {
		rc := make([]redislock.RedisClient, len(clients))
		for i, c := range clients {
			rc[i] = c
		}
		q, err := redislock.NewQuorum(rc, &redislock.QuorumOptions{MaxTTL: quorumMaxTTL})
		if err != nil {
			return nil, err
		}
		var opt *redislock.Options
		if fenced {
			opt = &redislock.Options{FenceKey: key + ":fence"}
		}
		return func(ctx context.Context) error {
			lock, err := q.Obtain(ctx, key, quorumMaxTTL, opt)
			if err != nil {
				return err
			}
			return lock.Release(ctx)
		}, nil
	}
}

// quorumSuite runs workload 9 on the masters at addrs (at least the
// largest of quorumSizes).
type quorumSuite struct {
	addrs []string
	total time.Duration // the turns of each N
	log   func(format string, args ...any)
}

// waitUp waits until every master has been up long enough to take locks
// (quorumMaxTTL plus a second of uptime_in_seconds), for at most 30 s.
func waitUp(ctx context.Context, addrs []string) error {
	need := int64(quorumMaxTTL/time.Second) + 2
	deadline := time.Now().Add(30 * time.Second)
	for _, addr := range addrs {
		c := redis.NewClient(&redis.Options{Addr: addr})
		for {
			info, err := c.Info(ctx, "server").Result()
			if err != nil {
				_ = c.Close()
				return err
			}
			up := int64(0)
			for line := range strings.Lines(info) {
				if v, ok := strings.CutPrefix(strings.TrimSpace(line), "uptime_in_seconds:"); ok {
					up, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			if up >= need {
				break
			}
			if time.Now().After(deadline) {
				_ = c.Close()
				return fmt.Errorf("%s: up for %d s after 30 s", addr, up)
			}
			time.Sleep(100 * time.Millisecond) // the next look at its uptime
		}
		_ = c.Close()
	}
	return nil
}

// run returns the rows of every library, for each N in quorumSizes. The
// masters must take locks already (waitUp, or persistence).
func (s *quorumSuite) run(ctx context.Context) ([]quorumRow, error) {
	libs := quorumLibs()
	var rows []quorumRow
	admins := make([]*redis.Client, len(s.addrs))
	for i, a := range s.addrs {
		admins[i] = newGoRedis(a, nil)
		defer admins[i].Close()
	}
	for _, n := range quorumSizes {
		addrs := s.addrs[:n]
		ops := make([]op, len(libs))
		block := make([]quorumRow, len(libs))
		for i, lib := range libs {
			key := fmt.Sprintf("bench:quorum:%d:%d", n, i)
			block[i] = quorumRow{Name: lib.name, N: n, IsFloor: lib.floor, IsRedsync: lib.redsync, IsFenced: lib.fenced}

			// Round trips and commands, on clients that count them.
			counters := make([]*contention.Counter, n)
			counted := make([]*redis.Client, n)
			for j, a := range addrs {
				counters[j] = &contention.Counter{}
				counted[j] = newGoRedis(a, counters[j])
				defer counted[j].Close()
			}
			f, err := lib.build(counted, key)
			if err != nil {
				return nil, fmt.Errorf("%s on %d masters: %w", lib.name, n, err)
			}
			if err := f(ctx); err != nil { // scripts loaded, fence counters made
				return nil, fmt.Errorf("%s on %d masters: %w", lib.name, n, err)
			}
			before := make([]int64, n)
			for j, c := range counters {
				before[j] = c.Count()
			}
			stats, err := readAllStats(ctx, admins[:n])
			if err != nil {
				return nil, err
			}
			for range countedOps {
				if err := f(ctx); err != nil {
					return nil, fmt.Errorf("%s on %d masters: %w", lib.name, n, err)
				}
			}
			after, err := readAllStats(ctx, admins[:n])
			if err != nil {
				return nil, err
			}
			var most, all int64
			for j, c := range counters {
				d := c.Count() - before[j]
				most, all = max(most, d), all+d
				cost := costBetween(stats[j], after[j], countedOps, clientCommands...)
				block[i].ServerCPU += cost.CPU
				block[i].CommandTime += cost.CommandTime
			}
			block[i].Rounds, block[i].Commands = float64(most)/countedOps, float64(all)/countedOps

			timed := make([]*redis.Client, n)
			for j, a := range addrs {
				timed[j] = newGoRedis(a, nil)
				defer timed[j].Close()
			}
			g, err := lib.build(timed, key)
			if err != nil {
				return nil, err
			}
			ops[i] = func(int) func(context.Context) error { return g }
			a, err := allocations(1, ops[i])
			if err != nil {
				return nil, fmt.Errorf("%s on %d masters: %w", lib.name, n, err)
			}
			block[i].AllocsPerOp, block[i].BytesPerOp = a.AllocsPerOp, a.BytesPerOp
		}
		times, err := interleave(1, ops, 0, s.total)
		if err != nil {
			return nil, fmt.Errorf("%d masters: %w", n, err)
		}
		for i := range block {
			block[i].NsPerOp = times[i]
			r := block[i]
			s.log("  %d masters, %s: %.0f ns/op, %.1f allocs/op, %.2f round trips, %.1f commands, Redis CPU %s µs, command time %s µs", n, r.Name, r.NsPerOp, r.AllocsPerOp, r.Rounds, r.Commands, us(r.ServerCPU), us(r.CommandTime))
		}
		rows = append(rows, block...)
	}
	return rows, nil
}

// readAllStats reads INFO commandstats and cpu of every admin's server.
func readAllStats(ctx context.Context, admins []*redis.Client) ([]serverStats, error) {
	out := make([]serverStats, len(admins))
	for i, a := range admins {
		var err error
		if out[i], err = readStats(ctx, a); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// quorumTarget is one of issue 35's targets, evaluated on one N.
type quorumTarget struct {
	Name, Detail string
	Met          bool
}

// quorumTargets evaluates issue 35's targets on rows: unfenced at or
// below redsync's time; fenced within one round trip of redsync's; fenced
// at redsync's time (within 5%, this machine's noise between turns)
// uncontended.
func quorumTargets(rows []quorumRow) []quorumTarget {
	var out []quorumTarget
	for _, n := range quorumSizes {
		var rs, plain, fenced *quorumRow
		for i := range rows {
			r := &rows[i]
			switch {
			case r.N != n || r.IsFloor:
			case r.IsRedsync:
				rs = r
			case r.IsFenced:
				fenced = r
			default:
				plain = r
			}
		}
		if rs == nil || plain == nil || fenced == nil || rs.NsPerOp == 0 {
			continue
		}
		q := plain.NsPerOp / rs.NsPerOp
		out = append(out, quorumTarget{fmt.Sprintf("%d masters: unfenced Obtain+Release at or below redsync's time (≤ 1.00×)", n),
			fmt.Sprintf("%s vs %s ns/op: %.2f×", ns(plain.NsPerOp), ns(rs.NsPerOp), q), q <= 1})
		out = append(out, quorumTarget{fmt.Sprintf("%d masters: fenced within one extra round trip of redsync's", n),
			fmt.Sprintf("%s vs %s round trips", trips(fenced.Rounds), trips(rs.Rounds)), fenced.Rounds <= rs.Rounds+1})
		q = fenced.NsPerOp / rs.NsPerOp
		out = append(out, quorumTarget{fmt.Sprintf("%d masters: fenced, uncontended, at redsync's time (≤ 1.05×)", n),
			fmt.Sprintf("%s vs %s ns/op: %.2f×, %s vs %s round trips", ns(fenced.NsPerOp), ns(rs.NsPerOp), q, trips(fenced.Rounds), trips(rs.Rounds)), q <= 1.05})
	}
	return out
}

// writeQuorum writes workload 9's section.
func writeQuorum(w io.Writer, rows []quorumRow, total time.Duration) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## 9. Quorum: Obtain+Release on independent masters (issue 35)\n\n")
	p("One goroutine obtains and releases one lock on N independent redis-servers (no replication, persistence\n")
	p("off, all on this machine's loopback), the libraries taking turns as in section 1, %v for each N. Round\n", total)
	p("trips: the most commands one master received per operation; each round goes to every master at once, so\n")
	p("these are the operation's round trips one after another. Commands, Redis CPU (INFO cpu) and command time\n")
	p("(INFO commandstats: the scripts, SET and PING the clients sent): all masters together, over %d operations\n", countedOps)
	p("of one library at a time. On this machine the masters share the cores with the client: their CPU is wall\n")
	p("time. redsync:\n")
	p("`redsync.New` with one goredis/v9 pool per master, a Mutex per acquisition, `TryLockContext` and\n")
	p("`UnlockContext`, its defaults (8 s expiry). This library: `NewQuorum` (MaxTTL %v), `Obtain` with a TTL of\n", quorumMaxTTL)
	p("%v, `Release`; fenced: `Options.FenceKey`, one fence key for every acquisition (the uncontended case: each\n", quorumMaxTTL)
	p("proposal is above the last token, so a majority confirms it in the first round). The floor is no lock: a\n")
	p("PING to every master at once, twice, the least any protocol of two rounds costs here.\n\n")
	p("| masters | library | ns/op | ops/s | allocs/op | B/op | round trips | commands | Redis CPU/op | command time/op | time ÷ redsync | time ÷ floor |\n")
	p("|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, n := range quorumSizes {
		var rs, fl float64
		for _, r := range rows {
			if r.N == n && r.IsRedsync {
				rs = r.NsPerOp
			}
			if r.N == n && r.IsFloor {
				fl = r.NsPerOp
			}
		}
		for _, r := range rows {
			if r.N != n {
				continue
			}
			p("| %d | %s | %s | %s | %s | %s | %s | %s | %sµs | %sµs | %s | %s |\n", n, label(r.Name, !r.IsFloor && !r.IsRedsync), ns(r.NsPerOp), ops(1e9/max(r.NsPerOp, 1)),
				count(r.AllocsPerOp), count(r.BytesPerOp), trips(r.Rounds), trips(r.Commands), us(r.ServerCPU), us(r.CommandTime), ratio(r.NsPerOp, rs), ratio(r.NsPerOp, fl))
		}
	}
	p("\n| target (issue 35) | met | figures |\n|---|---|---|\n")
	for _, t := range quorumTargets(rows) {
		met := "**missed**"
		if t.Met {
			met = "met"
		}
		p("| %s | %s | %s |\n", t.Name, met, t.Detail)
	}
	p("\n")
}
