package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/bench/contention"
	"github.com/redislock/redislock/internal/redistest"
)

// thisModule is the module under comparison.
const thisModule = "github.com/redislock/redislock"

func main() {
	// testing.Benchmark reads -test.benchtime, which testing.Init
	// registers.
	testing.Init()
	var p program
	flag.StringVar(&p.out, "out", "results", "directory to write results.md and chart.svg to")
	flag.DurationVar(&p.micro, "micro", 6*time.Second, "time of each one-goroutine workload (1–3), all libraries in turns")
	flag.DurationVar(&p.microParallel, "micro-parallel", 8*time.Second, "time of the 32-goroutine workload, all libraries in turns")
	flag.DurationVar(&p.slice, "slice", 20*time.Millisecond, "one library's turn in the 32-goroutine workload")
	flag.DurationVar(&p.benchtime, "benchtime", 100*time.Millisecond, "testing.Benchmark's run that counts one library's allocations")
	flag.DurationVar(&p.hotDuration, "hot", 3*time.Second, "measurement of each hot-key run (after 500 ms of warm-up)")
	flag.IntVar(&p.hotRounds, "hot-rounds", 2, "hot-key runs of each library and configuration, pooled")
	flag.IntVar(&p.locks, "locks", 10000, "locks held at once in the memory workload")
	flag.StringVar(&p.rev, "rev", "", "revision of this module to print (make bench passes git describe)")
	flag.StringVar(&p.contention, "contention", "", "instead of the comparison, print one contention table of this library: strategies (its retry strategies) or designs (the prototypes of event-driven waiting); make bench-contention")
	flag.DurationVar(&p.contentionDuration, "contention-duration", 3*time.Second, "measurement of each row of the contention table (after 500 ms of warm-up)")
	flag.StringVar(&p.contentionOut, "contention-out", "", "file to write the contention table to, besides stdout")
	flag.DurationVar(&p.rw, "rw", 3*time.Second, "each run of workload 7 (read-write lock: RWMutex beside Lock, then a writer among readers)")
	flag.BoolVar(&p.rwOnly, "rw-only", false, "run workload 6 only and print its table")
	flag.StringVar(&p.addr, "addr", "", "address of a Redis server to use instead of starting one; its INFO commandstats must see no other traffic")
	flag.StringVar(&p.nativeAddr, "native-addr", "", "address of a Valkey 9 (or Redis 8.4) server for workload 8 instead of starting Valkey 9.1; nothing else may use it")
	flag.IntVar(&p.nativeOps, "native-ops", 5000, "obtains, refreshes and releases of workload 8, each way")
	flag.DurationVar(&p.quorum, "quorum", 5*time.Second, "turns of workload 9 (Quorum beside redsync's Redlock) for each number of masters")
	flag.BoolVar(&p.quorumOnly, "quorum-only", false, "run workload 9 only and print its section")
	flag.DurationVar(&p.sessWindow, "sessions", 5*time.Second, "measurement of each row of workload 10 (locks held at once, kept by a KeepAlive each or by one Session), after a second of settling")
	flag.StringVar(&p.sessCounts, "sessions-locks", "1000,10000,100000", "the numbers of locks held in workload 10, comma-separated")
	flag.IntVar(&p.sessKeepAlive, "sessions-keepalive-max", 10000, "the most locks that workload 10 keeps alive with a KeepAlive each (rows above it are skipped)")
	flag.IntVar(&p.sessUnmerged, "sessions-unmerged", 10000, "the number of locks at which workload 10 also runs a session that sends a refresh.lua call per lock (0: never)")
	flag.BoolVar(&p.sessOnly, "sessions-only", false, "run workload 10 only and print its table")
	flag.BoolVar(&p.microOnly, "micro-only", false, "run workloads 1–3 only and print their rows, one a line (scripts/sidebyside-micro.sh)")
	flag.Parse()
	if err := flag.Set("test.benchtime", p.benchtime.String()); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	// redistest.Run stops the server it started, whatever happens.
	os.Exit(redistest.Run(&p))
}

// program is one run of every workload.
type program struct {
	out           string
	micro         time.Duration
	microParallel time.Duration
	slice         time.Duration
	benchtime     time.Duration
	hotDuration   time.Duration
	hotRounds     int
	locks         int
	rev           string

	contention         string
	contentionDuration time.Duration
	contentionOut      string
	addr               string

	rw     time.Duration
	rwOnly bool

	nativeAddr   string
	nativeOps    int
	nativeServer string // set by runNative

	quorum     time.Duration // workload 9, for each number of masters
	quorumOnly bool

	sessWindow    time.Duration // workload 10
	sessCounts    string
	sessKeepAlive int
	sessUnmerged  int
	sessOnly      bool

	microOnly bool // workloads 1–3 alone
}

