package main

import (
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/bench/contention"
	"github.com/redislock/redislock/internal/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }

// TestLibraries runs each adapter once: obtain and release, a failed
// attempt on a held key, refresh, waiting for a key that another releases,
// and the round-trip counter. The full comparison is make bench.
//
// Its server counts every access to a key exactly (an LFU policy with
// lfu-log-factor 0 and no decay: OBJECT FREQ goes up by one per access),
// so that the test can see a waiter's first attempt reach the held key
// before the holder releases it.
func TestLibraries(t *testing.T) {
	server := redistest.NewServer(t, redistest.Redis, "--maxmemory-policy", "allkeys-lfu", "--lfu-log-factor", "0", "--lfu-decay-time", "0")
	addr := server.Addr()
	admin := server.Client(t)
	for _, lib := range libraries() {
		t.Run(lib.Name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			counter := &contention.Counter{}
			c, err := lib.Connect(addr, counter)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			other, err := lib.Connect(addr, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()

			key := redistest.Key(t, "lock")
			for range 2 {
				if err := c.ObtainRelease(key)(ctx); err != nil {
					t.Fatalf("ObtainRelease: %v", err)
				}
			}
			if counter.RoundTrips() < 2 {
				t.Errorf("round trips counted: %d, want at least 2", counter.RoundTrips())
			}

			release, err := other.Hold(ctx, key)
			if err != nil {
				t.Fatalf("Hold: %v", err)
			}
			if err := c.TryHeld(key)(ctx); err != nil {
				t.Errorf("TryHeld on a held key: %v", err)
			}
			if err := release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			if err := c.TryHeld(key)(ctx); !errors.Is(err, errObtainedHeld) {
				t.Errorf("TryHeld on a free key = %v, want %v", err, errObtainedHeld)
			}
			// Free the key that the last TryHeld took, for libraries
			// that do not release it themselves.
			admin.Del(ctx, key, "rueidislock:0:"+key)

			refresh, release, err := c.Refresh(ctx, redistest.Key(t, "refresh"))
			if err != nil {
				t.Fatalf("Refresh: %v", err)
			}
			if refresh != nil {
				if err := refresh(ctx); err != nil {
					t.Errorf("refresh: %v", err)
				}
			} else if lib.Name != "rueidislock" {
				t.Errorf("no refresh")
			}
			if err := release(ctx); err != nil {
				t.Errorf("release after refresh: %v", err)
			}
			// rueidislock releases in the background: wait for it, so
			// that its round trip is not counted as the waiter's below.
			waitKeys(t, admin, redistest.Key(t, "refresh"), 0)

			var gaveUp atomic.Int64
			wait := c.Wait(redistest.Key(t, "hot"), &gaveUp)
			if lib.Waiting == "" {
				if wait != nil {
					t.Errorf("Wait is set but Waiting is empty")
				}
				return
			}
			hot := redistest.Key(t, "hot")
			release, err = other.Wait(hot, &gaveUp)(ctx)
			if err != nil {
				t.Fatalf("Wait on a free key: %v", err)
			}
			// The key the library wrote for hot (rueidislock prefixes it),
			// and how often it was accessed so far.
			lockKey := waitKeys(t, admin, hot, 1)[0]
			freq := func() int64 {
				n, err := admin.ObjectFreq(ctx, lockKey).Result()
				if err != nil {
					t.Fatalf("OBJECT FREQ %s: %v", lockKey, err)
				}
				return n
			}
			accessed, trips := freq(), counter.RoundTrips()
			done := make(chan error, 1)
			var waiterTrips int64 // the waiter's round trips until it held the key; set before done
			go func() {
				release, err := wait(ctx)
				waiterTrips = counter.RoundTrips() - trips
				if err == nil {
					err = release(ctx)
				}
				done <- err
			}()
			// Release only once the waiter's first attempt has reached the
			// held key: the waiter is then waiting, whenever its goroutine
			// started.
			for freq() == accessed {
				select {
				case err := <-done:
					t.Fatalf("Wait on a held key returned before its first attempt reached the key: %v", err)
				case <-ctx.Done():
					t.Fatalf("no attempt of the waiter reached the held key %s: %v", lockKey, ctx.Err())
				case <-time.After(time.Millisecond): // polling the key's access count
				}
			}
			if err := release(ctx); err != nil {
				t.Fatalf("release: %v", err)
			}
			if err := <-done; err != nil {
				t.Errorf("Wait on a key released while it waited: %v", err)
			}
			// It waited: one attempt found the key held, and at least one
			// more round trip took it after the release.
			if waiterTrips < 2 {
				t.Errorf("the waiter took the key in %d round trip(s), want at least 2 (a failed attempt, then the obtain)", waiterTrips)
			}
		})
	}
}

// waitKeys returns the string keys whose name contains name, once there
// are exactly n of them; it fails the test after 10 s.
func waitKeys(t *testing.T, admin *redis.Client, name string, n int) []string {
	t.Helper()
	ctx := context.Background()
	for deadline := time.Now().Add(10 * time.Second); ; {
		var found []string
		iter := admin.ScanType(ctx, 0, "*"+name+"*", 100, "string").Iterator()
		for iter.Next(ctx) {
			found = append(found, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Fatalf("SCAN: %v", err)
		}
		if len(found) == n {
			return found
		}
		if time.Now().After(deadline) {
			t.Fatalf("keys containing %q: %q, want %d after 10s", name, found, n)
		}
		time.Sleep(5 * time.Millisecond) // polling the server's keys
	}
}

// TestMemory holds a few locks through each library.
func TestMemory(t *testing.T) {
	addr := redistest.NewServer(t, redistest.Redis).Addr()
	rows, err := (&memSuite{addr: addr, libs: libraries(), locks: 100, log: t.Logf}).run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Keys < int64(r.Locks) || r.Bytes <= 0 {
			t.Errorf("%s: %d keys, %d bytes for %d locks", r.Library, r.Keys, r.Bytes, r.Locks)
		}
	}
}

// TestReport renders the report and the chart from made-up figures.
func TestReport(t *testing.T) {
	libs := libraries()
	fig := func(ns, allocs float64) *figure {
		return &figure{NsPerOp: ns, AllocsPerOp: allocs, BytesPerOp: 10 * allocs, RoundTrips: 2, Goroutines: 1}
	}
	r := &report{
		Env: environment{Date: time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC), CPU: "test CPU", Cores: 2, OS: "linux/amd64",
			Go: "go1.26", Redis: "Redis 7.0.15", Versions: map[string]string{thisModule: "v0.0.0-test"}, Ping: 20 * time.Microsecond},
		Libraries: libs, HotRounds: 2, HotDuration: time.Second, MicroTime: 6 * time.Second, MicroParallel: 8 * time.Second, Slice: 20 * time.Millisecond,
		Micro: []microRow{{Name: "PING (one round trip)", IsPing: true, Obtain1: fig(20000, 4), ObtainN: fig(5000, 4)}},
	}
	for i, lib := range libs {
		row := microRow{Name: lib.Name, Client: lib.Client, IsFloor: i == 0, IsThisRepo: lib.Module == thisModule,
			Obtain1: fig(100000+float64(i)*1000, 20+float64(i)), ObtainN: fig(30000, 20+float64(i)), Failed: fig(50000, 10), Refresh: fig(50000, 10)}
		if lib.Name == "rueidislock" {
			row.Refresh = nil
		}
		r.Micro = append(r.Micro, row)
		r.Memory = append(r.Memory, memRow{Library: lib.Name, IsFloor: i == 0, IsThisRepo: row.IsThisRepo, Locks: 100, Keys: 100, Bytes: 9000 + int64(i)*100})
	}
	for range hotConfigs {
		var runs []hotRun
		for i, lib := range libs {
			if lib.Waiting == "" {
				continue
			}
			res := &contention.Result{Name: lib.Name, Workers: 8, Elapsed: time.Second, Requests: 40, RoundTrips: 30,
				Waits:     []time.Duration{time.Millisecond, time.Duration(i+2) * time.Millisecond},
				PerWorker: []int{1, 1, 0, 0, 0, 0, 0, 0}, Commands: map[string]int64{"evalsha": 4}, CPU: time.Duration(100+50*i) * time.Microsecond}
			runs = append(runs, hotRun{Library: lib.Name, IsThisRepo: lib.Module == thisModule, IsFloor: lib.Name == floorName, Result: res})
		}
		r.Hot = append(r.Hot, runs)
	}

	r.Native = []nativeRow{
		{Op: "Refresh", Script: serverCost{CPU: 14 * time.Microsecond, CommandTime: 3 * time.Microsecond, Top: "EVALSHA ×1"}, Native: serverCost{CPU: 11 * time.Microsecond, CommandTime: time.Microsecond, Top: "SET ×1"}},
		{Op: "Release", Script: serverCost{CPU: 14 * time.Microsecond, CommandTime: 4 * time.Microsecond, Top: "EVALSHA ×1"}, Native: serverCost{CPU: 12 * time.Microsecond, CommandTime: time.Microsecond, Top: "DELIFEQ ×1"}},
	}
	r.NativeServer, r.NativeOps = "Valkey 9.1.2", 100

	var md strings.Builder
	r.writeMarkdown(&md)
	for _, want := range []string{
		"## Issue 15 in this run", "| same with `FenceKey`, 32 goroutines |", "| failed Obtain, allocs (floor script replying an integer: 10) | 10 |",
		"acquisitions/s ÷ best peer", "; fair floor ", "| same with `FenceKey`, 1 goroutine | 1.02× (fenced floor 1.03×; with a token per lock 1.04×) |", "Redis CPU per acquisition (INFO cpu over the run) |", "| 15.00 | 2.0 | 75.0µs | 0 |", "| Release of a single-key lock, Redis command time: native ÷ script (Valkey 9.1.2) | 0.25× (1.00 vs 4.00 µs, DELIFEQ ×1 vs EVALSHA ×1; server CPU 12.0 vs 14.0 µs) |",
		"## 8. Native commands beside scripts (Valkey 9.1.2)",
		"## 1. Uncontended Obtain+Release", "## 4. One hot key", "## 5. 100 locks held at once",
		"| **redislock (this)** | go-redis | 101,000 |", "no Refresh call", "v0.0.0-test",
		"| Memory per held lock no more than bsm/redislock's | met |", "![Hot key", "rueidis",
	} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, md.String())
		}
	}

	var svg strings.Builder
	writeChart(&svg, r)
	dec := xml.NewDecoder(strings.NewReader(svg.String()))
	rects := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("chart is not well-formed XML: %v\n%s", err, svg.String())
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	// Background, legend (5), and 5 rows (the floor and 4 libraries) × 4
	// configurations × 2 panels.
	if want := 1 + 5 + 5*4*2; rects != want {
		t.Errorf("chart has %d rects, want %d", rects, want)
	}
}

