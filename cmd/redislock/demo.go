package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

const (
	// turnHold is how long a worker of the first act holds the lock, and
	// startSettle how much longer worker-1 keeps its first turn, for the
	// first attempts of the others to queue them.
	turnHold    = 20 * time.Millisecond
	startSettle = 100 * time.Millisecond
	// keptTTL is the lease that the second act keeps alive for keptFor.
	keptTTL = 600 * time.Millisecond
	keptFor = 1500 * time.Millisecond
	// leaseTTL is the short lease that worker-A outlives in the third act.
	leaseTTL = 300 * time.Millisecond
	// demoTimeout bounds the whole demo, should a server stop answering.
	demoTimeout = 30 * time.Second
)

const demoHelp = `Runs a short narrated demo of redislock against REDIS_URL, or against an
in-process miniredis when REDIS_URL is not set:

  1. four workers take turns on one lock with WaitForRelease;
  2. a KeepAlive keeps a 600ms lease for 1.5s, then signals its loss when
     the key is taken;
  3. a holder that paused past its lease is refused by fence token;
  4. "redislock run" skips a job that is already running.

Every key it uses contains "demo-" and a random id, and it deletes them
all when it ends. It takes about three seconds.

Miniredis serves clients blocked on a list in no fixed order, where Redis
serves the longest-blocked first: the turns of the first act go strictly
round only on a real server.

Examples:
  redislock demo
  REDIS_URL=redis://127.0.0.1:6379/0 redislock demo`

// runDemo is the "demo" subcommand.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	url := fs.String("redis", "", "Redis `URL` (redis://[user:password@]host:port/db); default $REDIS_URL, and an in-process miniredis when both are empty")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: redislock demo [--redis URL]\n\n%s\n\nFlags:\n", demoHelp)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "redislock demo: unexpected argument %q\n\n", fs.Arg(0))
		fs.Usage()
		return 2
	}

	srv, err := openServer(*url)
	if err != nil {
		fmt.Fprintf(stderr, "redislock demo: %v\n", err)
		return 1
	}
	defer srv.close()

	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
	defer cancel()
	if err := demo(ctx, stdout, srv); err != nil {
		fmt.Fprintf(stderr, "redislock demo: %v\n", err)
		return 1
	}
	return 0
}

// server is the Redis that the demo runs against.
type server struct {
	desc string         // what the first line says
	url  string         // for "redislock run --redis"
	opts *redis.Options // each worker dials a client of its own with a copy

	mr        *miniredis.Miniredis // the in-process server, or nil for a real one
	stopClock func()               // stops the goroutine that moves mr's clock
}

// openServer returns the server at url, or at $REDIS_URL when url is empty,
// or a new in-process miniredis when both are empty.
func openServer(url string) (*server, error) {
	source := "--redis"
	if url == "" {
		url, source = os.Getenv("REDIS_URL"), "REDIS_URL"
	}
	if url == "" {
		mr, err := miniredis.Run()
		if err != nil {
			return nil, fmt.Errorf("start miniredis: %w", err)
		}
		srv := miniredisServer(mr)
		srv.desc += " (REDIS_URL is not set)"
		return srv, nil
	}
	opts, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	// The address and database only: the URL may carry a password.
	return &server{
		desc: fmt.Sprintf("Redis at %s, db %d (from %s)", opts.Addr, opts.DB, source),
		url:  url,
		opts: opts,
	}, nil
}

// miniredisServer returns the server for mr. Miniredis moves key TTLs only
// when told to (FastForward): a goroutine, stopped by close, moves them
// with the wall clock, every 5ms, so that leases expire as on a real
// server.
func miniredisServer(mr *miniredis.Miniredis) *server {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				mr.FastForward(now.Sub(last))
				last = now
			}
		}
	})
	var once sync.Once
	return &server{
		desc: "an in-process miniredis at " + mr.Addr(),
		url:  "redis://" + mr.Addr(),
		opts: &redis.Options{Addr: mr.Addr()},
		mr:   mr,
		stopClock: func() {
			once.Do(func() { close(done) })
			wg.Wait()
		},
	}
}

