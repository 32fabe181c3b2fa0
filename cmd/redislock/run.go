package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

const runHelp = `usage: redislock run [flags] KEY [--] COMMAND [ARG...]
       redislock run [flags] KEY -c 'SHELL COMMAND'

Runs COMMAND while holding the lock KEY, as flock(1) does on one machine:
obtains the lock, starts COMMAND, keeps the lock alive while COMMAND runs
(refreshing it every TTL/3), releases it when COMMAND exits, and exits with
COMMAND's status. Flags may come before or after KEY; the first argument
after KEY that is not a flag starts COMMAND (use -- when it starts with -).
With -c, COMMAND is /bin/sh -c 'SHELL COMMAND' (flock's -c uses $SHELL).

By default (-n) a lock held by another is not waited for: redislock exits 75
at once, saying who holds it (-q: silently). With --wait it waits: waiters
queue in Redis and are woken, in arrival order, by the release of a holder
that waited too; a release by another holder, or its expiry, is noticed
within a second. While waiting, a Redis that cannot be reached (refused
connections, a restart) is tried again until the wait runs out.

Once per fire (a job that cron starts on several machines): a fast job
can still run twice when the machines fire a little apart (a clock or a
cron behind): the first run releases KEY before the second starts.
--min-hold DURATION keeps KEY held for DURATION after it was obtained,
however soon COMMAND exits: a run that starts up to DURATION later is
refused (exit 75, or -E's code). Give it more than the machines can be
apart, and less than the time between two fires less that much, or the
next fire is refused too. --once-per PERIOD takes instead a key per slot
of PERIOD, KEY:START (START the slot's start in UTC; for a PERIOD that
divides a day, the slots start at UTC midnight), kept until a period past
the slot's end: COMMAND runs at most once per slot, however far apart the
machines start it within the slot. Give the schedule's period (an hourly
job: --once-per 1h) on a schedule that starts each slot ("0 * * * *").
REDISLOCK_KEY is then KEY:START. Neither goes with --wait (a run that
waited would run COMMAND again after the other ran it), nor --once-per
with --limit or -s, nor --min-hold with -s. A run that dies leaves KEY
held until its lease ends, not until its hold does.

With --limit N, KEY is a counting semaphore instead of a lock: COMMAND runs
while fewer than N jobs hold a permit of KEY (at most N at once, across
machines), and the permit is kept alive, released and lost as the lock
would be. A permit expires by itself at its TTL when its holder is gone.
--wait queues as for a lock: the release of a holder that waited too hands
its permit to the job that has waited longest. Every job should give the
same N (a job with a smaller N waits until fewer than its own N hold KEY).
"redislock status KEY" lists the holders.

Quorum (--redis given 3, 5 or more times, an odd number, one independent
master each): the lock is taken on a majority of the masters at once (the
library's Quorum; docs/quorum.md), kept alive and released there; a
minority of them may be down or restart, and --fence-key's tokens still
only grow. --max-ttl (default 1m) bounds --ttl: give every run on the
same masters the same --max-ttl, since a master that restarted without
its data takes nothing for that long (masters with appendonly yes and
appendfsync always keep their data). --wait polls, every second at most.
--limit, --shared, --min-hold and --once-per are refused. There is no
watch of a server (below): a restart of one master loses no lock. Fewer
than a majority of the masters answering exits 69.

Shared runs (-s, --shared, flock's -s): any number of shared runs of KEY
run at once, and none while an exclusive run (the default, -x) holds KEY:
an exclusive run is refused, or with --wait waits until the last shared
run has ended (new shared runs wait behind it); a shared run beside an
exclusive one is refused, or with --wait looks again, every second at
most, until KEY is free. A shared hold expires by itself at its TTL when
its run is gone; "redislock status KEY" lists them.

flock's habits: --timeout is --wait; -x (-e, --exclusive) is the default;
-o (--close) changes nothing (COMMAND never holds the lock: redislock
does); -V prints the version.

COMMAND's environment gets:
  REDISLOCK_KEY          KEY
  REDISLOCK_TOKEN        the lock's token (for "redislock release")
  REDISLOCK_FENCE_TOKEN  with --fence-key: this acquisition's fencing token, greater
                         than every earlier holder's; stamp writes with it, so that
                         the resource can refuse those of a holder that lost the lock
It does not get $REDIS_PASSWORD, $REDISCLI_AUTH, nor a $REDIS_URL that holds
a password, which redislock itself reads (--keep-credentials passes them on).

Lock lost: COMMAND is dead before the lease it holds can expire. If Redis
cannot be reached to renew the lease, COMMAND's process group gets SIGTERM
--grace before the lease would end and SIGKILL a margin (TTL/50+2ms) before
it; if a refresh finds the lock expired or taken (deleted by "redislock
release", say), SIGTERM at once and SIGKILL after --grace, or earlier if the
lease would have ended before. Either way redislock exits 76. A release or
takeover by another is found by the next refresh, up to TTL/3 later: until
then COMMAND runs on. A loss found only by the release after COMMAND exited
also exits 76: the job ran partly unprotected.

Redis restarted, or the connection broken: redislock keeps a connection
of its own blocked on the server that holds KEY. When it breaks, redislock
reaches the server again (every 10 ms for 10 seconds) and checks the
lock at once: one lost to a restart without persistence (the server's
run_id changes) stops COMMAND as above, long before the next refresh. A
run that obtains the lock from a server up for less than 2 seconds waits a
second before it starts COMMAND, for a run from before a restart to find
its lock gone first. A restart that redislock cannot see (its connection goes through
something that hides it) is found by the next refresh: only fencing
tokens (--fence-key) protect the resource then.

Signals: COMMAND runs in a process group of its own. SIGINT, SIGTERM, SIGHUP,
SIGQUIT, SIGUSR1 and SIGUSR2 sent to redislock are forwarded to that group,
each followed by SIGCONT (a stopped command could not act on it), and the
lock is released once COMMAND has exited. A signal while waiting for the
lock ends the wait.

Terminal: when redislock runs in the foreground of a terminal, COMMAND's
group gets the terminal while it runs (it can read it; Ctrl-C and Ctrl-\ go
to COMMAND), and redislock takes it back after. A COMMAND stopped by Ctrl-Z
(SIGTSTP) is continued at once: stopped, it would hold the lock for ever. One
stopped by SIGSTOP stays stopped, lock held, until SIGCONT.

redislock killed (SIGKILL, a crash): a watcher process that redislock starts
beside COMMAND sees it die and kills COMMAND's process group (SIGKILL), so
nothing COMMAND started works on unprotected. Processes that left the group
(setsid, daemons) escape it: under systemd use KillMode=control-group (the
default), or run redislock in a cgroup of its own (systemd-run --scope).

Exit status:
  COMMAND's    COMMAND ran: its exit code, or 128+N if signal N killed it
  75           the lock was held by another and not obtained (within --wait);
               change it with -E (--conflict-exit-code)
  76           the lock was lost, or could not be renewed in time, while COMMAND
               ran (COMMAND was stopped)
  69           Redis could not be reached or failed (refused or timed out,
               TLS or authentication refused, a Redis error, a reply that is
               not Redis's): nothing ran; change it with --redis-error-exit-code
  126, 127     COMMAND could not be run, or was not found (nothing was locked)
  128+N        interrupted by signal N while waiting for the lock
  2            usage error
  1            other failures: a URL that does not parse, a file that cannot be
               read (--password-file, --tls-*)

Examples:
  # one replica at a time runs the nightly report; the others skip it quietly
  redislock run -q nightly-report -- ./report.sh --date today

  # wait up to 5 minutes for the lock; treat "busy" as success in cron
  redislock run -w 300 -E 0 backup -c 'pg_dump -f /backup/db.sql'

  # wait as long as it takes, and log obtained/refreshed/released
  redislock run --wait forever -v deploy -- ./deploy.sh

  # fencing: the job stamps its writes with the fencing token
  redislock run --fence-key '{migrate}:fence' '{migrate}:lock' -- \
      sh -c 'migrate --fence-token "$REDISLOCK_FENCE_TOKEN"'

  # many readers at once, never beside the nightly rebuild (flock -s / -x)
  redislock run -s catalog -- ./read-catalog.sh
  redislock run -w 600 catalog -- ./rebuild-catalog.sh

  # at most 4 encoders at once across the fleet, waiting for a free slot
  redislock run --limit 4 --wait forever encode -- ./encode.sh input.mp4

  # cron on every replica at 02:00: the first to start runs the report, a
  # replica whose clock is up to 10 minutes behind finds it done
  redislock run -q --min-hold 10m nightly-report -- ./report.sh
  # at most once per hour, however far apart the replicas start it
  redislock run -q --once-per 1h hourly-sync -- ./sync.sh

  # on a quorum of three independent masters (Redlock's setting), fenced
  redislock run --redis redis://10.0.0.1:6379 --redis redis://10.0.0.2:6379 \
      --redis redis://10.0.0.3:6379 --fence-key job:fence job -- ./job

  # on a Cluster (a lock key and its fence key need the same {hash tag})
  redislock run --cluster --redis redis://10.0.0.1:7000,10.0.0.2:7000 '{job}:lock' -- ./job`

