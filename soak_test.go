package redislock_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/redistest"
)

// The soak of issue 11: soakProcesses processes (not goroutines: the test
// binary run again, see soakHelperMain) obtain soakKeys keys with
// WaitForRelease, LinearBackoff, ExponentialBackoff and NoRetry, hold them
// a few milliseconds and release them, while two of them are SIGKILLed and
// restarted every soakCrashEvery and the scripts are flushed (as after a
// restart or failover) every soakFlushEvery. At the end:
//
//   - no key without a TTL exists but the fence counters;
//   - a NoRetry obtain failed while the key was free only on what a
//     waiter killed while registered costs (lua/handover.lua: one
//     reservation with no taker). A NoRetry obtain runs in MULTI with a
//     GET of its key (soakProbeClient), so the test knows the value that
//     made it fail. A value of a holder is a held key. A reservation (a
//     key handed over to a waiter, see WaitForRelease) is followed until
//     it is replaced or gone: replaced before it ran out, it had a live
//     taker (a handover in progress); run out, nobody took it within its
//     claim window: the key was free and the obtain failed. Each such
//     reservation must be the one of a killed waiter (soakCheckUntaken):
//     on the key that waiter was waiting for when it was killed, made
//     within a registration's life of the kill, and no killed waiter
//     explains two.
//
// make test runs it for soakShort (three crash cycles); -soak.long, or
// REDISLOCK_SOAK=<duration>, runs it longer (one minute with -soak.long).

var soakLong = flag.Bool("soak.long", false, "run the multi-process soak for a minute instead of "+soakShort.String())

const (
	soakHelperEnv  = "REDISLOCK_SOAK_HELPER" // set in the helper processes: "<addr> <id> <keys>"
	soakDurationEv = "REDISLOCK_SOAK"        // a duration: how long to soak
	soakProcesses  = 8
	soakVictims    = 2 // helpers 0 and 1 are killed and restarted
	soakKeys       = 4
	soakShort      = 8 * time.Second
	soakCrashEvery = 2500 * time.Millisecond
	soakFlushEvery = 2 * time.Second
	soakTTL        = 2 * time.Second
	soakLine       = "soak: " // the prefix of the helpers' report lines
)

// soakKey and soakFence name the lock and fence keys of key i.
func soakKey(i int) string   { return "soak:{" + strconv.Itoa(i) + "}" }
func soakFence(i int) string { return "soak:{" + strconv.Itoa(i) + "}:fence" }

// soakHelper is a running helper process.
type soakHelper struct {
	id    int
	cmd   *exec.Cmd
	stdin io.WriteCloser
	read  sync.WaitGroup // the goroutine that reads its stdout
	err   bytes.Buffer   // its stderr
}

// soakTally sums the helpers' report lines, of every process, killed or not.
type soakTally struct {
	mu      sync.Mutex
	counts  map[string]int64
	free    map[string]int64 // the reservations that ran out untaken: "<key> <value>" -> when made (µs), the earliest report
	waiting map[int]string   // the key each helper is waiting for, by helper id
	errs    []string         // the error lines, "helper <id>: <line>"
}

// add counts a report line of helper id.
func (s *soakTally) add(id int, line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts, s.free, s.waiting = map[string]int64{}, map[string]int64{}, map[int]string{}
	}
	event, detail, _ := strings.Cut(line, " ")
	s.counts[event]++
	s.waiting[id] = ""
	switch event {
	case "waiting":
		s.waiting[id] = detail
	case "error":
		s.errs = append(s.errs, fmt.Sprintf("helper %d: %s", id, detail))
	case "probe-free":
		// Several probes may see one reservation run out (its value is
		// its waiter's, the same for each): one entry, made when the
		// earliest report says.
		kv, made, _ := strings.Cut(detail[strings.IndexByte(detail, ' ')+1:], " ")
		kv = detail[:strings.IndexByte(detail, ' ')+1] + kv
		us, _ := strconv.ParseInt(made, 10, 64) // written by classify
		if old, ok := s.free[kv]; !ok || us < old {
			s.free[kv] = us
		}
	}
}