// newClient returns a client of its own, as a separate process would have.
func (s *server) newClient() *redis.Client {
	opts := *s.opts
	return redis.NewClient(&opts)
}

func (s *server) close() {
	if s.mr != nil {
		s.stopClock()
		s.mr.Close()
	}
}

// demoKeys are the keys of one run of the demo. They share a hash tag with
// a random id, so that a run never meets the keys of another, and so that
// every key made for them (a wait queue, a fence counter) contains the id
// and can be found and deleted at the end.
type demoKeys struct {
	tag                 string // "demo-" and the id
	turns               string // act 1
	report              string // act 2
	ledger, ledgerFence string // act 3
	nightly             string // act 4
}

func newDemoKeys() (demoKeys, error) {
	var id [3]byte
	if _, err := rand.Read(id[:]); err != nil {
		return demoKeys{}, err
	}
	tag := "demo-" + hex.EncodeToString(id[:])
	key := func(name string) string { return "{" + tag + "}:" + name }
	return demoKeys{
		tag:         tag,
		turns:       key("turns"),
		report:      key("report"),
		ledger:      key("ledger"),
		ledgerFence: key("ledger:fence"),
		nightly:     key("nightly"),
	}, nil
}

// demo tells, on w, what happens to a few workers that share locks. It
// fails when the server cannot be reached or a lock does not behave as the
// narrative says. It deletes every key it made before it returns.
func demo(ctx context.Context, w io.Writer, srv *server) (err error) {
	n := &narrator{w: w, start: time.Now()}
	keys, err := newDemoKeys()
	if err != nil {
		return err
	}
	n.line("redislock demo: using %s; keys {%s}:*", srv.desc, keys.tag)
	if srv.mr != nil {
		n.line("note: miniredis moves TTLs only when told (FastForward); the demo moves them with the wall clock.")
	}

	rdb := srv.newClient()
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping %s: %w", srv.opts.Addr, err)
	}
	defer func() {
		deleted, cerr := cleanup(context.WithoutCancel(ctx), rdb, keys.tag)
		if cerr != nil {
			err = errors.Join(err, fmt.Errorf("cleanup: %w", cerr))
			return
		}
		n.line("")
		n.line("cleanup: deleted %d keys matching *%s*; done in %dms", deleted, keys.tag, ms(time.Since(n.start)))
	}()

	for _, act := range []func(context.Context, *narrator, *server, demoKeys) error{turns, keepAlive, fencing, skipRunning} {
		n.line("")
		if err := act(ctx, n, srv, keys); err != nil {
			return err
		}
	}
	return nil
}

// cleanup deletes every key whose name contains tag, and returns how many.
func cleanup(ctx context.Context, rdb *redis.Client, tag string) (int, error) {
	deleted := 0
	iter := rdb.Scan(ctx, 0, "*"+tag+"*", 100).Iterator()
	for iter.Next(ctx) {
		n, err := rdb.Del(ctx, iter.Val()).Result()
		if err != nil {
			return deleted, err
		}
		deleted += int(n)
	}
	return deleted, iter.Err()
}