// Bounds of "run"'s durations.
const (
	// minRunTTL: each lease must outlast the start of the keep-alive and
	// leave time to retry a refresh.
	minRunTTL = 100 * time.Millisecond
	// redisTimeout bounds each single call to Redis outside the wait: an
	// obtain without --wait, the release, the look at the holder.
	redisTimeout = 5 * time.Second
	// defaultGrace is --grace unless TTL/3 is shorter.
	defaultGrace = 10 * time.Second
	// forever stands for --wait forever: the library needs a deadline.
	forever = 100 * 365 * 24 * time.Hour
)

// runOptions are the flags of "run".
type runOptions struct {
	ttl          *time.Duration
	grace        *time.Duration
	wait         waitValue
	nonblock     bool
	quiet        bool
	verbose      bool
	shell        string
	fenceKey     string
	metadata     string
	conflictCode int
	conn         *connFlags
	// limit, when above 0 (--limit N), makes KEY a counting semaphore
	// (consul lock -n): obtain takes one of N permits instead of the lock,
	// and the rest of run holds the permit as it would the lock.
	limit int
	// shared (--shared, flock's -s) takes a shared hold of KEY instead of
	// the lock (shared.go); exclusive (-x) is the default, said aloud.
	shared, exclusive bool
	// closeFD is flock's -o, accepted: it changes nothing here.
	closeFD bool
	// version (-V) prints the version instead of running anything.
	version bool
	// keepCredentials passes the password variables on to COMMAND.
	keepCredentials bool
	// minHold (--min-hold) keeps KEY held that long after the obtain,
	// however soon COMMAND exits.
	minHold *time.Duration
	// oncePer (--once-per), when above 0, takes the key of the slot of
	// that period instead of KEY (redislock.Client.ObtainSlot).
	oncePer *time.Duration
	// maxTTL (--max-ttl) is the MaxTTL of a quorum (several --redis);
	// maxTTLSet says whether it was given.
	maxTTL    *time.Duration
	maxTTLSet bool
}

