package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// The demo's keys, all under "demo:".
const (
	jobKey      = "demo:job:lock"
	jobFence    = "demo:job:fence"
	ledgerKey   = "demo:ledger:lock"
	ledgerFence = "demo:ledger:fence"
)

const (
	// jobTTL is long enough that no job lock expires during the first act:
	// its holders release it.
	jobTTL = 2 * time.Second
	// leaseTTL is the short lease that worker-A outlives in the second act.
	leaseTTL = 300 * time.Millisecond
	// demoTimeout bounds the whole demo, should a server stop answering.
	demoTimeout = 30 * time.Second
)

const demoHelp = `Runs a short narrated demo of redislock against REDIS_URL, or against an
in-process miniredis when REDIS_URL is not set: five workers contend for one
job lock, then a holder that paused past its lease is stopped by a fencing
token. It uses keys under "demo:" and takes about a second.

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
	desc string               // what the first line says
	opts *redis.Options       // each worker dials a client of its own with a copy
	mr   *miniredis.Miniredis // the in-process server, or nil for a real one
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
		opts: opts,
	}, nil
}

// miniredisServer returns the server for mr.
func miniredisServer(mr *miniredis.Miniredis) *server {
	return &server{
		desc: "an in-process miniredis at " + mr.Addr(),
		opts: &redis.Options{Addr: mr.Addr()},
		mr:   mr,
	}
}

// newClient returns a client of its own, as a separate process would have.
func (s *server) newClient() *redis.Client {
	opts := *s.opts
	return redis.NewClient(&opts)
}

// elapse lets d pass for the server's key TTLs. Miniredis moves TTLs only
// when told to (FastForward), which takes no time; a real server needs the
// time to pass, with a margin.
func (s *server) elapse(ctx context.Context, d time.Duration) error {
	if s.mr != nil {
		s.mr.FastForward(d)
		return nil
	}
	return pause(ctx, d+50*time.Millisecond)
}

func (s *server) close() {
	if s.mr != nil {
		s.mr.Close()
	}
}

// demo tells, on w, what happens to a few workers that share a lock. It
// fails when the server cannot be reached or the lock does not behave as
// the narrative says.
func demo(ctx context.Context, w io.Writer, srv *server) error {
	n := &narrator{w: w, start: time.Now()}
	n.line("redislock demo: using %s", srv.desc)
	n.line("note: a fence token is max(previous token + 1, the server's TIME in µs), hence numbers like 1764432000000001: tokens only need to increase.")

	rdb := srv.newClient()
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping %s: %w", srv.opts.Addr, err)
	}

	if err := contention(ctx, n, srv); err != nil {
		return err
	}
	if err := fencing(ctx, n, srv); err != nil {
		return err
	}
	n.line("")
	n.line("done in %dms", ms(time.Since(n.start)))
	return nil
}

// contender is one worker of the first act.
type contender struct {
	name     string
	strategy redislock.RetryStrategy
	how      string        // the strategy, in words
	patience time.Duration // the deadline of its context while it waits
	hold     time.Duration // how long it works once it has the lock
}

// contention is the first act: worker-1 takes the job lock, then four
// others try at once. Two wait their turn, two give up.
func contention(ctx context.Context, n *narrator, srv *server) error {
	n.line("")
	n.line("== 1. Five workers, one job: lock %s, fence key %s, TTL %v ==", jobKey, jobFence, jobTTL)

	first := contender{name: "worker-1", strategy: redislock.NoRetry(), how: "once (NoRetry)", patience: time.Second, hold: 300 * time.Millisecond}
	others := []contender{
		{name: "worker-2", strategy: redislock.LinearBackoff(25 * time.Millisecond), how: "every 25ms (LinearBackoff) for up to 2s", patience: 2 * time.Second, hold: 100 * time.Millisecond},
		{name: "worker-3", strategy: redislock.ExponentialBackoff(10*time.Millisecond, 200*time.Millisecond), how: "after 10, 10, 16, 32, … up to 200ms (ExponentialBackoff) for up to 2s", patience: 2 * time.Second, hold: 100 * time.Millisecond},
		{name: "worker-4", strategy: redislock.NoRetry(), how: "once (NoRetry)", patience: 2 * time.Second},
		{name: "worker-5", strategy: redislock.LinearBackoff(25 * time.Millisecond), how: "every 25ms (LinearBackoff) for up to 150ms", patience: 150 * time.Millisecond},
	}

	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []error
		order   []acquisition
		holding = make(chan bool, 1)
	)
	start := func(c contender, obtained chan<- bool) {
		n.say(c.name, "tries to obtain %s %s", jobKey, c.how)
		wg.Go(func() {
			err := contend(ctx, n, srv, c, obtained, func(a acquisition) {
				mu.Lock()
				order = append(order, a)
				mu.Unlock()
			})
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}

	// worker-1 first, so that the others find the lock taken.
	start(first, holding)
	if !<-holding {
		wg.Wait()
		return errors.Join(append(errs, fmt.Errorf("%s did not obtain %s: is a previous demo still holding it? It expires within %v", first.name, jobKey, jobTTL))...)
	}
	for _, c := range others {
		start(c, nil)
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}

	line := ""
	for i, a := range order {
		if i > 0 {
			if a.fence <= order[i-1].fence {
				return fmt.Errorf("fence token of %s (%d) is not above that of %s (%d)", a.who, a.fence, order[i-1].who, order[i-1].fence)
			}
			line += " < "
		}
		line += fmt.Sprintf("%d (%s)", a.fence, a.who)
	}
	n.say("summary", "fence tokens in the order the lock was obtained: %s", line)
	return nil
}

// acquisition records who obtained the job lock, with which fence token.
type acquisition struct {
	who   string
	fence int64
}

// contend runs one worker of the first act: obtain, work, release. It
// sends on obtained, when not nil, whether it got the lock, and calls
// record once it has. Giving up is part of the story, not an error.
func contend(ctx context.Context, n *narrator, srv *server, c contender, obtained chan<- bool, record func(acquisition)) error {
	rdb := srv.newClient()
	defer rdb.Close()
	locker := redislock.New(rdb)

	wctx, cancel := context.WithTimeout(ctx, c.patience)
	defer cancel()
	began := time.Now()
	lock, err := locker.Obtain(wctx, jobKey, jobTTL, &redislock.Options{
		RetryStrategy: c.strategy,
		FenceKey:      jobFence,
		Metadata:      c.name,
	})
	if obtained != nil {
		obtained <- err == nil
	}
	waited := ms(time.Since(began))
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, redislock.ErrNotObtained) && errors.Is(err, context.DeadlineExceeded):
		n.say(c.name, "gave up after %dms, at its deadline: %v", waited, err)
		return nil
	case errors.Is(err, redislock.ErrNotObtained):
		n.say(c.name, "gave up after %dms: the lock is taken: %v", waited, err)
		return nil
	default:
		return fmt.Errorf("%s: obtain %s: %w", c.name, jobKey, err)
	}

	record(acquisition{who: c.name, fence: lock.FenceToken()})
	n.say(c.name, "obtained %s after %dms: fence token %d, metadata %q; works for %v", lock.Key(), waited, lock.FenceToken(), lock.Metadata(), c.hold)
	if err := pause(ctx, c.hold); err != nil {
		return err
	}
	if err := lock.Release(ctx); err != nil {
		return fmt.Errorf("%s: release %s: %w", c.name, jobKey, err)
	}
	n.say(c.name, "released %s", jobKey)
	return nil
}

// fencing is the second act: worker-A pauses past its lease, worker-B takes
// the lock over, and the ledger refuses worker-A's late write because its
// fence token is stale.
func fencing(ctx context.Context, n *narrator, srv *server) error {
	n.line("")
	n.line("== 2. Fencing: a holder pauses past its lease. Lock %s, fence key %s, TTL %v ==", ledgerKey, ledgerFence, leaseTTL)

	rdbA, rdbB := srv.newClient(), srv.newClient()
	defer rdbA.Close()
	defer rdbB.Close()
	var book ledger

	lockA, err := redislock.New(rdbA).Obtain(ctx, ledgerKey, leaseTTL, &redislock.Options{FenceKey: ledgerFence, Metadata: "worker-A"})
	if err != nil {
		return fmt.Errorf("worker-A: obtain %s: %w (is a previous demo still holding it? It expires within %v)", ledgerKey, err, leaseTTL)
	}
	n.say("worker-A", "obtained %s for %v: fence token %d", ledgerKey, leaseTTL, lockA.FenceToken())
	if err := write(n, &book, "worker-A", lockA.FenceToken(), "balance=100"); err != nil {
		return fmt.Errorf("worker-A's first write: %w", err)
	}

	n.say("worker-A", "pauses (a GC pause, a stalled VM) for longer than its %v lease", leaseTTL)
	if srv.mr != nil {
		n.say("miniredis", "FastForward(%v): miniredis moves TTLs only when told; the lease expires", leaseTTL)
	} else {
		n.say("server", "%v pass; the lease expires", leaseTTL)
	}
	if err := srv.elapse(ctx, leaseTTL); err != nil {
		return err
	}

	// On a real server the expiry may lag a little behind the sleep.
	bctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	lockB, err := redislock.New(rdbB).Obtain(bctx, ledgerKey, leaseTTL, &redislock.Options{
		RetryStrategy: redislock.LinearBackoff(10 * time.Millisecond),
		FenceKey:      ledgerFence,
		Metadata:      "worker-B",
	})
	if err != nil {
		return fmt.Errorf("worker-B: obtain %s after worker-A's lease expired: %w", ledgerKey, err)
	}
	n.say("worker-B", "obtained %s: fence token %d, above worker-A's %d", ledgerKey, lockB.FenceToken(), lockA.FenceToken())
	if err := write(n, &book, "worker-B", lockB.FenceToken(), "balance=40"); err != nil {
		return fmt.Errorf("worker-B's write: %w", err)
	}

	n.say("worker-A", "wakes up, believes it still holds the lock, and writes")
	if err := write(n, &book, "worker-A", lockA.FenceToken(), "balance=100"); err == nil {
		return errors.New("the ledger accepted worker-A's stale write")
	}

	err = lockA.Refresh(ctx, leaseTTL, nil)
	if !errors.Is(err, redislock.ErrNotObtained) {
		return fmt.Errorf("worker-A: Refresh after losing the lock returned %v, want %v", err, redislock.ErrNotObtained)
	}
	n.say("worker-A", "Refresh: %v (the lease is gone: stop working)", err)
	err = lockA.Release(ctx)
	if !errors.Is(err, redislock.ErrLockNotHeld) {
		return fmt.Errorf("worker-A: Release after losing the lock returned %v, want %v", err, redislock.ErrLockNotHeld)
	}
	n.say("worker-A", "Release: %v (worker-B's lock is left alone)", err)

	if err := lockB.Release(ctx); err != nil {
		return fmt.Errorf("worker-B: release %s: %w", ledgerKey, err)
	}
	n.say("worker-B", "released %s", ledgerKey)
	value, token := book.state()
	n.say("ledger", "holds %q, written with fence token %d", value, token)
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
