package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/bench/contention"
)

// hotRun is one hot-key run of one library.
type hotRun struct {
	Library    string
	IsThisRepo bool
	IsFloor    bool // the raw go-redis floor: no lock, not a peer
	*contention.Result
	// GaveUp counts the obtain calls in which the library gave up waiting
	// (its retry budget ran out) and the worker called it again; the wait
	// counts from the first call.
	GaveUp int64
}

// hotConfig is one workers × clients combination.
type hotConfig struct {
	Workers int
	Shared  bool
}

func (c hotConfig) String() string {
	if c.Shared {
		return fmt.Sprintf("%d workers, one shared client", c.Workers)
	}
	return fmt.Sprintf("%d workers, a client each", c.Workers)
}

// Short returns the configuration's label in the chart.
func (c hotConfig) Short() string {
	if c.Shared {
		return fmt.Sprintf("%d, shared", c.Workers)
	}
	return fmt.Sprintf("%d, own", c.Workers)
}

var hotConfigs = []hotConfig{{8, false}, {8, true}, {64, false}, {64, true}}

// hotSuite runs workload 4 with the runner of bench/contention: every
// worker obtains the key (waiting as its library recommends), holds it
// for hold, releases it and starts again.
type hotSuite struct {
	addr     string
	libs     []library
	hold     time.Duration
	duration time.Duration
	rounds   int // runs of each library and configuration, pooled
	log      func(format string, args ...any)
}

// run returns the runs by configuration (in hotConfigs' order), each with
// one run per library that waits, in the libraries' order, pooled over the
// rounds. Each round runs every configuration and library once, so that a
// library's runs fall at different times.
func (s *hotSuite) run(ctx context.Context) ([][]hotRun, error) {
	stats := redis.NewClient(&redis.Options{Addr: s.addr})
	defer stats.Close()
	out := make([][]hotRun, len(hotConfigs))
	for round := range max(s.rounds, 1) {
		for ci, cfg := range hotConfigs {
			k := 0
			for li, lib := range s.libs {
				if lib.Waiting == "" {
					continue
				}
				run, err := s.runOne(ctx, stats, lib, cfg, fmt.Sprintf("bench:hot:%d:%d:%d", round, ci, li))
				if err != nil {
					return nil, fmt.Errorf("%s, %s: %w", lib.Name, cfg, err)
				}
				s.log("  round %d, %s, %s: %.0f acq/s, wait p99 %v, round trips/acq %.2f, gave up %d",
					round+1, lib.Name, cfg, run.Throughput(), contention.Round(run.Wait(0.99)), run.RoundTripsPerAcquisition(), run.GaveUp)
				if round == 0 {
					out[ci] = append(out[ci], run)
				} else {
					out[ci][k] = pool(out[ci][k], run)
				}
				k++
			}
		}
	}
	return out, nil
}

// pool returns the runs a and b as one: their acquisitions, commands,
// round trips, server CPU and allocations together over their time
// together; the acquisitions per worker of both (each worker of each run
// counting as one); the mean of their PING round trips.
func pool(a, b hotRun) hotRun {
	x, y := a.Result, b.Result
	r := &contention.Result{
		Name: x.Name, Layout: x.Layout, Workers: x.Workers, Hold: x.Hold,
		Elapsed:    x.Elapsed + y.Elapsed,
		Waits:      slices.Sorted(slices.Values(append(slices.Clone(x.Waits), y.Waits...))),
		Holds:      slices.Sorted(slices.Values(append(slices.Clone(x.Holds), y.Holds...))),
		PerWorker:  append(slices.Clone(x.PerWorker), y.PerWorker...),
		Errors:     x.Errors + y.Errors,
		Commands:   maps.Clone(x.Commands),
		Requests:   sumCounted(x.Requests, y.Requests),
		RoundTrips: sumCounted(x.RoundTrips, y.RoundTrips),
		Ping:       (x.Ping + y.Ping) / 2,
		CPU:        x.CPU + y.CPU,
		Mallocs:    x.Mallocs + y.Mallocs,
	}
	for name, n := range y.Commands {
		r.Commands[name] += n
	}
	return hotRun{Library: a.Library, IsThisRepo: a.IsThisRepo, IsFloor: a.IsFloor, Result: r, GaveUp: a.GaveUp + b.GaveUp}
}

// sumCounted adds two counts of which -1 means "not counted".
func sumCounted(a, b int64) int64 {
	if a < 0 || b < 0 {
		return -1
	}
	return a + b
}

func (s *hotSuite) runOne(ctx context.Context, stats *redis.Client, lib library, cfg hotConfig, key string) (hotRun, error) {
	counter := &contention.Counter{}
	var (
		gaveUp atomic.Int64
		shared conn
		err    error
	)
	layout := "own"
	if cfg.Shared {
		layout = "shared"
		if shared, err = lib.Connect(s.addr, counter); err != nil {
			return hotRun{}, err
		}
		defer shared.Close()
	}
	var connectErr atomic.Value
	res, err := contention.Run(ctx, contention.Config{
		Name:     lib.Name,
		Layout:   layout,
		Workers:  cfg.Workers,
		Hold:     s.hold,
		Duration: s.duration,
		Stats:    stats,
		Requests: counter,
		Worker: func(i int) (contention.ObtainFunc, func()) {
			if shared != nil {
				return shared.Wait(key, &gaveUp), nil
			}
			c, err := lib.Connect(s.addr, counter)
			if err != nil {
				connectErr.Store(err)
				return func(context.Context) (func(context.Context) error, error) { return nil, err }, nil
			}
			return c.Wait(key, &gaveUp), c.Close
		},
	})
	if err, _ := connectErr.Load().(error); err != nil {
		return hotRun{}, err
	}
	if err != nil {
		return hotRun{}, err
	}
	return hotRun{Library: lib.Name, IsThisRepo: lib.Module == thisModule, IsFloor: lib.Name == floorName, Result: res, GaveUp: gaveUp.Load()}, nil
}