// held is what "run" holds while its command runs: a lock, or with
// --limit a permit of a semaphore.
type held interface {
	Key() string
	Token() string
	FenceToken() int64
	KeepAlive(ttl time.Duration, opt *redislock.KeepAliveOptions) (*redislock.KeepAlive, error)
	Release(ctx context.Context) error
}

// newRunFlags defines the flags of "run". It is also what the completion
// scripts list.
func newRunFlags() (*flag.FlagSet, *runOptions, aliases) {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	o := &runOptions{}
	short := aliases{}
	o.ttl = durationFlag(fs, "ttl", 30*time.Second, "`TTL` of the lock, renewed every TTL/3 while COMMAND runs; at least "+minRunTTL.String())
	fs.Var(&o.wait, "wait", "how long to wait for a lock held by another: `SECONDS`, a duration (30s, 2m), or forever (default 0: do not wait)")
	fs.BoolVar(&o.nonblock, "nonblock", false, "do not wait for a lock held by another (the default; flock's -n)")
	o.grace = durationFlag(fs, "grace", defaultGrace, "`DURATION` from SIGTERM to SIGKILL when the lock is lost; at most TTL/2 (default 10s, or TTL/3 if shorter)")
	fs.IntVar(&o.conflictCode, "conflict-exit-code", exitConflict, "exit `CODE` when the lock is not obtained (within --wait)")
	fs.StringVar(&o.shell, "command", "", "run `SHELL-COMMAND` with /bin/sh -c, instead of COMMAND")
	fs.BoolVar(&o.quiet, "quiet", false, "say nothing when the lock is held by another")
	fs.BoolVar(&o.verbose, "verbose", false, "report the lock obtained, refreshed and released, with its fencing token, on stderr")
	fs.StringVar(&o.fenceKey, "fence-key", "", "fencing counter `KEY`: sets REDISLOCK_FENCE_TOKEN (on a Cluster, in KEY's hash slot)")
	fs.StringVar(&o.metadata, "metadata", "", "`TEXT` stored with the lock, shown by status (default hostname:pid)")
	o.minHold = durationFlag(fs, "min-hold", 0, "keep KEY held for `DURATION` after it was obtained, however soon COMMAND exits: a run that starts up to DURATION later is refused (see Once per fire)")
	o.oncePer = durationFlag(fs, "once-per", 0, "lock the slot of `PERIOD` that now falls in, KEY:START, kept until a period past the slot's end: COMMAND runs once per slot (see Once per fire)")
	fs.IntVar(&o.limit, "limit", 0, "run while fewer than `N` jobs hold KEY, a counting semaphore of N permits (default 0: KEY is a lock, one job)")
	fs.BoolVar(&o.shared, "shared", false, "take a shared hold of KEY: shared runs run together, never beside an exclusive one (flock's -s; see Shared runs)")
	fs.BoolVar(&o.exclusive, "exclusive", false, "take KEY exclusively: the default (flock's -x)")
	fs.BoolVar(&o.closeFD, "close", false, "accepted for flock's sake; changes nothing: COMMAND never holds the lock, redislock does (flock's -o)")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	fs.BoolVar(&o.keepCredentials, "keep-credentials", false, "pass $REDIS_PASSWORD, $REDISCLI_AUTH and a $REDIS_URL that holds a password on to COMMAND (by default it does not get them)")
	o.maxTTL = durationFlag(fs, "max-ttl", defaultMaxTTL, "on a quorum (several --redis), the longest `TTL` of its locks, the same for every run on those masters: a master that restarted without its data takes nothing for that long (see Quorum)")
	o.conn = addConnFlags(fs)
	short.alias(fs, "w", "wait")
	short.alias(fs, "timeout", "wait")
	short.alias(fs, "s", "shared")
	short.alias(fs, "x", "exclusive")
	short.alias(fs, "e", "exclusive")
	short.alias(fs, "o", "close")
	short.alias(fs, "V", "version")
	short.alias(fs, "n", "nonblock")
	short.alias(fs, "E", "conflict-exit-code")
	short.alias(fs, "c", "command")
	short.alias(fs, "q", "quiet")
	short.alias(fs, "v", "verbose")
	fs.Usage = func() {
		_, _ = fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", runHelp)
		printFlags(fs.Output(), fs, short)
		_, _ = fmt.Fprintf(fs.Output(), "\n%s\n", connHelp)
	}
	return fs, o, short
}

