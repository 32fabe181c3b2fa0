package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// Failover tests. Each starts its own Sentinel setup or Cluster (they kill
// and promote servers), for Redis and for Valkey, all in parallel, and does
// the same around one failover:
//
//   - before it, takes a "kept" lock that has reached the replica
//     (redistest.WaitSynced), then cuts replication
//     (redistest.CutReplication) and takes a "lost" lock that exists on the
//     master alone, both fenced by one counter;
//   - from the moment the failover starts, a probe takes new locks through
//     the client every 10 ms until one is granted by the new master;
//   - after it, checks what users can rely on (checkAfterFailover).
//
// Timings are logged as "figure:" lines, which doc.go and README.md quote.

// TestSentinelFailover forces a failover with SENTINEL FAILOVER while the
// old master keeps running.
func TestSentinelFailover(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f redistest.Flavor) {
		s := redistest.NewSentinel(t, f)
		rdb := s.Client(t)
		tag := testTag(t)
		oldMaster := s.Master(t)
		replica := otherServer(s, oldMaster)
		before := prepareFailover(t, rdb, oldMaster, replica, tag, "")

		p := startProbe(t, rdb, replica, tag, time.Now())
		addr := s.Failover(t)
		agreed := time.Since(p.start)
		if addr != replica.Addr() {
			t.Fatalf("sentinels promoted %s, want the replica %s", addr, replica)
		}
		r := p.wait(t)
		t.Logf("figure: %s sentinel, SENTINEL FAILOVER: the sentinels agree on the new master after %v; the failover client's first lock on it after %v; %s",
			f, ms(agreed), ms(r.landed), r.summary())
		checkAfterFailover(t, rdb, replica, before)

		// The old master keeps running, as a master, until the sentinels
		// turn it into a replica: a client pinned to its address can take a
		// lock there meanwhile, while the failover client takes the same
		// lock on the new master. Fence tokens, from the servers' clocks,
		// still order the two; the demotion then wipes out the first. When
		// the sentinels were quicker, the old master refuses as a replica
		// does (READONLY), and the new master's token is still above every
		// token issued before.
		ctx := context.Background()
		stray := tag.Key("stray")
		pinned, err := redislock.Obtain(ctx, oldMaster.Client(t), stray, time.Minute, before.opt)
		strayAt := time.Since(p.start)
		highest, highestFrom := before.lost.FenceToken(), "the lost lock's, the highest before the failover"
		if err != nil {
			if !strings.Contains(err.Error(), "READONLY") {
				t.Errorf("the old master refused a lock with %v, want READONLY (a replica already)", err)
			}
			demoted := waitRole(t, oldMaster, "slave", p.start)
			t.Logf("figure: %s sentinel, SENTINEL FAILOVER: the old master refused a lock %v after the failover began (%v); it was a replica after %v",
				f, ms(strayAt), err, ms(demoted))
		} else {
			if pinned.FenceToken() <= highest {
				t.Errorf("fence token on the old master after the failover began %d, want above %d (%s)", pinned.FenceToken(), highest, highestFrom)
			}
			highest, highestFrom = pinned.FenceToken(), "the token the old master granted"
		}
		second, err := redislock.Obtain(ctx, rdb, stray, time.Minute, before.opt)
		if err != nil {
			t.Fatalf("Obtain on the new master of the stray key: %v", err)
		}
		if second.FenceToken() <= highest {
			t.Errorf("fence token on the new master %d, want above %d (%s)", second.FenceToken(), highest, highestFrom)
		}
		if pinned != nil {
			demoted := waitRole(t, oldMaster, "slave", p.start)
			t.Logf("figure: %s sentinel, SENTINEL FAILOVER: %v after it began, a client pinned to the old master and the failover client both held one lock; the old master became a replica after %v",
				f, ms(strayAt), ms(demoted))
			redistest.WaitSynced(t, replica, oldMaster)
			if ttl, err := pinned.TTL(ctx); ttl != 0 || err != nil {
				t.Errorf("lock granted by the old master, after its demotion: TTL() = %v, %v; want 0, nil (wiped by the resync)", ttl, err)
			}
		}
		if err := second.Release(ctx); err != nil {
			t.Errorf("Release on the new master: %v", err)
		}
	})
}