// waitingFor returns the key helper id was waiting for after its last
// report line ("" for none).
func (s *soakTally) waitingFor(id int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiting[id]
}

func (s *soakTally) get(event string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[event]
}

// untaken returns the reservations that ran out untaken, as "<key> <value>
// <made µs>".
func (s *soakTally) untaken() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, kv := range slices.Sorted(maps.Keys(s.free)) {
		out = append(out, kv+" "+strconv.FormatInt(s.free[kv], 10))
	}
	return out
}

// soakKill is a helper killed while it waited for key.
type soakKill struct {
	key string
	at  time.Time // just before the SIGKILL
}

func (k soakKill) String() string { return k.key + "@" + k.at.Format("15:04:05.000") }

// soakCheckUntaken checks the reservations that ran out untaken against
// the waiters that were killed. A killed waiter's registration costs at
// most one reservation with no taker, on its key, made (a claim window
// before the probe saw it run out) within a registration's life after the
// kill, or up to a claim window before it (a waiter killed between its
// grant and taking it). Reservations are matched to kills, each kill at most once,
// earliest first; one left without a kill fails the test. It returns the
// number of reservations.
func soakCheckUntaken(t *testing.T, kills []soakKill, untaken []string) int {
	t.Helper()
	type reservation struct {
		key, value string
		made       time.Time
	}
	var rs []reservation
	for _, u := range untaken {
		f := strings.Fields(u)
		if len(f) != 3 || !soakReservation.MatchString(f[1]) {
			t.Errorf("untaken reservation %q: not a key, a reservation's value and a time", u)
			continue
		}
		us, _ := strconv.ParseInt(f[2], 10, 64) // written by classify
		rs = append(rs, reservation{f[0], f[1], time.UnixMicro(us)})
	}
	slices.SortFunc(rs, func(a, b reservation) int { return a.made.Compare(b.made) })
	// within tells whether a reservation made at made may be the cost of
	// a kill at kill.
	within := func(made, kill time.Time) bool {
		return !made.Before(kill.Add(-handoff.Claim)) && !made.After(kill.Add(handoff.Registration+handoff.Claim))
	}
	used := make([]bool, len(kills))
	for _, r := range rs {
		i := -1
		for j, k := range kills {
			if !used[j] && k.key == r.key && within(r.made, k.at) {
				i = j
				break
			}
		}
		if i < 0 {
			t.Errorf("reservation %s %q (made %s) ran out untaken and no waiter killed on that key explains it (killed waiters: %v): the key was free",
				r.key, r.value, r.made.Format("15:04:05.000000"), kills)
			continue
		}
		used[i] = true
	}
	return len(rs)
}