// forwarded are the signals that "run" forwards to its command's process
// group; the first four end the wait for the lock when they come before.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// ignoredAtStart are the signals that redislock was started with ignored,
// as nohup(1) does with SIGHUP and a shell with SIGINT for a background
// job, read before anything asks for signals: redislock leaves them
// ignored, and its command inherits that.
var ignoredAtStart = func() map[os.Signal]bool {
	m := make(map[os.Signal]bool)
	for _, sig := range forwarded {
		if signal.Ignored(sig) {
			m[sig] = true
		}
	}
	return m
}()

// notIgnored returns the signals of sigs that redislock was not started
// with ignored.
func notIgnored(sigs ...os.Signal) []os.Signal {
	var out []os.Signal
	for _, sig := range sigs {
		if !ignoredAtStart[sig] {
			out = append(out, sig)
		}
	}
	return out
}

// runRun is the "run" subcommand. It handles signals itself: ctx is used
// for its values only.
func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	const prog = "redislock run"
	fs, o, _ := newRunFlags()
	key, present, command, code, ok := parseRunArgs(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if o.version {
		return runVersion(ctx, nil, stdout, stderr)
	}
	if !flagSet(fs, "grace") {
		*o.grace = min(defaultGrace, *o.ttl/3)
	}
	o.maxTTLSet = flagSet(fs, "max-ttl")
	if msg := checkRunArgs(key, present, command, o); msg != "" {
		return usageFailure(stderr, "run", msg)
	}
	if o.shell != "" {
		command = []string{"/bin/sh", "-c", o.shell}
	}
	if !flagSet(fs, "metadata") {
		o.metadata = defaultMetadata()
	}
	path, status, err := lookCommand(command[0])
	if err != nil {
		_, _ = fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return status
	}

	// Until the command starts, a terminating signal cancels what is under
	// way; after that, the loop of supervise forwards them.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, notIgnored(append(forwarded, syscall.SIGTSTP, syscall.SIGCONT)...)...)
	defer signal.Stop(sigs)
	base := context.WithoutCancel(ctx)
	wctx, stopWatch := watchSignals(base, sigs)

	r := &runner{
		prog: prog, key: key, ttl: *o.ttl, grace: *o.grace, stderr: stderr,
		quiet: o.quiet, verbose: o.verbose, events: noEvents{},
		limit: o.limit, shared: o.shared, keepCredentials: o.keepCredentials,
		errorCode: o.conn.errorCode, minHold: *o.minHold, oncePer: *o.oncePer,
	}
	if r.oncePer > 0 {
		// The key that messages name until the obtain says which it took.
		r.job = key
		r.key, _ = redislock.SlotKey(key, r.oncePer, time.Now())
	}
	if o.verbose {
		r.events = &verboseEvents{say: r.say, limit: o.limit, shared: o.shared}
	}
	waiting := o.wait.forever || o.wait.d > 0
	var until time.Time
	switch {
	case o.wait.forever:
		until = time.Now().Add(forever)
	case waiting:
		until = time.Now().Add(o.wait.d)
	}
	var note func(string, ...any)
	if o.verbose {
		note = r.say
	}
	if o.conn.quorum() {
		q, code, ok := o.conn.dialQuorum(wctx, prog, stderr, until, note)
		if !ok {
			if sig, ok := stopWatch(); ok {
				return r.interruptedWaiting(sig)
			}
			return code
		}
		defer q.close()
		if r.quorum, err = redislock.NewQuorum(q.redisClients(), &redislock.QuorumOptions{MaxTTL: *o.maxTTL}); err != nil {
			r.say("%v", err)
			return exitUsage
		}
		r.masters = q
	} else {
		rdb, e, code, ok := o.conn.dial(wctx, prog, stderr, until, note)
		if !ok {
			if sig, ok := stopWatch(); ok {
				return r.interruptedWaiting(sig)
			}
			return code
		}
		defer func() { _ = rdb.Close() }()
		r.rdb, r.endpoint = rdb, e
	}

	lock, code, ok := r.obtain(wctx, until, &o.wait, o.fenceKey, o.metadata, o.conflictCode)
	if ok && r.quorum == nil {
		// A server that has just started may have restarted empty under
		// a run that has not seen it yet (serverwatch.go).
		var uptime time.Duration
		r.runID, uptime = serverStart(wctx, r.rdb, r.key)
		if uptime >= 0 && uptime < restartRecent {
			r.holdBack = restartHoldBack
		}
	}
	if sig, interrupted := stopWatch(); interrupted {
		_ = r.release(base, lock)
		return r.interruptedWaiting(sig)
	}
	if !ok {
		return code
	}
	return r.supervise(base, lock, path, command, sigs, stdout)
}