// turns is the first act: four workers, each with a client of its own,
// take one lock three times each with WaitForRelease. Each Release hands
// the lock to the worker that has waited longest, so the turns go round.
func turns(ctx context.Context, n *narrator, srv *server, keys demoKeys) error {
	const workers, rounds = 4, 3
	n.line("== 1. Fair turns: %d workers take %s %d times each, holding it %v, with WaitForRelease ==", workers, keys.turns, rounds, turnHold)

	var (
		mu    sync.Mutex
		order []string
		waits []time.Duration
		errs  []error
		wg    sync.WaitGroup
	)
	// worker-1 takes the lock first and keeps its first turn until the
	// others have dialled and their first attempts have queued them, so
	// that the turns start from a full queue.
	first := make(chan struct{})
	closeFirst := sync.OnceFunc(func() { close(first) })
	var calling sync.WaitGroup
	calling.Add(workers - 1)
	for i := range workers {
		name := fmt.Sprintf("worker-%d", i+1)
		wg.Go(func() {
			rdb := srv.newClient()
			defer rdb.Close()
			locker := redislock.New(rdb)
			opt := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil), Metadata: name}
			if i > 0 {
				callingDone := sync.OnceFunc(calling.Done)
				defer callingDone()
				if err := rdb.Ping(ctx).Err(); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: %w", name, err))
					mu.Unlock()
					return
				}
				<-first
				callingDone()
			} else {
				defer closeFirst()
			}
			for round := range rounds {
				began := time.Now()
				wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				lock, err := locker.Obtain(wctx, keys.turns, 5*time.Second, opt)
				cancel()
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: obtain %s: %w", name, keys.turns, err))
					mu.Unlock()
					return
				}
				mu.Lock()
				order = append(order, name)
				if round > 0 {
					waits = append(waits, time.Since(began))
				}
				mu.Unlock()
				hold := turnHold
				if i == 0 && round == 0 {
					closeFirst()
					calling.Wait()
					hold += startSettle
				}
				if err := pause(ctx, hold); err != nil {
					_ = lock.Release(context.WithoutCancel(ctx))
					return
				}
				if err := lock.Release(ctx); err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("%s: release %s: %w", name, keys.turns, err))
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	count := map[string]int{}
	repeats := 0
	for i, who := range order {
		count[who]++
		// A worker taking the lock twice running while others still had
		// turns to take would be barging in ahead of them.
		if i > 0 && order[i-1] == who && i < len(order)-rounds {
			repeats++
		}
	}
	for i := range workers {
		if who := fmt.Sprintf("worker-%d", i+1); count[who] != rounds {
			return fmt.Errorf("%s had %d turns, want %d", who, count[who], rounds)
		}
	}
	n.say("turns", "%s", strings.Join(shortNames(order), " "))
	var longest time.Duration
	for _, d := range waits {
		longest = max(longest, d)
	}
	n.say("summary", "every worker had %d turns; %d times a worker took the lock twice running; longest wait after the first turn %dms (a fair queue: %d other holders × %v = %dms)",
		rounds, repeats, ms(longest), workers-1, turnHold, ms(time.Duration(workers-1)*turnHold))
	if srv.mr != nil {
		n.say("note", "miniredis wakes blocked clients in no fixed order (Redis: longest-blocked first), so the turns go strictly round only on a real server: try REDIS_URL=redis://… make demo")
	}
	return nil
}

// shortNames turns "worker-3" into "w3".
func shortNames(names []string) []string {
	out := make([]string, len(names))
	for i, s := range names {
		out[i] = "w" + strings.TrimPrefix(s, "worker-")
	}
	return out
}