// TestSentinelMasterKilled kills the master (SIGKILL) and lets the
// sentinels promote the replica.
func TestSentinelMasterKilled(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f redistest.Flavor) {
		s := redistest.NewSentinel(t, f)
		rdb := s.Client(t)
		tag := testTag(t)
		master := s.Master(t)
		replica := otherServer(s, master)
		before := prepareFailover(t, rdb, master, replica, tag, "")

		start := time.Now()
		master.Kill()
		p := startProbe(t, rdb, replica, tag, start)
		addr := s.WaitFailover(t, master.Addr())
		promoted := time.Since(p.start)
		if addr != replica.Addr() {
			t.Fatalf("sentinels promoted %s, want the replica %s", addr, replica)
		}
		r := p.wait(t)
		if r.others != 0 {
			t.Errorf("%s, with the old master dead", r.summary())
		}
		t.Logf("figure: %s sentinel, master killed: the sentinels agree on the new master after %v; the failover client's first lock on it after %v; %s",
			f, ms(promoted), ms(r.landed), r.summary())
		checkAfterFailover(t, rdb, replica, before)
	})
}

// TestClusterFailover moves the lock's slot with CLUSTER FAILOVER on the
// replica, a failover coordinated with the master, which loses nothing; then
// back with CLUSTER FAILOVER FORCE while replication is cut, which loses the
// writes the replica had not received.
func TestClusterFailover(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f redistest.Flavor) {
		ctx := context.Background()
		c := redistest.NewCluster(t, f)
		rdb := c.Client(t)
		tag := testTag(t)

		master := c.MasterForKey(t, tag.Key("kept"))
		replica := c.ReplicaOf(t, master)
		opt := &redislock.Options{FenceKey: tag.Key("fence")}
		kept := mustObtain(t, rdb, tag.Key("kept"), opt)
		// Not waited for: a coordinated failover waits for the replica to
		// catch up before it switches.
		recent := mustObtain(t, rdb, tag.Key("recent"), opt)

		p := startProbe(t, rdb, replica, tag, time.Now())
		c.Failover(t, replica)
		switched := time.Since(p.start)
		r := p.wait(t)
		t.Logf("figure: %s cluster, CLUSTER FAILOVER: every node sees the replica as master after %v; the cluster client's first lock on it after %v; %s",
			f, ms(switched), ms(r.landed), r.summary())
		for _, l := range []*redislock.Lock{kept, recent} {
			if ttl, err := l.TTL(ctx); err != nil || ttl <= 0 {
				t.Errorf("lock %s after a coordinated failover: TTL() = %v, %v; want it kept", l.Key(), ttl, err)
			}
		}
		if got := fenceCounter(t, replica, opt.FenceKey); got != recent.FenceToken() {
			t.Errorf("fence counter after a coordinated failover = %d, want %d (nothing lost)", got, recent.FenceToken())
		}
		for _, l := range []*redislock.Lock{kept, recent} {
			if err := l.Release(ctx); err != nil {
				t.Errorf("Release of %s after a coordinated failover: %v", l.Key(), err)
			}
		}

		// Back again, forced, with replication cut: the old master (now
		// the replica) is promoted without the last lock.
		if got := c.ReplicaOf(t, replica); got != master {
			t.Fatalf("replica of the new master is %s, want the old master %s", got, master)
		}
		before := prepareFailover(t, rdb, replica, master, tag, "forced-")
		p = startProbe(t, rdb, master, tag, time.Now())
		if err := master.Client(t).Do(ctx, "CLUSTER", "FAILOVER", "FORCE").Err(); err != nil {
			t.Fatalf("CLUSTER FAILOVER FORCE on %s: %v", master, err)
		}
		c.WaitMaster(t, master)
		switched = time.Since(p.start)
		r = p.wait(t)
		t.Logf("figure: %s cluster, CLUSTER FAILOVER FORCE: every node sees the replica as master after %v; the cluster client's first lock on it after %v; %s",
			f, ms(switched), ms(r.landed), r.summary())
		checkAfterFailover(t, rdb, master, before)
	})
}