// checkRunArgs returns what is wrong with "run"'s arguments, or "".
func checkRunArgs(key string, present bool, command []string, o *runOptions) string {
	ttl, grace := *o.ttl, *o.grace
	switch {
	case !present && o.shell == "":
		return "missing KEY and COMMAND"
	case !present:
		return "missing KEY"
	case key == "":
		return "KEY is empty"
	case o.shell != "" && len(command) > 0:
		return fmt.Sprintf("-c gives the whole command: nothing may follow KEY (got %q)", command[0])
	case o.shell == "" && len(command) == 0:
		return "missing COMMAND after KEY " + key
	case ttl < minRunTTL:
		return fmt.Sprintf("--ttl %v is below %v", ttl, minRunTTL)
	case o.wait.d < 0:
		return fmt.Sprintf("--wait %v is negative", o.wait.d)
	case o.nonblock && (o.wait.forever || o.wait.d > 0):
		return fmt.Sprintf("-n (--nonblock) contradicts --wait %v", &o.wait)
	case grace < 0:
		return fmt.Sprintf("--grace %v is negative", grace)
	case grace > ttl/2:
		return fmt.Sprintf("--grace %v is more than half the --ttl %v: COMMAND is stopped --grace before its lease ends, and the rest of the lease is the time a refresh has to succeed", grace, ttl)
	case o.limit < 0:
		return fmt.Sprintf("--limit %d is negative", o.limit)
	case o.conflictCode < 0 || o.conflictCode > 255:
		return fmt.Sprintf("--conflict-exit-code %d is not in 0..255", o.conflictCode)
	case o.shared && o.exclusive:
		return "-s (--shared) contradicts -x (--exclusive)"
	case o.shared && o.limit > 0:
		return "--shared and --limit: KEY is a lock (shared or exclusive) or a semaphore, not both"
	case o.shared && o.fenceKey != "":
		return "--fence-key cannot be used with --shared: shared runs get no fencing token (exclusive runs are the writers)"
	case *o.minHold < 0:
		return fmt.Sprintf("--min-hold %v is negative", *o.minHold)
	case *o.oncePer < 0:
		return fmt.Sprintf("--once-per %v is negative", *o.oncePer)
	case *o.oncePer > 0 && *o.oncePer < minRunTTL:
		return fmt.Sprintf("--once-per %v is below %v", *o.oncePer, minRunTTL)
	case o.shared && *o.minHold > 0:
		return "--min-hold cannot be used with --shared: shared holds end when their runs do"
	case o.shared && *o.oncePer > 0, o.limit > 0 && *o.oncePer > 0:
		return "--once-per takes a lock of its own for each slot: not with --shared or --limit"
	case (*o.minHold > 0 || *o.oncePer > 0) && (o.wait.forever || o.wait.d > 0):
		return "--min-hold and --once-per cannot be used with --wait: a run that waited would run COMMAND again after the run that held KEY"
	}
	if msg := o.conn.check(); msg != "" {
		return msg
	}
	return checkQuorumRun(o)
}