// keepAlive is the second act: a job keeps a short lease for longer than
// its TTL with KeepAlive; then the lock is released by someone who has its token (as
// "redislock release" does after a host seems to have crashed) and another
// worker takes it. The keep-alive's next refresh finds it taken, and the
// job's context is cancelled with ErrLockLost as its cause.
func keepAlive(ctx context.Context, n *narrator, srv *server, keys demoKeys) error {
	n.line("== 2. KeepAlive: a %v lease kept for %v, then lost: lock %s ==", keptTTL, keptFor, keys.report)

	rdbJob, rdbOther := srv.newClient(), srv.newClient()
	defer rdbJob.Close()
	defer rdbOther.Close()
	lock, err := redislock.New(rdbJob).Obtain(ctx, keys.report, keptTTL, &redislock.Options{Metadata: "job"})
	if err != nil {
		return fmt.Errorf("job: obtain %s: %w", keys.report, err)
	}
	defer func() { _ = lock.Release(context.WithoutCancel(ctx)) }()
	ka, err := lock.KeepAlive(keptTTL, nil)
	if err != nil {
		return fmt.Errorf("job: keep-alive: %w", err)
	}
	work, cancel := ka.Context(ctx)
	defer cancel()
	n.say("job", "obtained %s with a %v TTL; KeepAlive refreshes it every %v", keys.report, keptTTL, keptTTL/3)

	if err := pause(work, keptFor); err != nil {
		return fmt.Errorf("job: lost the lock while it was kept alive: %w", context.Cause(work))
	}
	left, err := lock.TTL(ctx)
	if err != nil {
		return fmt.Errorf("job: TTL: %w", err)
	}
	if left <= 0 {
		return fmt.Errorf("job: the lock expired after %v although kept alive", keptFor)
	}
	n.say("job", "%v later (%.1f TTLs): still held, %dms left", keptFor, float64(keptFor)/float64(keptTTL), ms(left))

	// The operator's release, with the token that "redislock status" shows.
	other := redislock.New(rdbOther)
	info, err := other.Inspect(ctx, keys.report)
	if err != nil {
		return err
	}
	handle, err := other.Attach([]string{keys.report}, info.Token, info.FenceToken)
	if err != nil {
		return err
	}
	if err := handle.Release(ctx); err != nil {
		return fmt.Errorf("operator: release %s: %w", keys.report, err)
	}
	taken := time.Now()
	thief, err := other.Obtain(ctx, keys.report, 10*time.Second, &redislock.Options{Metadata: "worker-2"})
	if err != nil {
		return fmt.Errorf("worker-2: obtain %s: %w", keys.report, err)
	}
	defer func() { _ = thief.Release(context.WithoutCancel(ctx)) }()
	n.say("operator", "releases %s with its token (as redislock release --token does); worker-2 obtains it", keys.report)

	select {
	case <-work.Done():
	case <-time.After(2 * keptTTL):
		return errors.New("job: the keep-alive did not notice that its lock was taken")
	}
	cause := context.Cause(work)
	if !errors.Is(cause, redislock.ErrLockLost) {
		return fmt.Errorf("job: work ended with %w, want %w", cause, redislock.ErrLockLost)
	}
	n.say("job", "%dms later its work's context is cancelled: %v", ms(time.Since(taken)), cause)
	return nil
}

// fencing is the third act: worker-A pauses past its lease, worker-B takes
// the lock over, and the ledger refuses worker-A's late write because its
// fence token is stale.
func fencing(ctx context.Context, n *narrator, srv *server, keys demoKeys) error {
	n.line("== 3. Fencing: a holder pauses past its %v lease; lock %s, fence key %s ==", leaseTTL, keys.ledger, keys.ledgerFence)

	rdbA, rdbB := srv.newClient(), srv.newClient()
	defer rdbA.Close()
	defer rdbB.Close()
	var book ledger
	opt := func(who string) *redislock.Options {
		return &redislock.Options{FenceKey: keys.ledgerFence, Metadata: who, RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond)}
	}

	lockA, err := redislock.New(rdbA).Obtain(ctx, keys.ledger, leaseTTL, opt("worker-A"))
	if err != nil {
		return fmt.Errorf("worker-A: obtain %s: %w", keys.ledger, err)
	}
	n.say("worker-A", "obtained %s: fence token %d", keys.ledger, lockA.FenceToken())
	if err := write(n, &book, "worker-A", lockA.FenceToken(), "balance=100"); err != nil {
		return fmt.Errorf("worker-A's first write: %w", err)
	}
	n.say("worker-A", "pauses (a GC pause, a stalled VM) for longer than its lease")

	// worker-B waits for the lease to run out (the retry loop ends after
	// a second at most).
	bctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	lockB, err := redislock.New(rdbB).Obtain(bctx, keys.ledger, 10*time.Second, opt("worker-B"))
	if err != nil {
		return fmt.Errorf("worker-B: obtain %s after worker-A's lease expired: %w", keys.ledger, err)
	}
	defer func() { _ = lockB.Release(context.WithoutCancel(ctx)) }()
	n.say("worker-B", "obtained %s once the lease expired: fence token %d, above worker-A's", keys.ledger, lockB.FenceToken())
	if err := write(n, &book, "worker-B", lockB.FenceToken(), "balance=40"); err != nil {
		return fmt.Errorf("worker-B's write: %w", err)
	}

	n.say("worker-A", "wakes up, believes it still holds the lock, and writes")
	if err := write(n, &book, "worker-A", lockA.FenceToken(), "balance=100"); err == nil {
		return errors.New("the ledger accepted worker-A's stale write")
	}
	err = lockA.Refresh(ctx, leaseTTL, nil)
	if !errors.Is(err, redislock.ErrNotObtained) {
		return fmt.Errorf("worker-A: Refresh after losing the lock returned %w, want %w", err, redislock.ErrNotObtained)
	}
	n.say("worker-A", "Refresh: %v: it stops", err)
	value, token := book.state()
	n.say("ledger", "holds %q, written with fence token %d", value, token)
	return nil
}