// TestClusterMasterKilled kills the master of the lock's slot (SIGKILL) and
// lets the cluster promote its replica (cluster-node-timeout 2000 ms).
//
// A go-redis v9.23 ClusterClient only learns of the new master when it
// reloads its slot map: a MOVED reply triggers that, but a dead node sends
// none, so with the default options it keeps dialling the dead address
// until ClusterStateReloadInterval (60 s) has passed since its last reload,
// unless someone calls ReloadState, as the library does after a failed call.
// The probe uses a client with a 1 s interval; a client with the defaults
// must then obtain a lock at once too.
func TestClusterMasterKilled(t *testing.T) {
	forEachFlavor(t, func(t *testing.T, f redistest.Flavor) {
		ctx := context.Background()
		c := redistest.NewCluster(t, f)
		opts := c.Options()
		opts.ClusterStateReloadInterval = time.Second
		rdb := redis.NewClusterClient(opts)
		t.Cleanup(func() { _ = rdb.Close() })
		defaults := c.Client(t)
		tag := testTag(t)
		master := c.MasterForKey(t, tag.Key("kept"))
		replica := c.ReplicaOf(t, master)
		before := prepareFailover(t, rdb, master, replica, tag, "")
		if _, err := defaults.Ping(ctx).Result(); err != nil { // loads its slot map
			t.Fatalf("PING: %v", err)
		}

		start := time.Now()
		master.Kill()
		p := startProbe(t, rdb, replica, tag, start)
		c.WaitMaster(t, replica)
		promoted := time.Since(p.start)
		r := p.wait(t)
		if r.others != 0 {
			t.Errorf("%s, with the old master dead", r.summary())
		}
		t.Logf("figure: %s cluster, master killed: every node sees the replica as master after %v; the first lock on it through a cluster client with ClusterStateReloadInterval 1s after %v; %s",
			f, ms(promoted), ms(r.landed), r.summary())
		// A client with the default options (a slot map reload once a
		// minute) finds the new master too: after a failed dial the library
		// asks it to reload at once (runScript in scripts.go).
		waitCtx, cancel := context.WithTimeout(ctx, 15*time.Second)
		lock, err := redislock.Obtain(waitCtx, defaults, tag.Key("defaults"), time.Minute,
			&redislock.Options{RetryStrategy: redislock.LinearBackoff(100 * time.Millisecond)})
		cancel()
		if err != nil {
			t.Errorf("Obtain through a cluster client with default options, after the promotion: %v", err)
		} else {
			_ = lock.Release(ctx)
		}
		t.Logf("figure: %s cluster, master killed: a cluster client with default options obtained a lock %v after the kill (err %v)",
			f, ms(time.Since(p.start)), err)
		checkAfterFailover(t, rdb, replica, before)
	})
}

// forEachFlavor runs fn as a parallel subtest for Redis and for Valkey,
// under a parallel test: failover tests wait for timeouts more than they
// work, so they all wait together.
func forEachFlavor(t *testing.T, fn func(t *testing.T, f redistest.Flavor)) {
	t.Helper()
	t.Parallel()
	for _, f := range []redistest.Flavor{redistest.Redis, redistest.Valkey} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			fn(t, f)
		})
	}
}

// beforeFailover is the state prepareFailover leaves for checkAfterFailover.
type beforeFailover struct {
	kept     *redislock.Lock // its key reached the replica
	lost     *redislock.Lock // its key did not
	fenceKey string
	opt      *redislock.Options
}

// prepareFailover takes, through client, a "kept" lock and waits until it
// has reached replica; then it cuts replication from master to replica and
// takes a "lost" lock that exists on master alone. The keys are under tag,
// their names start with prefix, and both locks share a fence counter (the
// lost lock's token is the higher).
func prepareFailover(t *testing.T, client redis.UniversalClient, master, replica *redistest.Server, tag redislock.HashTag, prefix string) beforeFailover {
	t.Helper()
	ctx := context.Background()
	b := beforeFailover{fenceKey: tag.Key(prefix + "fence")}
	b.opt = &redislock.Options{FenceKey: b.fenceKey}
	b.kept = mustObtain(t, client, tag.Key(prefix+"kept"), b.opt)
	redistest.WaitSynced(t, master, replica)
	// Scripts reach replicas as their effects: a replica that was never a
	// master caches none, and answers NOSCRIPT to every EVALSHA once
	// promoted. (A demoted master keeps the scripts it had.)
	if n := redistest.Info(t, replica.Client(t), "memory", "number_of_cached_scripts"); n != "0" {
		t.Logf("figure: the replica caches %s scripts before the failover", n)
	}
	redistest.CutReplication(t, master, replica)
	b.lost = mustObtain(t, client, tag.Key(prefix+"lost"), b.opt)
	if b.lost.FenceToken() <= b.kept.FenceToken() {
		t.Fatalf("lost lock's token %d not above kept lock's %d", b.lost.FenceToken(), b.kept.FenceToken())
	}
	if n, err := master.Client(t).Exists(ctx, b.lost.Key()).Result(); err != nil || n != 1 {
		t.Fatalf("lost lock's key on %s: EXISTS = %d, %v; want 1", master, n, err)
	}
	return b
}