// Run runs the workloads and writes the report; it returns the exit code.
func (p *program) Run() int {
	if err := p.run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func (p *program) run(ctx context.Context) error {
	start := time.Now()
	rows := contentionModes[p.contention]
	if p.contention != "" && rows == nil {
		return fmt.Errorf("-contention %q: want strategies or designs", p.contention)
	}
	addr := p.addr
	if addr == "" {
		var err error
		if addr, err = redistest.SharedAddr(redistest.Redis); err != nil {
			return err
		}
	}
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = admin.Close() }()
	env, err := p.environment(ctx, admin)
	if err != nil {
		return err
	}
	logf("bench: %s, %s, Go %s, %s", env.CPU, env.OS, env.Go, env.Redis)
	libs := libraries()

	idle, err := contention.PingRoundTrip(ctx, admin, 2000)
	if err != nil {
		return err
	}
	env.Ping = idle
	if rows != nil {
		return p.runContention(ctx, addr, env, rows())
	}

	sessions, err := p.sessionSuite(addr)
	if err != nil {
		return err
	}
	if p.sessOnly {
		logf("workload 10: locks held at once, %v per row", p.sessWindow)
		rows, err := sessions.run(ctx)
		if err != nil {
			return err
		}
		var md strings.Builder
		writeSessions(&md, rows, p.sessWindow)
		fmt.Print(md.String())
		return nil
	}

	rwSuite := &rwSuite{addr: addr, workers: parallelGoroutines, reads: 0.95, hold: time.Millisecond, duration: p.rw, log: logf}
	if p.rwOnly {
		logf("workload 7: read-write lock, %v per run", p.rw)
		rw, err := rwSuite.run(ctx)
		if err != nil {
			return err
		}
		var md strings.Builder
		rw.writeMarkdown(&md)
		fmt.Print(md.String())
		return nil
	}

	// Workload 9's masters start now: without persistence, a master
	// takes no lock of a quorum until it has been up for its MaxTTL.
	quorumAddrs, err := redistest.SharedQuorumAddrs(redistest.Redis, quorumSizes[len(quorumSizes)-1])
	if err != nil {
		return err
	}
	if p.quorumOnly {
		rows, err := p.runQuorum(ctx, quorumAddrs)
		if err != nil {
			return err
		}
		var md strings.Builder
		writeQuorum(&md, rows, p.quorum)
		fmt.Print(md.String())
		return nil
	}

	logf("workloads 1–3: %v each (%d goroutines: %v in turns of %v)", p.micro, parallelGoroutines, p.microParallel, p.slice)
	micro, err := (&microSuite{addr: addr, libs: libs, slice: p.slice, total: p.micro, totalParallel: p.microParallel, log: logf}).run(ctx)
	if err != nil {
		return err
	}
	if p.microOnly {
		writeMicroLines(os.Stdout, micro)
		return nil
	}
	logf("workload 4: hot key, %d rounds of %v per run", p.hotRounds, p.hotDuration)
	hot, err := (&hotSuite{addr: addr, libs: fullLibraries(libs), hold: time.Millisecond, duration: p.hotDuration, rounds: p.hotRounds, log: logf}).run(ctx)
	if err != nil {
		return err
	}
	logf("workload 5: %d locks held at once", p.locks)
	mem, err := (&memSuite{addr: addr, libs: fullLibraries(libs), locks: p.locks, log: logf}).run(ctx)
	if err != nil {
		return err
	}
	logf("workload 6: semaphore (limit 1 beside Lock for %v; limit 4, 64 workers, %v per strategy)", p.micro, p.hotDuration)
	semMD, err := semaphoreReport(ctx, addr, admin, p.micro, p.hotDuration)
	if err != nil {
		return err
	}
	logf("workload 7: read-write lock, %v per run", p.rw)
	rw, err := rwSuite.run(ctx)
	if err != nil {
		return err
	}
	native, err := p.runNative(ctx)
	if err != nil {
		return err
	}
	quorum, err := p.runQuorum(ctx, quorumAddrs)
	if err != nil {
		return err
	}
	logf("workload 10: locks held at once, %v per row", p.sessWindow)
	sessRows, err := sessions.run(ctx)
	if err != nil {
		return err
	}
	env.Elapsed = time.Since(start)

	rep := &report{Env: env, Libraries: libs, Micro: micro, Hot: hot, Memory: mem, HotDuration: p.hotDuration, HotRounds: p.hotRounds, MicroTime: p.micro, MicroParallel: p.microParallel, Slice: p.slice,
		Native: native, NativeServer: p.nativeServer, NativeOps: p.nativeOps, Quorum: quorum, QuorumTime: p.quorum}
	var md strings.Builder
	rep.writeMarkdown(&md)
	md.WriteString("\n## Semaphore (issue 16)\n\n" + semMD)
	rw.writeMarkdown(&md)
	md.WriteString("\n## Many locks held at once: a KeepAlive each, or one Session (issue 34)\n\n")
	writeSessions(&md, sessRows, p.sessWindow)
	var svg strings.Builder
	writeChart(&svg, rep)
	if err := os.MkdirAll(p.out, 0o755); err != nil { //nolint:gosec // results to commit and read
		return err
	}
	if err := writeFile(filepath.Join(p.out, "results.md"), md.String()); err != nil {
		return err
	}
	if err := writeFile(filepath.Join(p.out, "chart.svg"), svg.String()); err != nil {
		return err
	}
	fmt.Print(md.String())
	logf("bench: wrote %s and %s in %v", filepath.Join(p.out, "results.md"), filepath.Join(p.out, "chart.svg"), env.Elapsed.Round(time.Second))
	return nil
}