// runner is one "run": the lock's settings and where to report.
type runner struct {
	prog   string
	key    string
	ttl    time.Duration
	grace  time.Duration
	stderr io.Writer
	quiet  bool
	// limit above 0: KEY is a semaphore of limit permits (--limit).
	limit int
	// shared: the run takes a shared hold of KEY (--shared).
	shared bool
	// keepCredentials: COMMAND gets the password variables (--keep-credentials).
	keepCredentials bool
	// errorCode: the exit status when Redis fails (--redis-error-exit-code).
	errorCode int
	// minHold (--min-hold): the obtain's Options.MinHold.
	minHold time.Duration
	// oncePer (--once-per), when above 0: the lock is the slot's of that
	// period, of the job named job; key is the slot's key, set by the
	// obtain (before, the one the clock reads).
	oncePer time.Duration
	job     string
	// holdUntil is when the release stops leaving the key held (MinHold,
	// the slot): zero without.
	holdUntil time.Time
	// verbose: events go to stderr, and refreshes are looked for on a
	// ticker too, to be told as they happen.
	verbose bool
	events  lockEvents

	rdb      redis.UniversalClient
	endpoint *endpoint // what rdb reached: the watch makes its own client of it
	// quorum, instead of rdb, when --redis names several masters: the
	// lock is taken on a majority of masters (no watch of a server).
	quorum  *redislock.Quorum
	masters *quorumConn
	// runID is the run_id of the server that holds KEY, read after the
	// obtain ("" when it cannot be read).
	runID string
	// holdBack, when above 0, is how long the run holds the lock before it
	// starts COMMAND: the server had just started when it was obtained.
	holdBack time.Duration
}

// say writes one line on stderr, prefixed with the program's name.
func (r *runner) say(format string, args ...any) {
	_, _ = fmt.Fprintf(r.stderr, "%s: %s\n", r.prog, fmt.Sprintf(format, args...))
}