// checkAfterFailover checks, on newMaster through client, what users can
// rely on after a failover, with an empty script cache on the new master
// (every verb goes through NOSCRIPT and EVAL):
//   - the kept lock is still held: TTL, Refresh and, at the end, Release work;
//   - the lost lock is reported lost: TTL 0, Refresh ErrNotObtained,
//     Release ErrLockNotHeld; and another holder can obtain its key;
//   - fence tokens keep increasing although the counter fell behind.
func checkAfterFailover(t *testing.T, client redis.UniversalClient, newMaster *redistest.Server, b beforeFailover) {
	t.Helper()
	ctx := context.Background()
	if err := newMaster.Client(t).ScriptFlush(ctx).Err(); err != nil {
		t.Fatalf("SCRIPT FLUSH on %s: %v", newMaster, err)
	}
	// The first call of each verb meets NOSCRIPT, and must succeed by EVAL.
	noscript := func(verb string, call func() error) {
		t.Helper()
		n := errorCount(t, newMaster, "NOSCRIPT")
		if err := call(); err != nil {
			t.Errorf("%s with an empty script cache: %v", verb, err)
		}
		if errorCount(t, newMaster, "NOSCRIPT") == n {
			t.Errorf("%s did not meet NOSCRIPT on %s after SCRIPT FLUSH", verb, newMaster)
		}
	}

	noscript("TTL", func() error {
		ttl, err := b.kept.TTL(ctx)
		if err == nil && ttl <= 0 {
			err = fmt.Errorf("TTL() = %v: the lock that had reached the replica is gone", ttl)
		}
		return err
	})
	noscript("Refresh", func() error { return b.kept.Refresh(ctx, time.Minute, nil) })

	if ttl, err := b.lost.TTL(ctx); ttl != 0 || err != nil {
		t.Errorf("lost lock: TTL() = %v, %v; want 0, nil", ttl, err)
	}
	if err := b.lost.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("lost lock: Refresh() = %v, want ErrNotObtained", err)
	}
	noscript("Release", func() error {
		if err := b.lost.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			return fmt.Errorf("lost lock: Release() = %w, want ErrLockNotHeld", err)
		}
		return nil
	})
	counter := fenceCounter(t, newMaster, b.fenceKey)
	if counter != b.kept.FenceToken() {
		t.Errorf("fence counter on the new master = %d, want %d, the last token that reached it", counter, b.kept.FenceToken())
	}

	var taker *redislock.Lock
	noscript("Obtain", func() (err error) {
		taker, err = redislock.Obtain(ctx, client, b.lost.Key(), time.Minute, b.opt)
		return err
	})
	if taker != nil {
		if taker.FenceToken() <= b.lost.FenceToken() {
			t.Errorf("fence token after the failover = %d, want above %d, the highest before it", taker.FenceToken(), b.lost.FenceToken())
		}
		t.Logf("figure: the lost lock's key was free on the new master and taken again; the fence counter there was %d (the lost token %d missing), the new token is %d",
			counter, b.lost.FenceToken(), taker.FenceToken())
	}
	if err := b.kept.Release(ctx); err != nil {
		t.Errorf("Release of the kept lock: %v", err)
	}
	if taker != nil {
		if err := taker.Release(ctx); err != nil {
			t.Errorf("Release of the lock taken after the failover: %v", err)
		}
	}
}

// probe takes new locks through a client, every 10 ms, from its start until
// one is granted by the new master after its promotion, in a goroutine of
// its own, which the test's Cleanup stops and waits for.
type probe struct {
	start time.Time
	done  chan probeResult // the result, once
}

// probeResult is what a probe saw.
type probeResult struct {
	landed time.Duration // from the start to the first lock granted by the promoted new master
	others int           // locks granted by another server before it
	// Of those, the ones asked for when the new master already was one:
	// the client still went to the old master, and those locks are lost.
	late     int
	lastLate time.Duration // when the last of those was granted
	failed   int           // attempts that returned an error
	slowest  time.Duration // the longest attempt
	err      error         // the last error; why the probe gave up after 30 s
}

// summary describes, for figures, what the probe saw besides the landing.
func (r probeResult) summary() string {
	s := fmt.Sprintf("slowest attempt %v, %d failed", ms(r.slowest), r.failed)
	switch {
	case r.others == 0:
		s += ", no lock granted by the old master"
	case r.late == 0:
		s += fmt.Sprintf(", %d locks granted by the old master before the promotion", r.others)
	default:
		s += fmt.Sprintf(", %d locks granted by the old master, %d of them after the promotion (lost), the last %v after the start", r.others, r.late, ms(r.lastLate))
	}
	return s
}

