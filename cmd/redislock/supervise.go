package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// job is the command that "run" runs under the lock.
type job struct {
	cmd  *exec.Cmd
	name string // as the user gave it, for messages
	pid  int    // its process id
	pgid int    // its process group: the watcher's, or its pid
	tty  int    // the terminal its group was given, or -1
}

// signal sends sig to the command's process group, then SIGCONT: a
// stopped process acts on no signal but SIGKILL until it is continued.
func (j *job) signal(sig syscall.Signal) error {
	err := signalGroup(j.pgid, sig)
	if sig != syscall.SIGKILL && sig != syscall.SIGCONT {
		_ = signalGroup(j.pgid, syscall.SIGCONT) // as reliable as the signal before it
	}
	return err
}

// takeTerminal gives the command's group the terminal of redislock, when
// redislock is in its foreground, and continues the group. It reports
// whether it did.
func (j *job) takeTerminal() bool {
	fd := foregroundTerminal()
	if fd < 0 || giveTerminal(fd, j.pgid) != nil {
		return false
	}
	j.tty = fd
	_ = signalGroup(j.pgid, syscall.SIGCONT) // it has the terminal: nothing more to do if this fails
	return true
}

// margin is taken off the lease for the SIGKILL: the command is killed
// that long before the lease, as the keep-alive knows it, ends, so that it
// is dead by then. It is the keep-alive's own default margin.
func (r *runner) margin() time.Duration { return r.ttl/50 + 2*time.Millisecond }