func TestSoakProcesses(t *testing.T) {
	// Not parallel: its eight processes load the machine, which the timing of
	// other tests should not have to bear; it runs before the parallel tests.
	duration := soakShort
	if *soakLong {
		duration = time.Minute
	}
	if v := os.Getenv(soakDurationEv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("%s=%q: %v", soakDurationEv, v, err)
		}
		duration = d
	}
	server := redistest.NewServer(t, redistest.Redis)
	admin := server.Client(t)
	ctx := context.Background()
	var tally soakTally

	var helpers [soakProcesses]*soakHelper
	start := func(id int) *soakHelper {
		h := &soakHelper{id: id}
		h.cmd = exec.Command(os.Args[0], "-test.run=^$") // #nosec G204 G702 -- this test binary, run again
		h.cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", soakHelperEnv, server.Addr(), id, soakKeys))
		h.cmd.Stderr = &h.err
		var err error
		if h.stdin, err = h.cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		stdout, err := h.cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := h.cmd.Start(); err != nil {
			t.Fatalf("starting helper %d: %v", id, err)
		}
		h.read.Go(func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if line, ok := strings.CutPrefix(sc.Text(), soakLine); ok {
					tally.add(id, line)
				}
			}
		})
		return h
	}
	// wait reaps h after it exited or was killed; a helper that exits with
	// an error fails the test.
	wait := func(h *soakHelper, killed bool) {
		h.read.Wait()
		err := h.cmd.Wait()
		if err != nil && !killed {
			t.Errorf("helper %d: %v\n%s", h.id, err, h.err.String())
		}
	}
	for id := range helpers {
		helpers[id] = start(id)
	}
	t.Cleanup(func() {
		for _, h := range helpers {
			if h != nil && h.cmd.ProcessState == nil {
				_ = h.cmd.Process.Kill()
				wait(h, true)
			}
		}
	})

	// Crash cycles and script flushes, until the end.
	crashes, flushes := 0, 0
	var kills []soakKill // the helpers killed while waiting
	crash := time.NewTicker(soakCrashEvery)
	defer crash.Stop()
	flush := time.NewTicker(soakFlushEvery)
	defer flush.Stop()
	end := time.After(duration)
soak:
	for {
		select {
		case <-crash.C:
			for id := range soakVictims {
				at := time.Now()
				if err := helpers[id].cmd.Process.Kill(); err != nil {
					t.Fatalf("SIGKILL helper %d: %v", id, err)
				}
				wait(helpers[id], true) // reads its last report lines
				if key := tally.waitingFor(id); key != "" {
					kills = append(kills, soakKill{key, at})
				}
				helpers[id] = start(id)
			}
			crashes++
		case <-flush.C:
			if err := admin.ScriptFlush(ctx).Err(); err != nil {
				t.Fatalf("SCRIPT FLUSH: %v", err)
			}
			flushes++
		case <-end:
			break soak
		}
	}

	// Stop: every helper sees its stdin close, gives up its wait, releases
	// what it holds and exits.
	for _, h := range helpers {
		_ = h.stdin.Close()
	}
	for _, h := range helpers {
		wait(h, false)
	}

	// Every key the library created must expire by itself, fence counters
	// aside.
	var keys, noTTL []string
	registrations := int64(0)
	iter := admin.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	fences := map[string]bool{}
	for i := range soakKeys {
		fences[soakFence(i)] = true
	}
	for _, k := range keys {
		pttl, err := admin.PTTL(ctx, k).Result()
		if err != nil {
			t.Fatalf("PTTL %s: %v", k, err)
		}
		if pttl == -1 && !fences[k] {
			typ := admin.Type(ctx, k).Val()
			noTTL = append(noTTL, k+" ("+typ+")")
		}
		if admin.Type(ctx, k).Val() == "zset" {
			registrations += admin.ZCard(ctx, k).Val()
		}
	}
	slices.Sort(noTTL)
	if len(noTTL) > 0 {
		t.Errorf("keys without a TTL after the soak, other than the fence counters: %q", noTTL)
	}

	probes := tally.get("probe-obtained") + tally.get("probe-held") + tally.get("probe-taken") + tally.get("probe-free")
	t.Logf("figure: soak of %v: %d processes on %d keys, %d crash cycles (%d SIGKILLs), %d SCRIPT FLUSH; obtained: %d WaitForRelease, %d LinearBackoff, %d ExponentialBackoff; %d obtains gave up; %d NoRetry probes: %d obtained, %d failed on a held key, %d on a reservation being taken, %d on a free key (a reservation nobody took); at the end %d keys, %d without a TTL (fence counters aside), %d registrations in wait queues",
		duration, soakProcesses, soakKeys, crashes, crashes*soakVictims, flushes,
		tally.get("obtained-wait"), tally.get("obtained-linear"), tally.get("obtained-exponential"), tally.get("gave-up"),
		probes, tally.get("probe-obtained"), tally.get("probe-held"), tally.get("probe-taken"), tally.get("probe-free"),
		len(keys), len(noTTL), registrations)
	untaken := soakCheckUntaken(t, kills, tally.untaken())
	t.Logf("figure: %d reservations ran out untaken (the %d probes on a free key); %d helpers were killed while waiting", untaken, tally.get("probe-free"), len(kills))
	if n := tally.get("error"); n > 0 {
		tally.mu.Lock()
		t.Errorf("%d obtains or releases failed with an unexpected error:\n%s", n, strings.Join(tally.errs, "\n"))
		tally.mu.Unlock()
	}
	if probes == 0 || tally.get("obtained-wait") == 0 {
		t.Errorf("the soak did no work: %d probes, %d WaitForRelease obtains", probes, tally.get("obtained-wait"))
	}
}