// runNative runs workload 8 on p.nativeAddr, or on a Valkey 9.1 server of
// internal/redistest.
func (p *program) runNative(ctx context.Context) ([]nativeRow, error) {
	addr := p.nativeAddr
	if addr == "" {
		var err error
		if addr, err = redistest.SharedAddr(redistest.Valkey9); err != nil {
			return nil, fmt.Errorf("workload 8 needs Valkey 9 (or -native-addr): %w", err)
		}
	}
	admin := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = admin.Close() }()
	hello, err := admin.Do(ctx, "HELLO").Result()
	if err != nil {
		return nil, err
	}
	p.nativeServer = serverName(hello)
	logf("workload 8: native commands beside scripts on %s, %d operations each way", p.nativeServer, p.nativeOps)
	return (&nativeSuite{addr: addr, ops: p.nativeOps, log: logf}).run(ctx)
}

// sessionSuite returns workload 10 as the flags say.
func (p *program) sessionSuite(addr string) (*sessSuite, error) {
	s := &sessSuite{addr: addr, window: p.sessWindow, keepAlive: p.sessKeepAlive, unmerged: p.sessUnmerged, log: logf}
	for f := range strings.SplitSeq(p.sessCounts, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-sessions-locks %q: want positive numbers", p.sessCounts)
		}
		s.counts = append(s.counts, n)
	}
	return s, nil
}

// runQuorum runs workload 9 on the masters at addrs, once they take locks.
func (p *program) runQuorum(ctx context.Context, addrs []string) ([]quorumRow, error) {
	logf("workload 9: Quorum beside redsync on %v independent masters, %v each", quorumSizes, p.quorum)
	if err := waitUp(ctx, addrs); err != nil {
		return nil, err
	}
	return (&quorumSuite{addrs: addrs, total: p.quorum, log: logf}).run(ctx)
}

// serverName returns "Valkey 9.1.2" from a HELLO reply.
func serverName(hello any) string {
	m, _ := hello.(map[any]any)
	name, _ := m["server"].(string)
	version, _ := m["version"].(string)
	if name == "" {
		return "unknown server"
	}
	return strings.ToUpper(name[:1]) + name[1:] + " " + version
}

// runContention prints the contention table of rows, and writes it to
// p.contentionOut if set.
func (p *program) runContention(ctx context.Context, addr string, env environment, rows []contentionRow) error {
	logf("contention table %q: %d rows × 4 configurations, %v each", p.contention, len(rows), p.contentionDuration)
	var b strings.Builder
	t := &contentionTable{addr: addr, server: env.Redis, idle: env.Ping, duration: p.contentionDuration, rows: rows, log: logf}
	if _, err := t.run(ctx, &b); err != nil {
		return err
	}
	fmt.Print("\n" + b.String())
	if p.contentionOut != "" {
		return writeFile(p.contentionOut, b.String())
	}
	return nil
}

// gomaxprocs returns the Go scheduler's processors, for table headings.
func gomaxprocs() int { return runtime.GOMAXPROCS(0) }

// writeFile writes through a temporary file, so that an interrupted run
// leaves the previous results whole.
func writeFile(path, text string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil { //nolint:gosec // results to commit and read
		return err
	}
	return os.Rename(tmp, path)
}

// environment is what the report says of the run's conditions.
type environment struct {
	Date     time.Time
	CPU      string
	Cores    int
	OS       string
	Go       string
	Redis    string
	Versions map[string]string // module path → version
	Ping     time.Duration     // idle PING round trip, p50
	Elapsed  time.Duration
}

func (p *program) environment(ctx context.Context, admin *redis.Client) (environment, error) {
	env := environment{
		Date:     time.Now().UTC(),
		CPU:      cpuModel(),
		Cores:    runtime.NumCPU(),
		OS:       runtime.GOOS + "/" + runtime.GOARCH,
		Go:       runtime.Version(),
		Versions: map[string]string{},
	}
	info, err := admin.Info(ctx, "server").Result()
	if err != nil {
		return env, err
	}
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
			env.Redis = "Redis " + v
		}
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			env.Versions[d.Path] = d.Version
		}
	}
	env.Versions[thisModule] = p.rev
	if p.rev == "" {
		env.Versions[thisModule] = "(working tree)"
	}
	return env, nil
}

// cpuModel returns the processor's model name from /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown CPU"
	}
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
