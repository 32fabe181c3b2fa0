package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

const runHelp = `usage: redislock run [flags] KEY [--] COMMAND [ARG...]

Runs COMMAND while holding the lock KEY, as flock(1) does on one machine:
obtains the lock, starts COMMAND, keeps the lock alive while COMMAND runs
(refreshing it every TTL/3), releases it when COMMAND exits, and exits with
COMMAND's status. Flags may come before or after KEY; the first argument
after KEY that is not a flag starts COMMAND (use -- when it starts with -).

COMMAND's environment gets:
  REDISLOCK_KEY          KEY
  REDISLOCK_TOKEN        the lock's token (for "redislock release")
  REDISLOCK_FENCE_TOKEN  with --fence-key: this acquisition's fencing token, greater
                         than every earlier holder's; stamp writes with it, so that
                         the resource can refuse those of a holder that lost the lock

Lock lost: if a refresh finds the lock expired or taken, or Redis stays
unreachable until the lease runs out, COMMAND's process group gets SIGTERM,
then SIGKILL after --grace, and redislock exits 76. A loss found only by the
release after COMMAND exited also exits 76: the job ran partly unprotected.

Waiting (--wait): waiters queue in Redis and are woken, in arrival order, by
the release of a holder that waited too; a release by another holder, or its
expiry, is noticed within about 200 ms.

Signals: COMMAND runs in a process group of its own. SIGINT, SIGTERM, SIGHUP,
SIGQUIT, SIGUSR1 and SIGUSR2 sent to redislock are forwarded to that group, and
the lock is released once COMMAND has exited. From a terminal, Ctrl-C and
Ctrl-\ reach redislock only, which forwards them once. COMMAND is not in the
terminal's foreground group: it cannot read from the terminal (give it stdin
from a file or a pipe). Ctrl-Z is ignored: a stopped redislock could not keep
the lock alive while COMMAND went on. If redislock dies (SIGKILL), COMMAND gets
SIGKILL (on Linux). A signal while waiting for the lock ends the wait.

Exit status:
  COMMAND's    COMMAND ran: its exit code, or 128+N if signal N killed it
  75           the lock was held by another and not obtained within --wait
               (change it with --conflict-exit-code)
  76           the lock was lost while COMMAND ran
  126, 127     COMMAND could not be run, or was not found (nothing was locked)
  128+N        interrupted by signal N while waiting for the lock
  2            usage error
  1            other failures: Redis unreachable, a bad URL, a Redis error

Examples:
  # one replica at a time runs the nightly report; the others skip it (exit 75)
  redislock run nightly-report -- ./report.sh --date today

  # wait up to 5 minutes for the lock; treat "busy" as success in cron
  redislock run --wait 5m --conflict-exit-code 0 backup -- pg_dump -f /backup/db.sql

  # fencing: the job stamps its writes with the fencing token
  redislock run --fence-key '{migrate}:fence' '{migrate}:lock' -- \
      sh -c 'migrate --fence-token "$REDISLOCK_FENCE_TOKEN"'

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
)

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
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	ttl := fs.Duration("ttl", 30*time.Second, "`TTL` of the lock, renewed every TTL/3 while COMMAND runs; at least "+minRunTTL.String())
	wait := fs.Duration("wait", 0, "how long to wait for a lock held by another; 0 gives up at once")
	fenceKey := fs.String("fence-key", "", "fencing counter `KEY`: sets REDISLOCK_FENCE_TOKEN (on a Cluster, in KEY's hash slot)")
	metadata := fs.String("metadata", "", "`TEXT` stored with the lock, shown by status (default hostname:pid)")
	grace := fs.Duration("grace", 10*time.Second, "time between SIGTERM and SIGKILL when the lock is lost")
	conflictCode := fs.Int("conflict-exit-code", exitConflict, "exit `CODE` when the lock is not obtained within --wait")
	conn := addConnFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nFlags:\n", runHelp)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\n%s\n", connHelp)
	}
	key, command, code, ok := parseRunArgs(fs, args, stdout, stderr)
	if !ok {
		return code
	}
	if msg := checkRunArgs(key, command, *ttl, *wait, *grace, *conflictCode); msg != "" {
		return usageFailure(stderr, "run", msg)
	}
	if !flagSet(fs, "metadata") {
		*metadata = defaultMetadata()
	}
	path, status, err := lookCommand(command[0])
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return status
	}

	// Until the command starts, a terminating signal cancels what is under
	// way; after that, the loop of supervise forwards them.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, notIgnored(append(forwarded, syscall.SIGTSTP)...)...)
	defer signal.Stop(sigs)
	base := context.WithoutCancel(ctx)
	wctx, stopWatch := watchSignals(base, sigs)

	r := &runner{
		prog: prog, key: key, ttl: *ttl, grace: *grace, stderr: stderr,
	}
	rdb, code, ok := conn.connect(wctx, prog, stderr)
	if !ok {
		if sig, ok := stopWatch(); ok {
			return r.interruptedWaiting(sig)
		}
		return code
	}
	defer rdb.Close()

	lock, code, ok := r.obtain(wctx, rdb, *wait, *fenceKey, *metadata, *conflictCode)
	if sig, interrupted := stopWatch(); interrupted {
		_ = r.release(base, lock)
		return r.interruptedWaiting(sig)
	}
	if !ok {
		return code
	}
	return r.supervise(base, lock, path, command, sigs, stdout, stderr)
}

// checkRunArgs returns what is wrong with "run"'s arguments, or "".
func checkRunArgs(key string, command []string, ttl, wait, grace time.Duration, conflictCode int) string {
	switch {
	case key == "":
		return "missing KEY and COMMAND"
	case len(command) == 0:
		return "missing COMMAND after KEY " + key
	case ttl < minRunTTL:
		return fmt.Sprintf("--ttl %v is below %v", ttl, minRunTTL)
	case wait < 0:
		return fmt.Sprintf("--wait %v is negative", wait)
	case grace < 0:
		return fmt.Sprintf("--grace %v is negative", grace)
	case conflictCode < 0 || conflictCode > 255:
		return fmt.Sprintf("--conflict-exit-code %d is not in 0..255", conflictCode)
	}
	return ""
}

// runner is one "run": the lock's settings and where to report.
type runner struct {
	prog   string
	key    string
	ttl    time.Duration
	grace  time.Duration
	stderr io.Writer
}

// say writes one line on stderr, prefixed with the program's name.
func (r *runner) say(format string, args ...any) {
	fmt.Fprintf(r.stderr, "%s: %s\n", r.prog, fmt.Sprintf(format, args...))
}

// obtain takes the lock, waiting up to wait. On failure it has said why,
// and returns the exit code.
func (r *runner) obtain(ctx context.Context, rdb redis.UniversalClient, wait time.Duration, fenceKey, metadata string, conflictCode int) (*redislock.Lock, int, bool) {
	opt := &redislock.Options{Metadata: metadata, FenceKey: fenceKey}
	timeout := redisTimeout
	if wait > 0 {
		opt.RetryStrategy = redislock.WaitForRelease(nil)
		timeout = wait
	}
	octx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	locker := redislock.New(rdb)
	lock, err := locker.Obtain(octx, r.key, r.ttl, opt)
	switch {
	case err == nil:
		return lock, 0, true
	case ctx.Err() != nil:
		return nil, 0, false // interrupted: the caller says so
	case errors.Is(err, redislock.ErrNotObtained):
		within := ""
		if wait > 0 {
			within = " within " + wait.String()
		}
		r.say("%s is held%s: not obtained%s", r.key, r.holder(ctx, locker), within)
		return nil, conflictCode, false
	case errors.Is(err, redislock.ErrInvalidKey), errors.Is(err, redislock.ErrCrossSlot), errors.Is(err, redislock.ErrInvalidTTL):
		r.say("%v", err)
		return nil, exitUsage, false
	}
	r.say("obtain %s: %v", r.key, err)
	return nil, exitFailure, false
}

// holder describes who holds key, for the message of a lock not obtained:
// " by METADATA (expires in 9.8s)", or "" when that cannot be read.
func (r *runner) holder(ctx context.Context, locker *redislock.Client) string {
	ictx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	info, err := locker.Inspect(ictx, r.key)
	if err != nil || !info.Held {
		return ""
	}
	s := ""
	if info.Metadata != "" {
		s = fmt.Sprintf(" by %q", info.Metadata)
	}
	if info.TTL > 0 {
		s += fmt.Sprintf(" (expires in %v)", info.TTL.Round(time.Millisecond))
	}
	return s
}

// interruptedWaiting reports a signal that came before the command
// started, and returns its exit status.
func (r *runner) interruptedWaiting(sig syscall.Signal) int {
	r.say("interrupted by %v before %s was obtained", signalName(sig), r.key)
	return exitSignal + int(sig)
}

// supervise runs the command under the lock and returns the exit status of
// "run". It releases the lock when the command has exited.
func (r *runner) supervise(ctx context.Context, lock *redislock.Lock, path string, command []string, sigs <-chan os.Signal, stdout, stderr io.Writer) int {
	ka, err := lock.KeepAlive(r.ttl, nil)
	if err != nil {
		r.say("keep %s alive: %v", r.key, err)
		_ = r.release(ctx, lock)
		return exitFailure
	}

	cmd := exec.Command(path, command[1:]...)
	cmd.Args[0] = command[0]
	cmd.Env = childEnv(os.Environ(), r.key, lock.Token(), lock.FenceToken(), lock.FenceToken() != 0)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, stderr
	cmd.SysProcAttr = childAttr()
	// The thread that starts the command must live until it exits: see
	// childAttr.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cmd.Start(); err != nil {
		r.say("start %s: %v", command[0], err)
		_ = r.release(ctx, lock)
		return exitCannotRun
	}
	pgid := cmd.Process.Pid
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var (
		lost       error // why the lock was lost, once it was
		kaDone     = ka.Done()
		graceTimer *time.Timer
		graceC     <-chan time.Time // until SIGKILL, once the lock was lost
		waitErr    error
	)
loop:
	for {
		select {
		case s := <-sigs:
			sig := s.(syscall.Signal)
			if sig == syscall.SIGTSTP {
				r.say("ignoring %v: a stopped redislock could not keep %s alive", signalName(sig), r.key)
				continue
			}
			if err := signalGroup(pgid, sig); err != nil {
				r.say("forward %v: %v", signalName(sig), err)
			}
		case <-kaDone:
			kaDone = nil
			lost = ka.Err()
			r.say("lost the lock %s (%v); stopping %s: SIGTERM now, SIGKILL in %v", r.key, lost, command[0], r.grace)
			_ = signalGroup(pgid, syscall.SIGTERM)
			graceTimer = time.NewTimer(r.grace)
			graceC = graceTimer.C
		case <-graceC:
			graceC = nil
			r.say("%s still runs %v after SIGTERM: SIGKILL", command[0], r.grace)
			_ = signalGroup(pgid, syscall.SIGKILL)
		case waitErr = <-exited:
			break loop
		}
	}
	status, ok := exitStatus(waitErr)
	if !ok {
		r.say("wait for %s: %v", command[0], waitErr)
		status = exitFailure
	}
	if lost == nil && errors.Is(ka.Err(), redislock.ErrLockLost) {
		lost = ka.Err()
		r.say("lost the lock %s (%v) as %s exited", r.key, lost, command[0])
	}
	if err := r.release(ctx, lock); errors.Is(err, redislock.ErrLockNotHeld) && lost == nil {
		lost = err
		r.say("%s was no longer held when %s exited: it expired or was taken while the command ran", r.key, command[0])
	}
	if lost == nil {
		return status
	}
	r.stopStragglers(pgid, graceTimer, graceTimer != nil && graceC == nil)
	r.say("exit %d: the lock %s was lost while %s ran", exitLost, r.key, command[0])
	return exitLost
}

// stopStragglers stops what the command, which has exited after the lock
// was lost, left running in its process group: that must not go on working
// unprotected. Like the command, they get SIGTERM (unless graceTimer was
// started: it was sent then), then SIGKILL at the end of the grace period
// (at once if graceTimer has fired), unless the group is empty by then. It
// polls the group, which is no child of ours to wait for.
func (r *runner) stopStragglers(pgid int, graceTimer *time.Timer, fired bool) {
	if !groupAlive(pgid) {
		return
	}
	if fired {
		_ = signalGroup(pgid, syscall.SIGKILL)
		return
	}
	if graceTimer == nil {
		_ = signalGroup(pgid, syscall.SIGTERM)
		graceTimer = time.NewTimer(r.grace)
	}
	defer graceTimer.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-graceTimer.C:
			r.say("processes left by the command still run %v after SIGTERM: SIGKILL", r.grace)
			_ = signalGroup(pgid, syscall.SIGKILL)
			return
		case <-tick.C:
			if !groupAlive(pgid) {
				return
			}
		}
	}
}

// release releases lock (nil does nothing), bounded by redisTimeout. It
// reports Redis errors; [redislock.ErrLockNotHeld] is returned for the
// caller to judge.
func (r *runner) release(ctx context.Context, lock *redislock.Lock) error {
	if lock == nil {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, redisTimeout)
	defer cancel()
	err := lock.Release(rctx)
	if err != nil && !errors.Is(err, redislock.ErrLockNotHeld) {
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