// soakHelperMain is the body of a helper process (the test binary run with
// soakHelperEnv set; TestMain calls it instead of running tests). It loops
// until its stdin closes: a random key, a random strategy (WaitForRelease
// 35%, LinearBackoff 15%, ExponentialBackoff 10%, a NoRetry probe 40%; the
// helpers that get killed always WaitForRelease), obtain, hold 1 to 10 ms,
// release, 5 to 30 ms away. It writes one report line per event on stdout, at once,
// so that a SIGKILL loses none that happened. It returns the exit code.
func soakHelperMain(spec string) int {
	var addr string
	var id, nkeys int
	if _, err := fmt.Sscanf(spec, "%s %d %d", &addr, &id, &nkeys); err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", soakHelperEnv, spec, err)
		return 2
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin) // returns when the parent closes it or dies
		stop()
	}()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer func() { _ = rdb.Close() }()
	probe := &soakProbeClient{Client: redis.NewClient(&redis.Options{Addr: addr, PoolSize: 2})}
	defer func() { _ = probe.Close() }()
	report := func(format string, args ...any) {
		fmt.Printf(soakLine+format+"\n", args...)
	}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(id)))
	meta := fmt.Sprintf("soak helper %d pid %d", id, os.Getpid())
	for ctx.Err() == nil {
		k := rng.IntN(nkeys)
		opt := &redislock.Options{FenceKey: soakFence(k), Metadata: meta}
		var client redislock.RedisClient = rdb
		kind := ""
		r := rng.IntN(100)
		if id < soakVictims {
			r = 0 // the processes that get killed always wait
		}
		switch {
		case r < 35:
			kind, opt.RetryStrategy = "wait", redislock.WaitForRelease(nil)
		case r < 50:
			kind, opt.RetryStrategy = "linear", redislock.LinearBackoff(5*time.Millisecond)
		case r < 60:
			kind, opt.RetryStrategy = "exponential", redislock.ExponentialBackoff(2*time.Millisecond, 50*time.Millisecond)
		default:
			kind, client = "probe", probe
		}
		if kind == "wait" {
			report("waiting %s", soakKey(k)) // before it registers
		}
		octx, cancel := context.WithTimeout(ctx, 3*time.Second)
		lock, err := redislock.Obtain(octx, client, soakKey(k), soakTTL, opt)
		cancel()
		switch {
		case err == nil && kind == "probe":
			report("probe-obtained %s", soakKey(k))
		case err == nil:
			report("obtained-%s %s", kind, soakKey(k))
		case ctx.Err() != nil:
			return 0 // stopping: the wait was cut short
		case kind == "probe" && errors.Is(err, redislock.ErrNotObtained):
			if line := probe.classify(ctx, soakKey(k)); line != "" {
				report("%s", line)
			}
			continue
		case errors.Is(err, redislock.ErrNotObtained):
			report("gave-up %s %s: %v", kind, soakKey(k), err)
			continue
		default:
			report("error obtain %s %s: %v", kind, soakKey(k), err)
			continue
		}
		hold := time.NewTimer(time.Duration(1+rng.IntN(10)) * time.Millisecond) // the work done under the lock
		select {
		case <-hold.C:
		case <-ctx.Done():
			hold.Stop()
		}
		if err := lock.Release(context.Background()); err != nil {
			report("error release %s %s: %v", kind, soakKey(k), err)
		}
		// Time away from the keys, so that queues empty now and then.
		think := time.NewTimer(time.Duration(5+rng.IntN(25)) * time.Millisecond)
		select {
		case <-think.C:
		case <-ctx.Done():
			think.Stop()
		}
	}
	return 0
}