func TestFormat(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{thousands(0), "0"}, {thousands(999), "999"}, {thousands(1000), "1,000"}, {thousands(-1234567), "-1,234,567"},
		{count(22), "22"}, {count(22.4), "22.4"}, {count(1234.4), "1,234"},
		{trips(2), "2"}, {trips(3.456), "3.46"},
		{shortDuration(85 * time.Millisecond), "85ms"}, {shortDuration(1200 * time.Millisecond), "1.2s"},
		{shortDuration(40 * time.Microsecond), "40µs"}, {shortDuration(2500 * time.Microsecond), "2.5ms"},
		{ratio(105, 100), "1.05"}, {ratio(1, 0), "–"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	if got := niceStep(170); got != 200 {
		t.Errorf("niceStep(170) = %v, want 200", got)
	}
}

func TestPool(t *testing.T) {
	ms := time.Millisecond
	a := hotRun{Library: "l", Result: &contention.Result{Workers: 2, Elapsed: time.Second, Waits: []time.Duration{1 * ms, 5 * ms}, Holds: []time.Duration{2 * ms, 1 * ms},
		PerWorker: []int{1, 1}, Commands: map[string]int64{"evalsha": 4}, Requests: 6, RoundTrips: 4, Ping: 10 * time.Microsecond}, GaveUp: 1}
	b := hotRun{Library: "l", Result: &contention.Result{Workers: 2, Elapsed: time.Second, Waits: []time.Duration{3 * ms}, Holds: []time.Duration{3 * ms},
		PerWorker: []int{1, 0}, Commands: map[string]int64{"evalsha": 2, "blmove": 1}, Requests: -1, RoundTrips: 2, Ping: 30 * time.Microsecond}, GaveUp: 2}
	p := pool(a, b)
	if got, want := p.Waits, []time.Duration{1 * ms, 3 * ms, 5 * ms}; !slices.Equal(got, want) {
		t.Errorf("Waits = %v, want %v", got, want)
	}
	if got, want := p.Holds, []time.Duration{1 * ms, 2 * ms, 3 * ms}; !slices.Equal(got, want) {
		t.Errorf("Holds = %v, want %v", got, want)
	}
	if lo, hi := p.MinMax(); lo != 0 || hi != 1 || len(p.PerWorker) != 4 {
		t.Errorf("PerWorker = %v", p.PerWorker)
	}
	if p.Throughput() != 1.5 || p.RoundTrips != 6 || p.Requests != -1 || p.GaveUp != 3 || p.Ping != 20*time.Microsecond {
		t.Errorf("pooled = %+v, gave up %d", *p.Result, p.GaveUp)
	}
	if p.Commands["evalsha"] != 6 || p.Commands["blmove"] != 1 || a.Commands["blmove"] != 0 {
		t.Errorf("Commands = %v; a's = %v", p.Commands, a.Commands)
	}
}

// TestContentionTables runs both contention tables for a few milliseconds
// per row: the table has a line per row and configuration, and every row
// acquires the lock in some configuration (the slowest designs may not in
// every one of such short runs).
func TestContentionTables(t *testing.T) {
	addr := redistest.SharedServer(t, redistest.Redis).Addr()
	for mode, rows := range contentionModes {
		t.Run(mode, func(t *testing.T) {
			var b strings.Builder
			tbl := &contentionTable{addr: addr, server: "Redis", duration: 100 * time.Millisecond, warmup: time.Millisecond, rows: rows(), log: t.Logf}
			results, err := tbl.run(context.Background(), &b)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tbl.rows {
				if got := strings.Count(b.String(), "| "+r.name+" |"); got != 4 {
					t.Errorf("%d table lines for %q, want 4 (8 and 64 workers, own and shared clients):\n%s", got, r.name, b.String())
				}
				acquired := 0
				for _, res := range results {
					if res.Name == r.name {
						acquired += res.Acquisitions()
					}
				}
				if acquired == 0 {
					t.Errorf("%q never acquired the lock:\n%s", r.name, b.String())
				}
			}
		})
	}
}

// TestNativeSuite runs workload 8 briefly on Valkey 9.1: the native way
// sends SET (to obtain and refresh) and DELIFEQ, the script way EVALSHA,
// and both are measured.
func TestNativeSuite(t *testing.T) {
	server := redistest.NewServer(t, redistest.Valkey9)
	rows, err := (&nativeSuite{addr: server.Addr(), ops: 20, log: t.Logf}).run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct{ op, script, native string }{{"Obtain", "EVALSHA ×1", "SET ×1"}, {"Refresh", "EVALSHA ×1", "SET ×1"}, {"Release", "EVALSHA ×1", "DELIFEQ ×1"}}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		r := rows[i]
		if r.Op != w.op || r.Script.Top != w.script || r.Native.Top != w.native {
			t.Errorf("row %d: %s, script %q, native %q; want %s, %q, %q", i, r.Op, r.Script.Top, r.Native.Top, w.op, w.script, w.native)
		}
		if r.Script.CommandTime <= 0 || r.Native.CommandTime <= 0 {
			t.Errorf("%s: command times %v and %v, want both above 0", r.Op, r.Script.CommandTime, r.Native.CommandTime)
		}
	}
}

// TestMicroLines checks the lines -micro-only writes for
// scripts/sidebyside-micro.sh: one a figure, a missing figure left out.
func TestMicroLines(t *testing.T) {
	rows := []microRow{
		{Name: "a", Obtain1: &figure{NsPerOp: 1234.4, AllocsPerOp: 20.3, BytesPerOp: 700}, Refresh: &figure{NsPerOp: 10, AllocsPerOp: 9, BytesPerOp: 300}},
		{Name: "b, fenced", ObtainN: &figure{NsPerOp: 5e4, AllocsPerOp: 21, BytesPerOp: 1400}},
	}
	var b strings.Builder
	writeMicroLines(&b, rows)
	want := "Obtain+Release, 1 goroutine\ta\t1234\t20.3\t700\n" +
		"Refresh\ta\t10\t9.0\t300\n" +
		fmt.Sprintf("Obtain+Release, %d goroutines\tb, fenced\t50000\t21.0\t1400\n", parallelGoroutines)
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