// supervise runs the command under the lock and returns the exit status of
// "run". It releases the lock when the command, and what the command left
// in its process group when the lock was lost, has exited.
//
// The command must be dead before the lease can expire, whatever Redis
// does: the lease is certainly held until the keep-alive's ValidUntil, and
// when no refresh has moved that on by --grace plus the margin before it,
// the command gets SIGTERM, then SIGKILL the margin before it.
func (r *runner) supervise(ctx context.Context, lock held, path string, command []string, sigs <-chan os.Signal, stdout io.Writer) int {
	ka, err := lock.KeepAlive(r.ttl, nil)
	if err != nil {
		r.say("keep %s alive: %v", r.key, err)
		_ = r.release(ctx, lock)
		return exitFailure
	}
	valid := ka.ValidUntil()
	r.events.obtained(lock, valid)

	// The watch of the server: a broken connection or a restart gets the
	// lock checked as soon as the server answers again.
	var server *serverWatch
	var notes <-chan watchNote
	if r.endpoint != nil {
		server = startServerWatch(r.endpoint, r.key, r.runID, func(ctx context.Context, c redis.UniversalClient) error { return r.stillHeld(ctx, c, lock) })
		notes = server.notes
	}
	defer server.stop()
	if r.holdBack > 0 {
		if code, ok := r.holdBackStart(ctx, lock, ka, notes, sigs); !ok {
			server.stop()
			return code
		}
	}

	watch, err := startWatcher(r.stderr)
	if err != nil {
		r.say("cannot start the watcher (%v): if redislock is killed, what %s started may outlive the lock", err, command[0])
	}
	j := &job{name: command[0], tty: foregroundTerminal()}
	newCmd := func() *exec.Cmd {
		cmd := exec.Command(path, command[1:]...) //nolint:gosec // running the user's command is what "run" is for
		cmd.Args[0] = command[0]
		cmd.Env = childEnv(os.Environ(), r.key, lock.Token(), lock.FenceToken(), lock.FenceToken() != 0, r.keepCredentials)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, stdout, r.stderr
		cmd.SysProcAttr = childAttr(watch.pgid(), j.tty)
		return cmd
	}
	// The thread that starts the command must live until it exits: see
	// childAttr.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	j.cmd = newCmd()
	err = j.cmd.Start()
	if err != nil && j.tty >= 0 {
		j.tty = -1 // the terminal could not be given: run without it
		j.cmd = newCmd()
		err = j.cmd.Start()
	}
	if err != nil && watch != nil {
		// The watcher's group could not be joined (it died?): run in a
		// group of the command's own, without it.
		r.say("cannot join the watcher's process group (%v): if redislock is killed, what %s started may outlive the lock", err, command[0])
		watch.disarm()
		watch = nil
		j.cmd = newCmd()
		err = j.cmd.Start()
	}
	if err != nil {
		watch.disarm()
		r.say("start %s: %v", command[0], err)
		server.stop()
		_ = r.release(ctx, lock)
		return exitCannotRun
	}
	ignoreTTOU()
	j.pid = j.cmd.Process.Pid
	j.pgid = j.pid
	if watch != nil {
		j.pgid = watch.pgid()
	}
	watch.started()

	done := make(chan struct{})
	stops := make(chan syscall.Signal)
	go watchStops(j.pid, stops, done)
	exited := make(chan error, 1)
	go func() { exited <- j.cmd.Wait() }()

	stopAt := func() time.Duration { return time.Until(valid.Add(-r.margin() - r.grace)) }
	check := time.NewTimer(stopAt())
	defer check.Stop()
	var tick <-chan time.Time
	if r.verbose {
		t := time.NewTicker(max(r.ttl/10, 10*time.Millisecond))
		defer t.Stop()
		tick = t.C
	}
	var (
		lost      error // why the lock was lost, once it was
		kaDone    = ka.Done()
		stopping  bool        // SIGTERM was sent for the lock
		kill      *time.Timer // until SIGKILL, once stopping
		killC     <-chan time.Time
		killed    bool
		ttyWanted bool // the command is stopped for the terminal
		waitErr   error
	)
	// renewed reports whether a refresh moved the lease on since last seen.
	renewed := func() bool {
		v := ka.ValidUntil()
		if !v.After(valid) {
			return false
		}
		valid = v
		r.events.refreshed(r.key, v)
		if !stopping {
			check.Reset(stopAt())
		}
		return true
	}
	stop := func(killAt time.Time, why string) {
		stopping = true
		in := max(time.Until(killAt), 0)
		r.say("%s; stopping %s: SIGTERM now, SIGKILL in %v", why, j.name, roundMs(in))
		_ = j.signal(syscall.SIGTERM) // a group that has exited is no error
		kill = time.NewTimer(in)
		killC = kill.C
	}
	// onLost stops the command, the first time the lock is found lost.
	onLost := func(err error) {
		if lost != nil {
			return
		}
		lost = err
		r.events.lost(r.key, lost)
		if !stopping {
			killAt := time.Now().Add(r.grace)
			if end := valid.Add(-r.margin()); end.Before(killAt) {
				killAt = end
			}
			stop(killAt, fmt.Sprintf("lost the lock %s (%v)", r.key, lost))
		}
	}
loop:
	for {
		select {
		case s := <-sigs:
			switch sig := s.(syscall.Signal); sig {
			case syscall.SIGTSTP:
				r.say("ignoring %v: a stopped redislock could not keep %s alive", signalName(sig), r.key)
			case syscall.SIGCONT:
				if ttyWanted && j.takeTerminal() {
					ttyWanted = false
				}
				_ = signalGroup(j.pgid, syscall.SIGCONT) // passed on, as harmless as it came
			default:
				if err := j.signal(sig); err != nil {
					r.say("forward %v: %v", signalName(sig), err)
				}
			}
		case sig := <-stops:
			switch sig {
			case syscall.SIGTSTP:
				r.say("%s was stopped by %v: continuing it (stopped, it would hold %s for ever)", j.name, signalName(sig), r.key)
				_ = signalGroup(j.pgid, syscall.SIGCONT) // nothing more to do if it fails
			case syscall.SIGTTIN, syscall.SIGTTOU:
				if j.takeTerminal() {
					continue
				}
				ttyWanted = true
				r.say("%s is stopped by %v: it uses the terminal, and redislock is not in its foreground; bring redislock to the foreground (fg) to continue it; %s stays held meanwhile", j.name, signalName(sig), r.key)
			default:
				r.say("%s was stopped by %v; %s stays held until it is continued (SIGCONT) or ends", j.name, signalName(sig), r.key)
			}
		case <-tick:
			renewed()
		case <-check.C:
			if renewed() || stopping {
				continue
			}
			stop(valid.Add(-r.margin()), fmt.Sprintf("could not renew the lock %s (its lease ends in %v)", r.key, roundMs(time.Until(valid))))
		case <-kaDone:
			kaDone = nil
			onLost(ka.Err())
		case n := <-notes:
			if err := r.tellOutage(n, "while "+j.name+" ran"); err != nil {
				onLost(err)
			}
		case <-killC:
			killC, killed = nil, true
			r.say("%s still runs: SIGKILL (its lease ends in %v)", j.name, roundMs(time.Until(valid)))
			_ = j.signal(syscall.SIGKILL)
		case waitErr = <-exited:
			break loop
		}
	}
	close(done)
	if j.tty >= 0 {
		reclaimTerminal(j.tty, j.pgid)
	}
	status, ok := exitStatus(waitErr)
	if !ok {
		r.say("wait for %s: %v", j.name, waitErr)
		status = exitFailure
	}
	if lost == nil && errors.Is(ka.Err(), redislock.ErrLockLost) {
		lost = ka.Err()
		r.events.lost(r.key, lost)
		r.say("lost the lock %s (%v) as %s exited", r.key, lost, j.name)
	}
	if stopping || lost != nil {
		// What the command left in its group must not work on, nor
		// outlive the lease, before the lock is released.
		r.stopStragglers(j, kill, killed)
	}
	server.stop()
	if err := r.release(ctx, lock); errors.Is(err, redislock.ErrLockNotHeld) && lost == nil {
		lost = err
		r.events.lost(r.key, err)
		r.say("%s was no longer held when %s exited: it expired or was taken while the command ran", r.key, j.name)
		if !stopping {
			r.stopStragglers(j, nil, false)
		}
	}
	watch.disarm()
	switch {
	case lost != nil:
		r.say("exit %d: the lock %s was lost while %s ran", exitLost, r.key, j.name)
		return exitLost
	case stopping:
		r.say("exit %d: the lock %s could not be renewed in time while %s ran", exitLost, r.key, j.name)
		return exitLost
	}
	return status
}