// soakProbeClient runs each script of the library in MULTI with a GET of
// its first key, so that after a failed obtain it knows the value that
// made it fail: the script changes nothing when it fails.
type soakProbeClient struct {
	*redis.Client

	mu   sync.Mutex
	last *redis.StringCmd // the GET of the latest script call
}

func (c *soakProbeClient) tx(ctx context.Context, keys []string, script func(redis.Pipeliner) *redis.Cmd) *redis.Cmd {
	var cmd *redis.Cmd
	var get *redis.StringCmd
	_, _ = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		cmd = script(p)
		get = p.Get(ctx, keys[0])
		return nil
	})
	c.mu.Lock()
	c.last = get
	c.mu.Unlock()
	return cmd
}

func (c *soakProbeClient) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.tx(ctx, keys, func(p redis.Pipeliner) *redis.Cmd { return p.Eval(ctx, script, keys, args...) })
}

func (c *soakProbeClient) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return c.tx(ctx, keys, func(p redis.Pipeliner) *redis.Cmd { return p.EvalSha(ctx, sha, keys, args...) })
}

// soakReservation matches a key handed over to a waiter (lua/handover.lua):
// "<#id+1>:~<id>:0:", the id ending with its claim window in ms.
var soakReservation = regexp.MustCompile(`^\d+:~[^:]*\.(\d+):0:$`)

// classify names what made the last obtain fail: "probe-held" (a holder's
// value), "probe-taken" (a reservation that its waiter took before it ran
// out) or "probe-free" (a reservation that ran out, or nearly, with
// nobody taking it: the key was free); "" when the soak ended (ctx) while
// it followed a reservation.
func (c *soakProbeClient) classify(ctx context.Context, key string) string {
	c.mu.Lock()
	get := c.last
	c.mu.Unlock()
	v, err := get.Result()
	switch {
	case errors.Is(err, redis.Nil):
		return "error the failed obtain's key " + key + " did not exist"
	case err != nil:
		return "error GET " + key + ": " + err.Error()
	case !soakReservation.MatchString(v):
		return "probe-held " + key
	}
	// Follow the reservation. A woken waiter takes it within a round trip;
	// one that has not taken it when under 5 ms of its life are left never
	// came: the key was free.
	var seen time.Time     // when the reservation was first seen with its PTTL
	var life time.Duration // its PTTL then
	for {
		var val *redis.StringCmd
		var pttl *redis.DurationCmd
		_, _ = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			val = p.Get(ctx, key)
			pttl = p.PTTL(ctx, key)
			return nil
		})
		now, err := val.Result()
		if err != nil && ctx.Err() != nil {
			return "" // stopping: the soak is over
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return "error GET " + key + ": " + err.Error()
		}
		if now != v {
			if !seen.IsZero() && time.Since(seen) >= life-5*time.Millisecond {
				// Made a claim window before it expired (seen + life).
				claim, _ := strconv.Atoi(soakReservation.FindStringSubmatch(v)[1]) // digits, matched
				made := seen.Add(life - time.Duration(claim)*time.Millisecond)
				return "probe-free " + key + " " + v + " " + strconv.FormatInt(made.UnixMicro(), 10)
			}
			return "probe-taken " + key
		}
		if seen.IsZero() {
			seen, life = time.Now(), pttl.Val()
		}
		t := time.NewTimer(time.Millisecond) // polling the reservation
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return "probe-held " + key // stopping: unknown, counted as held
		}
	}
}