// startProbe starts a probe of client, under tag, for newMaster, timed from
// start. A lock counts as granted by newMaster when its key is found there;
// it counts as landed when newMaster reported role master before the lock
// was asked for. It gives up after 30 s.
func startProbe(t *testing.T, client redis.UniversalClient, newMaster *redistest.Server, tag redislock.HashTag, start time.Time) *probe {
	direct := redis.NewClient(newMaster.Options())
	p := &probe{start: start, done: make(chan probeResult, 1)}
	stop, cancelProbe := context.WithCancel(context.Background())
	exited := make(chan struct{})
	t.Cleanup(func() {
		cancelProbe()
		<-exited
	})
	go func() {
		defer close(exited)
		defer func() { _ = direct.Close() }()
		var r probeResult
		defer func() { p.done <- r }()
		for i := 0; ; i++ {
			ctx, cancel := context.WithTimeout(stop, time.Second)
			role, _ := direct.Do(ctx, "ROLE").Slice()
			promoted := len(role) > 0 && role[0] == "master"
			key := tag.Key("probe" + strconv.Itoa(i))
			sent := time.Now()
			lock, err := redislock.Obtain(ctx, client, key, time.Minute, nil)
			r.slowest = max(r.slowest, time.Since(sent))
			at := time.Since(p.start)
			if err == nil {
				n, err := direct.Exists(ctx, key).Result()
				_ = lock.Release(ctx)
				switch onNew := err == nil && n == 1; {
				case onNew && promoted:
					r.landed = at
					cancel()
					return
				case onNew:
					// Granted before the promotion, and kept by it.
				case err == nil || strings.HasPrefix(err.Error(), "MOVED "):
					// Granted by the old master: the new one does not have
					// it, or (a cluster replica) redirects its slot.
					r.others++
					if promoted {
						r.late++
						r.lastLate = at
					}
				default:
					r.err = fmt.Errorf("EXISTS %s on %s: %w", key, newMaster, err)
				}
			} else {
				r.failed++
				r.err = err
			}
			cancel()
			if at > 30*time.Second {
				r.err = fmt.Errorf("no lock granted by %s after 30 s; last error: %w", newMaster, r.err)
				return
			}
			select {
			case <-stop.Done():
				r.err = fmt.Errorf("probe stopped: %w", stop.Err())
				return
			case <-time.After(10 * time.Millisecond): // polling for the switch-over
			}
		}
	}()
	return p
}

// wait returns the probe's result, failing the test if it gave up.
func (p *probe) wait(t *testing.T) probeResult {
	t.Helper()
	r := <-p.done
	if r.landed == 0 {
		t.Fatal(r.err)
	}
	return r
}

// ms rounds d to milliseconds, for figures.
func ms(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

// waitRole waits until INFO replication on s reports role, for at most
// 30 s, and returns the time since start.
func waitRole(t *testing.T, s *redistest.Server, role string, start time.Time) time.Duration {
	t.Helper()
	client := s.Client(t)
	redistest.WaitFor(t, fmt.Sprintf("%s to be a %s", s, role), 30*time.Second, func() bool {
		return redistest.Info(t, client, "replication", "role") == role
	})
	return time.Since(start)
}

// fenceCounter reads the fence counter key on s directly (0 when absent).
func fenceCounter(t *testing.T, s *redistest.Server, key string) int64 {
	t.Helper()
	v, err := s.Client(t).Get(context.Background(), key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0
	}
	if err != nil {
		t.Fatalf("GET %s on %s: %v", key, s, err)
	}
	return v
}

// errorCount returns how many error replies starting with prefix s has
// sent (INFO errorstats; 0 when none).
func errorCount(t *testing.T, s *redistest.Server, prefix string) int64 {
	t.Helper()
	v, _ := strings.CutPrefix(redistest.Info(t, s.Client(t), "errorstats", "errorstat_"+prefix), "count=")
	if v == "" {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("INFO errorstats on %s: errorstat_%s:count=%q", s, prefix, v)
	}
	return n
}

// mustObtain obtains key through client or fails the test.
func mustObtain(t *testing.T, client redis.UniversalClient, key string, opt *redislock.Options) *redislock.Lock {
	t.Helper()
	lock, err := redislock.Obtain(context.Background(), client, key, time.Minute, opt)
	if err != nil {
		t.Fatalf("Obtain(%s): %v", key, err)
	}
	return lock
}

// testTag returns a hash tag of t's own, for keys that must share a slot.
func testTag(t *testing.T) redislock.HashTag {
	return redislock.HashTag(strings.Trim(redistest.Tag(t), "{}"))
}

// otherServer returns the data server of s that is not srv.
func otherServer(s *redistest.Sentinel, srv *redistest.Server) *redistest.Server {
	for _, d := range s.Servers() {
		if d != srv {
			return d
		}
	}
	return nil
}