// tellOutage says what the watch of the server found after the connection
// broke (always for a restart or a lost lock, with --verbose otherwise),
// and returns an error matching [redislock.ErrLockLost] when the lock was
// found gone or taken, nil otherwise.
func (r *runner) tellOutage(n watchNote, during string) error {
	what := fmt.Sprintf("the connection to %s broke %s (%v)", r.endpoint, during, n.broke)
	if n.restarted {
		what = fmt.Sprintf("%s restarted %s (its run_id changed)", r.endpoint, during)
	}
	switch {
	case errors.Is(n.checked, redislock.ErrNotObtained):
		r.say("%s: checked %s at once: gone or taken", what, r.key)
		if n.restarted {
			return fmt.Errorf("%w: Redis restarted, and %s was gone when it answered again", redislock.ErrLockLost, r.key)
		}
		return fmt.Errorf("%w: the check after a broken connection found it expired or held by another token", redislock.ErrLockLost)
	case n.checked != nil:
		if n.restarted || r.verbose {
			r.say("%s: could not check %s (%v); the keep-alive goes on", what, r.key, n.checked)
		}
	case n.restarted || r.verbose:
		r.say("%s: checked at once: %s is still held", what, r.key)
	}
	return nil
}

// stillHeld returns nil when lock is still held with its token, as c
// reads it, an error matching [redislock.ErrNotObtained] when it is not,
// and the Redis error when that cannot be read.
func (r *runner) stillHeld(ctx context.Context, c redis.UniversalClient, lock held) error {
	token := lock.Token()
	found := false
	switch {
	case r.limit > 0:
		holders, err := redislock.New(c).Semaphore(r.key, r.limit).Holders(ctx)
		if err != nil {
			return err
		}
		found = slices.ContainsFunc(holders, func(p redislock.PermitInfo) bool { return p.Token == token })
	case r.shared:
		holds, err := sharedHolds(ctx, c, r.key)
		if err != nil {
			return err
		}
		found = slices.ContainsFunc(holds, func(h sharedHold) bool { return h.Token == token })
	default:
		info, err := redislock.New(c).Inspect(ctx, r.key)
		if err != nil {
			return err
		}
		found = info.Held && info.Token == token
	}
	if !found {
		return redislock.ErrNotObtained
	}
	return nil
}

// holdBackStart holds the lock, kept alive by ka, for r.holdBack before the
// command starts (the server had just started when the lock was obtained:
// a run from before a restart gets that long to find its lock gone and
// stop).
// It returns ok false, with the exit status, when the lock was lost
// meanwhile or a terminating signal came (the lock is then released).
func (r *runner) holdBackStart(ctx context.Context, lock held, ka *redislock.KeepAlive, notes <-chan watchNote, sigs <-chan os.Signal) (int, bool) {
	if r.verbose {
		r.say("%s has just started: holding %s %v before starting the command, so that a run from before a restart sees its lock gone first", r.endpoint, r.key, r.holdBack)
	}
	t := time.NewTimer(r.holdBack)
	defer t.Stop()
	for {
		var lost error
		select {
		case <-t.C:
			return 0, true
		case <-ka.Done():
			lost = ka.Err()
		case n := <-notes:
			lost = r.tellOutage(n, "before the command started")
		case s := <-sigs:
			switch sig := s.(syscall.Signal); sig {
			case syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT:
				r.say("interrupted by %v before the command started", signalName(sig))
				_ = r.release(ctx, lock)
				return exitSignal + int(sig), false
			}
		}
		if lost != nil {
			r.events.lost(r.key, lost)
			r.say("lost the lock %s (%v) before the command started", r.key, lost)
			_ = r.release(ctx, lock)
			return exitLost, false
		}
	}
}

// stopStragglers stops what the command, which has exited after the lock
// was lost (or could not be renewed), left running in its process group:
// that must not go on working unprotected. They get SIGTERM (unless kill
// was started: it was sent then), then SIGKILL when kill fires (at once if
// it has fired; after --grace if it was not started), unless the group is
// empty by then. It polls the group, which is no child of ours to wait for.
func (r *runner) stopStragglers(j *job, kill *time.Timer, killed bool) {
	if !groupAlive(j.pgid) {
		return
	}
	if killed {
		_ = j.signal(syscall.SIGKILL)
		return
	}
	if kill == nil {
		_ = j.signal(syscall.SIGTERM)
		kill = time.NewTimer(r.grace)
	}
	defer kill.Stop()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-kill.C:
			r.say("processes left by %s still run after SIGTERM: SIGKILL", j.name)
			_ = j.signal(syscall.SIGKILL)
			return
		case <-tick.C:
			if !groupAlive(j.pgid) {
				return
			}
		}
	}
}