// obtain takes the lock, waiting until until when wait asks for it, and
// trying again meanwhile after errors that may pass. On failure it has
// said why, and returns the exit code.
func (r *runner) obtain(ctx context.Context, until time.Time, wait *waitValue, fenceKey, metadata string, conflictCode int) (held, int, bool) {
	waiting := !until.IsZero()
	opt := &redislock.Options{Metadata: metadata, FenceKey: fenceKey, MinHold: r.minHold}
	if waiting && r.quorum == nil {
		// Locks, permits and read holds alike: the release of a holder
		// that waited too hands over to the longest waiter.
		opt.RetryStrategy = redislock.WaitForRelease(nil)
	}
	var locker *redislock.Client
	if r.quorum == nil {
		locker = redislock.New(r.rdb)
	}
	take := func(ctx context.Context) (held, error) {
		switch {
		case r.quorum != nil:
			// One attempt: a wait polls in the loop below, which tells a
			// lock held from masters failing at each attempt.
			lock, err := r.quorum.Obtain(ctx, r.key, r.ttl, opt)
			if err != nil {
				return nil, err
			}
			return lock, nil
		case r.limit > 0:
			p, err := locker.Semaphore(r.key, r.limit).Acquire(ctx, r.ttl, opt)
			if err != nil {
				return nil, err
			}
			return p, nil
		case r.shared:
			return r.takeShared(ctx, locker, opt)
		}
		var lock *redislock.Lock
		var err error
		began := time.Now()
		if r.oncePer > 0 {
			// The slot's lock comes with a lease of the period, which the
			// keep-alive renews to the TTL; its release leaves the key
			// until a period past the slot's end.
			if lock, err = locker.ObtainSlot(ctx, r.job, r.oncePer, opt); err == nil {
				r.key = lock.Key()
				_, end := redislock.SlotKey(r.job, r.oncePer, began)
				r.holdUntil = end.Add(r.oncePer)
			}
		} else {
			lock, err = locker.Obtain(ctx, r.key, r.ttl, opt)
		}
		if err != nil {
			return nil, err
		}
		if until := began.Add(r.minHold); until.After(r.holdUntil) {
			r.holdUntil = until
		}
		if err := r.excludeShared(ctx, locker, lock, &redislock.Options{Metadata: metadata, RetryStrategy: opt.RetryStrategy}); err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), redisTimeout)
			_ = lock.Release(rctx) // not released, it expires at its TTL
			cancel()
			return nil, err
		}
		return lock, nil
	}
	pause := 50 * time.Millisecond
	for {
		deadline := until
		if !waiting || r.quorum != nil && time.Now().Add(redisTimeout).Before(until) {
			deadline = time.Now().Add(redisTimeout)
		}
		octx, cancel := context.WithDeadline(ctx, deadline)
		lock, err := take(octx)
		cancel()
		invalid := errors.Is(err, redislock.ErrInvalidKey) || errors.Is(err, redislock.ErrCrossSlot) || errors.Is(err, redislock.ErrInvalidTTL) || errors.Is(err, redislock.ErrInvalidLimit)
		// On a quorum, not obtained because masters failed (not because
		// others hold it) is Redis failing; but an attempt cut short by
		// the end of --wait is a wait that ran out.
		failed := r.quorum != nil && mastersFailed(err) && !(waiting && !time.Now().Before(until) && errors.Is(err, context.DeadlineExceeded))
		notObtained := errors.Is(err, redislock.ErrNotObtained) && !failed
		// A shared run that found KEY held by an exclusive one looks again
		// (nothing wakes it), as after an error that may pass; so does a
		// run waiting on a quorum (where nothing wakes it either).
		again := errors.Is(err, errExclusiveHeld) || r.quorum != nil && notObtained || !notObtained && !invalid && retryable(err)
		switch {
		case err == nil:
			return lock, 0, true
		case ctx.Err() != nil:
			return nil, 0, false // interrupted: the caller says so
		case waiting && again && time.Now().Add(pause).Before(until):
			r.events.retrying(fmt.Sprintf("obtain %s", r.key), err, until)
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			pause = min(2*pause, time.Second)
			continue
		case notObtained:
			by, err := r.holder(ctx, locker)
			if errors.Is(err, redislock.ErrWrongType) {
				// Not a hold: KEY is something else (the first attempt, a
				// plain SET NX, saw it only as taken).
				r.say("obtain %s: %v", r.key, err)
				return nil, r.errorCode, false
			}
			if !r.quiet {
				within := ""
				if waiting {
					within = " within " + wait.String()
				}
				r.say("%s is held%s: not obtained%s", r.key, by, within)
			}
			return nil, conflictCode, false
		case invalid:
			r.say("%v", err)
			return nil, exitUsage, false
		}
		r.say("obtain %s: %v", r.key, err)
		return nil, r.errorCode, false
	}
}