// skipRunning is the fourth act: two replicas start the same cron job
// with "redislock run" (the very code of the run command, in this
// process); the second finds the lock held and skips the job, with exit
// status 75.
func skipRunning(ctx context.Context, n *narrator, srv *server, keys demoKeys) error {
	n.line("== 4. redislock run: a job already running is skipped; lock %s ==", keys.nightly)

	type result struct {
		code           int
		stdout, stderr bytes.Buffer
	}
	redislockRun := func(res *result, command ...string) {
		args := append([]string{"--redis", srv.url, "--ttl", "5s", keys.nightly, "--"}, command...)
		res.code = runRun(ctx, args, &res.stdout, &res.stderr)
	}

	var first result
	done := make(chan struct{})
	n.say("replica-1", "$ redislock run %s -- sleep 1", keys.nightly)
	go func() {
		defer close(done)
		redislockRun(&first, "sleep", "1")
	}()

	// Wait until replica-1 holds the lock, as the cron schedule would
	// start replica-2 a little later.
	rdb := srv.newClient()
	defer rdb.Close()
	locker := redislock.New(rdb)
	for {
		info, err := locker.Inspect(ctx, keys.nightly)
		if err != nil {
			return err
		}
		if info.Held {
			break
		}
		select {
		case <-done:
			return fmt.Errorf("replica-1: redislock run exited %d before holding the lock: %s", first.code, first.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}

	var second result
	n.say("replica-2", "$ redislock run %s -- echo report", keys.nightly)
	redislockRun(&second, "echo", "report")
	// 75 is EX_TEMPFAIL, the run command's status for a lock held by
	// another.
	if second.code != 75 {
		return fmt.Errorf("replica-2: redislock run exited %d, want 75 (skipped): %s%s", second.code, second.stdout.String(), second.stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(second.stderr.String()), "\n") {
		n.say("replica-2", "%s", line)
	}
	n.say("replica-2", "exit status 75: skipped, the job is already running elsewhere")

	<-done
	if first.code != 0 {
		return fmt.Errorf("replica-1: redislock run exited %d: %s", first.code, first.stderr.String())
	}
	n.say("replica-1", "sleep 1 finished; redislock run released the lock and exited 0")
	return nil
}

// write sends value to the ledger with a fence token and tells the outcome.
func write(n *narrator, book *ledger, who string, fence int64, value string) error {
	if err := book.write(fence, value); err != nil {
		n.say("ledger", "refused stale write %q from %s: %v", value, who, err)
		return err
	}
	n.say("ledger", "accepted write %q from %s (fence token %d)", value, who, fence)
	return nil
}

// ledger is the protected resource. It applies the fencing rule: a write
// whose fence token is lower than the highest it has accepted is refused.
// It is safe for concurrent use.
type ledger struct {
	mu      sync.Mutex
	highest int64
	value   string
}

func (l *ledger) write(fence int64, value string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if fence < l.highest {
		return fmt.Errorf("fence token %d is below %d, the highest accepted", fence, l.highest)
	}
	l.highest, l.value = fence, value
	return nil
}

func (l *ledger) state() (value string, fence int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.value, l.highest
}

// narrator writes the demo's lines, one whole line at a time, for any
// number of goroutines.
type narrator struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
}

// say writes a line stamped with the milliseconds since the start and who
// speaks.
func (n *narrator) say(who, format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.w, "[%4dms] %-9s %s\n", ms(time.Since(n.start)), who, fmt.Sprintf(format, args...))
}

// line writes a line without a stamp.
func (n *narrator) line(format string, args ...any) {
	n.mu.Lock()
	defer n.mu.Unlock()
	fmt.Fprintf(n.w, format+"\n", args...)
}

func ms(d time.Duration) int64 { return d.Milliseconds() }

// pause waits for d, or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