// holder describes who holds key, for the message of a lock not obtained:
// " by METADATA (expires in 9.8s)", " by 2 shared runs: …" for an
// exclusive run that shared runs keep out, or "" when that cannot be read;
// and a *redislock.WrongTypeError when KEY is not a string (a hash, a
// semaphore's sorted set): nothing holds the lock, KEY is something else.
func (r *runner) holder(ctx context.Context, locker *redislock.Client) (string, error) {
	ictx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	if r.quorum != nil {
		return r.masters.holder(ictx, r.key), nil
	}
	if r.limit > 0 {
		return r.permitHolders(ictx, locker), nil
	}
	info, err := locker.Inspect(ictx, r.key)
	if err != nil {
		return "", err
	}
	if info.Held && info.Foreign && info.Value == "" {
		// Not a string: no lock holds KEY, something else does.
		typ, _ := r.rdb.Type(ictx, r.key).Result()
		return "", &redislock.WrongTypeError{Key: r.key, Type: typ, Want: "string"}
	}
	if !info.Held {
		if r.shared {
			return "", nil
		}
		return describeShared(ictx, r.rdb, r.key), nil
	}
	s := ""
	if info.Metadata != "" {
		s = fmt.Sprintf(" by %q", info.Metadata)
	}
	if info.TTL > 0 {
		s += fmt.Sprintf(" (expires in %v)", info.TTL.Round(time.Millisecond))
	}
	return s, nil
}

// permitHolders describes the holders of the semaphore KEY, for the message
// of a permit not obtained: " by 3 jobs: "a:1", "b:2", "c:3" (the first
// expires in 9.8s)", or "" when they cannot be read.
func (r *runner) permitHolders(ctx context.Context, locker *redislock.Client) string {
	holders, err := locker.Semaphore(r.key, r.limit).Holders(ctx)
	if err != nil || len(holders) == 0 {
		return ""
	}
	names := make([]string, len(holders))
	for i, h := range holders {
		names[i] = strconv.Quote(h.Metadata)
	}
	return fmt.Sprintf(" by %d of %d jobs: %s (the first expires in %v)", len(holders), r.limit, strings.Join(names, ", "), holders[0].TTL.Round(time.Millisecond))
}

// interruptedWaiting reports a signal that came before the command
// started, and returns its exit status.
func (r *runner) interruptedWaiting(sig syscall.Signal) int {
	r.say("interrupted by %v before %s was obtained", signalName(sig), r.key)
	return exitSignal + int(sig)
}

// release releases lock (nil does nothing), bounded by redisTimeout. It
// reports Redis errors; [redislock.ErrLockNotHeld] is returned for the
// caller to judge.
func (r *runner) release(ctx context.Context, lock held) error {
	if lock == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	err := lock.Release(rctx)
	switch {
	case err == nil:
		r.events.released(r.key)
		if left := time.Until(r.holdUntil); r.verbose && left > 0 {
			r.say("%s stays held for %v more (--min-hold, --once-per), then expires", r.key, roundMs(left))
		}
	case !errors.Is(err, redislock.ErrLockNotHeld):
		r.say("release %s: %v (it expires within %v)", r.key, err, r.ttl)
	}
	return err
}

// watchSignals returns a context derived from ctx that the first
// terminating signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) from sigs cancels,
// and stop, which stops watching and returns that signal, if one came.
// Other signals are dropped meanwhile: there is no command to forward them
// to yet.
func watchSignals(ctx context.Context, sigs <-chan os.Signal) (_ context.Context, stop func() (syscall.Signal, bool)) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	result := make(chan syscall.Signal, 1)
	go func() {
		defer cancel()
		for {
			select {
			case s := <-sigs:
				switch sig := s.(syscall.Signal); sig {
				case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
					result <- sig
					return
				}
			case <-done:
				result <- 0
				return
			}
		}
	}()
	var (
		stopped bool
		sig     syscall.Signal
	)
	return ctx, func() (syscall.Signal, bool) {
		if !stopped {
			stopped = true
			close(done)
			sig = <-result
		}
		return sig, sig != 0
	}
}

// defaultMetadata is --metadata's default: "hostname:pid".
func defaultMetadata() string {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown-host"
	}
	return fmt.Sprintf("%s:%d", host, os.Getpid())
}
