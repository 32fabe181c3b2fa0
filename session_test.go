package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/leaktest"
	"github.com/redislock/redislock/internal/redistest"
)

// sessionTTL is the TTL of the sessions of these tests: short, so that
// several pass in a second or two.
const sessionTTL = 600 * time.Millisecond

// sessionHook counts, by key, the keep-alive refreshes and the losses that
// hooks see.
type sessionHook struct {
	redislock.NopHook
	mu        sync.Mutex
	refreshes map[string]int
	lost      map[string][]redislock.LostReason
}

func newSessionHook() *sessionHook {
	return &sessionHook{refreshes: map[string]int{}, lost: map[string][]redislock.LostReason{}}
}

func (h *sessionHook) RefreshDone(_ context.Context, e redislock.RefreshEvent) {
	if e.KeepAlive && e.Err == nil {
		h.mu.Lock()
		h.refreshes[e.Keys[0]]++
		h.mu.Unlock()
	}
}

func (h *sessionHook) Lost(e redislock.LostEvent) {
	h.mu.Lock()
	h.lost[e.Keys[0]] = append(h.lost[e.Keys[0]], e.Reason)
	h.mu.Unlock()
}

func (h *sessionHook) counts(key string) (int, []redislock.LostReason) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.refreshes[key], append([]redislock.LostReason(nil), h.lost[key]...)
}

// newSession starts a session of sessionTTL on c, closed by Cleanup.
func newSession(t *testing.T, c *redislock.Client, opt *redislock.SessionOptions) *redislock.Session {
	t.Helper()
	sess, err := c.Session(sessionTTL, opt)
	if err != nil {
		t.Fatalf("Session: %v", err)
	}
	t.Cleanup(sess.Close)
	return sess
}

// spreadKeys returns n lock keys of t in n hash slots (Key puts all of a
// test's keys in one), so that a Cluster spreads them over its masters.
func spreadKeys(t *testing.T, n int) []string {
	tag := strings.Trim(redistest.Tag(t), "{}")
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("{%s.%d}:lock", tag, i)
	}
	return keys
}

// kept is a lease of a session: its name, its handle, its keep-alive.
type kept struct {
	name string
	ttl  func(context.Context) (time.Duration, error)
	ka   interface {
		Err() error
		Done() <-chan struct{}
		ValidUntil() time.Time
	}
}

// Leases of every kind in one session outlive several TTLs, each refreshed
// by the session and reported to the hooks; Release releases them all.
func TestSessionKeepsEveryKind(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := redislock.New(rdb)
		hook := newSessionHook()
		c.AddHook(hook)
		sess := newSession(t, c, nil)
		key := func(name string) string { return redistest.Key(t, name) }

		var all []kept
		lock, ka, err := sess.Obtain(ctx, key("lock"), nil)
		if err != nil {
			t.Fatalf("Obtain: %v", err)
		}
		all = append(all, kept{"lock", lock.TTL, ka})
		multi, ka, err := sess.ObtainMulti(ctx, []string{key("a"), key("b")}, &redislock.Options{FenceKey: key("fence")})
		if err != nil {
			t.Fatalf("ObtainMulti: %v", err)
		}
		all = append(all, kept{"multi", multi.TTL, ka})
		sem := c.Semaphore(key("sem"), 2)
		permit, err := sem.Acquire(ctx, sessionTTL, nil)
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		if ka, err = sess.Add(permit); err != nil {
			t.Fatalf("Add permit: %v", err)
		}
		all = append(all, kept{"permit", permit.TTL, ka})
		read, err := c.RWMutex(key("rw")).RLock(ctx, sessionTTL, nil)
		if err != nil {
			t.Fatalf("RLock: %v", err)
		}
		if ka, err = sess.Add(read); err != nil {
			t.Fatalf("Add read hold: %v", err)
		}
		all = append(all, kept{"read", read.TTL, ka})
		write, err := c.RWMutex(key("rw2")).Lock(ctx, sessionTTL, nil)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		if ka, err = sess.Add(write); err != nil {
			t.Fatalf("Add write lock: %v", err)
		}
		all = append(all, kept{"write", write.TTL, ka})
		election := c.Election(key("election"))
		lead, err := sess.Campaign(ctx, election, "me")
		if err != nil {
			t.Fatalf("Campaign: %v", err)
		}
		all = append(all, kept{"leadership", nil, lead})

		// The work: several TTLs.
		time.Sleep(4 * sessionTTL)
		for _, k := range all {
			if err := k.ka.Err(); err != nil {
				t.Errorf("%s lost: %v", k.name, err)
			}
			if k.ttl == nil {
				continue
			}
			if d, err := k.ttl(ctx); err != nil || d <= 0 {
				t.Errorf("%s: TTL = %v, %v; want held", k.name, d, err)
			}
		}
		if info, err := election.Leader(ctx); err != nil || info.Value != "me" {
			t.Errorf("Leader = %+v, %v; want me", info, err)
		}
		for _, name := range []string{"lock", "a", "sem"} {
			if n, lost := hook.counts(key(name)); n < 6 || len(lost) != 0 {
				t.Errorf("hooks saw %d refreshes of %s and losses %v, want 6 or more and none", n, name, lost)
			}
		}

		if err := sess.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		for _, k := range all {
			if err := k.ka.Err(); !errors.Is(err, redislock.ErrKeepAliveStopped) {
				t.Errorf("%s: Err after Release = %v, want ErrKeepAliveStopped", k.name, err)
			}
			if k.ttl == nil {
				continue
			}
			if d, err := k.ttl(ctx); err != nil || d != 0 {
				t.Errorf("%s: TTL after Release = %v, %v; want released", k.name, d, err)
			}
		}
		if _, err := election.Leader(ctx); !errors.Is(err, redislock.ErrNoLeader) {
			t.Errorf("Leader after Release = %v, want ErrNoLeader", err)
		}
		if err := sess.Err(); !errors.Is(err, redislock.ErrKeepAliveStopped) {
			t.Errorf("session Err = %v, want ErrKeepAliveStopped", err)
		}
		if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Errorf("Release of a lock the session released = %v, want ErrLockNotHeld", err)
		}
	})
}

// An admin deletes one key: that lease alone is lost, found gone by its
// next refresh (so before its key would have expired); the others go on.
func TestSessionOneLeaseLost(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		c := redislock.New(rdb)
		hook := newSessionHook()
		c.AddHook(hook)
		sess := newSession(t, c, nil)
		keys := []string{redistest.Key(t, "a"), redistest.Key(t, "b"), redistest.Key(t, "c")}
		kas := make([]*redislock.KeepAlive, len(keys))
		for i, k := range keys {
			var err error
			if _, kas[i], err = sess.Obtain(ctx, k, nil); err != nil {
				t.Fatalf("Obtain %s: %v", k, err)
			}
		}
		time.Sleep(sessionTTL) // a few refreshes
		pttl, err := rdb.PTTL(ctx, keys[1]).Result()
		if err != nil {
			t.Fatal(err)
		}
		expiry := time.Now().Add(pttl) // when the key would have expired
		expireNow(t, rdb, keys[1])
		recv(t, kas[1].Done(), "the loss of the key deleted")
		// Before the key would have expired: the loss comes from a refresh
		// that found the key gone (the hook's reason below), and no refresh
		// is sent past a lease's ValidUntil. How long before, for the log.
		t.Logf("loss seen %v before the key would have expired", time.Until(expiry))
		if err := kas[1].Err(); !errors.Is(err, redislock.ErrLockLost) || !errors.Is(err, redislock.ErrNotObtained) {
			t.Errorf("Err = %v, want ErrLockLost and ErrNotObtained", err)
		}
		time.Sleep(2 * sessionTTL)
		for i, k := range keys {
			_, lost := hook.counts(k)
			if i == 1 {
				if len(lost) != 1 || lost[0] != redislock.LostGone {
					t.Errorf("hooks saw losses %v of the key deleted, want [gone]", lost)
				}
				continue
			}
			if err := kas[i].Err(); err != nil || len(lost) != 0 {
				t.Errorf("%s lost too: %v, %v", k, err, lost)
			}
			if !mustExist(t, rdb, k) {
				t.Errorf("%s gone", k)
			}
		}
		if err := sess.Err(); err != nil {
			t.Errorf("session ended: %v", err)
		}
	})
}

// The server forgets its scripts (SCRIPT FLUSH): the session's next batch
// loads them again and loses nothing. A key made a hash: its lease alone
// ends, with the server's error, although it was refreshed in one script
// call with others.
func TestSessionScriptFlushAndWrongType(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		sess := newSession(t, redislock.New(rdb), nil)
		keys := []string{redistest.Key(t, "a"), redistest.Key(t, "b"), redistest.Key(t, "c")}
		kas := make([]*redislock.KeepAlive, len(keys))
		for i, k := range keys {
			var err error
			if _, kas[i], err = sess.Obtain(ctx, k, nil); err != nil {
				t.Fatalf("Obtain %s: %v", k, err)
			}
		}
		flush := func(ctx context.Context, c *redis.Client) error { return c.ScriptFlush(ctx).Err() }
		var err error
		if cl, ok := rdb.(*redis.ClusterClient); ok {
			err = cl.ForEachShard(ctx, flush)
		} else {
			err = flush(ctx, rdb.(*redis.Client))
		}
		if err != nil {
			t.Fatalf("SCRIPT FLUSH: %v", err)
		}
		time.Sleep(2 * sessionTTL)
		for i, ka := range kas {
			if err := ka.Err(); err != nil {
				t.Fatalf("%s lost after SCRIPT FLUSH: %v", keys[i], err)
			}
		}
		// In one transaction: a refresh between a DEL and an HSET would
		// find the key gone instead.
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, keys[1])
			p.HSet(ctx, keys[1], "f", "v")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		recv(t, kas[1].Done(), "the loss of the key made a hash")
		if err := kas[1].Err(); !errors.Is(err, redislock.ErrLockLost) || !strings.Contains(err.Error(), "WRONGTYPE") {
			t.Errorf("Err = %v, want ErrLockLost with the server's WRONGTYPE", err)
		}
		time.Sleep(sessionTTL)
		for _, i := range []int{0, 2} {
			if err := kas[i].Err(); err != nil {
				t.Errorf("%s lost too: %v", keys[i], err)
			}
		}
		if sess.Err() != nil {
			t.Errorf("session ended: %v", sess.Err())
		}
	})
}

// Redis frozen (SIGSTOP): every lease of the session is signalled lost
// while Redis answers nothing, and the session ends. On a Cluster, one
// master frozen does it. That the signal comes before the earliest key can
// expire is a matter of the loop's timer, checked under synctest by
// internal/session's TestSessionLostWhileRedisHangs; against a real server
// this test checks what the timer is set from: each lease's ValidUntil,
// plus the margin, is never later than its key's expiry on the server.
func TestSessionRedisFrozen(t *testing.T) {
	for _, f := range []redistest.Flavor{redistest.Redis, redistest.Valkey} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv := redistest.NewServer(t, f)
			opt := srv.Options()
			opt.ReadTimeout = 200 * time.Millisecond
			rdb := redis.NewClient(opt)
			defer rdb.Close()
			checkFrozen(t, rdb, spreadKeys(t, 20), func() func() { return srv.Freeze(t) })
		})
	}
	t.Run("redis-cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.NewCluster(t, redistest.Redis)
		opt := cl.Options()
		opt.ReadTimeout = 200 * time.Millisecond
		rdb := redis.NewClusterClient(opt)
		defer rdb.Close()
		keys := spreadKeys(t, 30)
		checkFrozen(t, rdb, keys, func() func() { return cl.MasterForKey(t, keys[0]).Freeze(t) })
	})
}

// checkFrozen keeps keys in a session, freezes Redis, and checks the
// losses.
func checkFrozen(t *testing.T, rdb redis.UniversalClient, keys []string, freeze func() (thaw func())) {
	t.Helper()
	ctx := context.Background()
	c := redislock.New(rdb)
	sess, err := c.Session(sessionTTL, nil)
	if err != nil {
		t.Fatal(err)
	}
	kas := make([]*redislock.KeepAlive, len(keys))
	for i, k := range keys {
		if _, kas[i], err = sess.Obtain(ctx, k, nil); err != nil {
			t.Fatalf("Obtain %s: %v", k, err)
		}
		time.Sleep(sessionTTL / 3 / time.Duration(len(keys))) // due at different times
	}
	// A key expires on the server no sooner than its lease's last send
	// plus the TTL, that is ValidUntil plus the margin.
	margin := sessionTTL/50 + 2*time.Millisecond
	checkExpiry := func(when string, mustExist bool) {
		t.Helper()
		for i, ka := range kas {
			valid := ka.ValidUntil()                          // before the read: a refresh in between only moves the expiry on
			at, err := rdb.PExpireTime(ctx, keys[i]).Result() // since the epoch; -1 or -2 (ns) for none
			switch {
			case err != nil && mustExist:
				t.Fatalf("%s: PEXPIRETIME %s: %v", when, keys[i], err)
			case err != nil: // a connection the freeze broke: nothing to compare
				t.Logf("%s: PEXPIRETIME %s: %v", when, keys[i], err)
			case at < 0 && mustExist:
				t.Errorf("%s: %s gone or without expiry (PEXPIRETIME %d)", when, keys[i], at)
			case at < 0: // expired since: nothing to compare
			case valid.Add(margin).After(time.Unix(0, int64(at)).Add(time.Millisecond)):
				t.Errorf("%s: lease %d valid until %v plus the margin, its key expires %v before that", when, i, valid.Format(time.StampMicro), valid.Add(margin).Sub(time.Unix(0, int64(at))))
			}
		}
	}
	for range 3 {
		time.Sleep(sessionTTL / 3)
		checkExpiry("while kept", true)
	}
	thaw := freeze()
	recv(t, sess.Done(), "the session's end while Redis is frozen")
	doneAt := time.Now()
	var earliest time.Time
	for i, ka := range kas {
		select {
		case <-ka.Done():
		default:
			t.Fatalf("lease %d not signalled when the session ended", i)
		}
		if err := ka.Err(); !errors.Is(err, redislock.ErrLockLost) {
			t.Errorf("lease %d: Err = %v, want ErrLockLost", i, err)
		}
		if v := ka.ValidUntil(); earliest.IsZero() || v.Before(earliest) {
			earliest = v
		}
	}
	t.Logf("losses seen %v before the earliest key could expire", earliest.Add(margin).Sub(doneAt))
	if err := sess.Err(); !errors.Is(err, redislock.ErrLockLost) {
		t.Errorf("session Err = %v, want ErrLockLost", err)
	}
	thaw()
	// The final ValidUntil of each lease, the one its signal was timed
	// from, against its key where the key has not expired yet.
	checkExpiry("after the thaw", false)
	sess.Close()
}

// A Cluster with leases on every master, and a slot that holds some moved
// to another master while the session runs: no lease is lost, each key is
// refreshed where it now lives.
func TestSessionClusterSlotMoved(t *testing.T) {
	t.Parallel()
	cl := redistest.NewCluster(t, redistest.Redis)
	rdb := cl.Client(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	sess := newSession(t, c, nil)
	keys := spreadKeys(t, 30)
	masters := map[string]bool{}
	kas := make([]*redislock.KeepAlive, len(keys))
	for i, k := range keys {
		var err error
		if _, kas[i], err = sess.Obtain(ctx, k, nil); err != nil {
			t.Fatalf("Obtain %s: %v", k, err)
		}
		masters[cl.MasterForKey(t, k).Addr()] = true
	}
	if len(masters) != 3 {
		t.Fatalf("the keys are on %d masters, want all 3", len(masters))
	}
	moved := keys[0]
	from := cl.MasterForKey(t, moved)
	var to *redistest.Server
	for _, k := range keys {
		if m := cl.MasterForKey(t, k); m != from {
			to = m
			break
		}
	}
	time.Sleep(sessionTTL)
	cl.MoveSlot(t, redistest.Slot(moved), to)
	time.Sleep(3 * sessionTTL)
	for i, ka := range kas {
		if err := ka.Err(); err != nil {
			t.Errorf("%s lost: %v", keys[i], err)
		}
	}
	if got := cl.MasterForKey(t, moved); got != to {
		t.Fatalf("slot not moved: %s serves it", got)
	}
	pttl, err := to.Client(t).PTTL(ctx, moved).Result()
	if err != nil || pttl <= 0 || pttl > sessionTTL {
		t.Errorf("PTTL of the moved key on its new master = %v, %v; want kept alive", pttl, err)
	}
	if err := sess.Release(ctx); err != nil {
		t.Errorf("Release: %v", err)
	}
	for _, k := range keys {
		if mustExist(t, rdb, k) {
			t.Errorf("%s left after Release", k)
		}
	}
}

// A session leaves no goroutine behind: its loop and senders are gone once
// Close or Release returns, also after a loss, and after a batch that
// hung on a frozen server. Not parallel, so that no other test's
// goroutines come and go meanwhile.
func TestSessionLeavesNoGoroutine(t *testing.T) {
	for _, tp := range redistest.Topologies() {
		t.Run(tp.Name, func(t *testing.T) {
			_ = tp.NewClient(t).Ping(context.Background()).Err() // the shared instance started
			defer leaktest.Check(t, leaktest.Now())
			rdb := redis.NewUniversalClient(tp.Options(t))
			defer rdb.Close()
			ctx := context.Background()
			c := redislock.New(rdb)
			sess, err := c.Session(sessionTTL, nil)
			if err != nil {
				t.Fatal(err)
			}
			keys := spreadKeys(t, 6)
			kas := make([]*redislock.KeepAlive, len(keys))
			for i, k := range keys {
				if _, kas[i], err = sess.Obtain(ctx, k, nil); err != nil {
					t.Fatal(err)
				}
			}
			permit, err := c.Semaphore(redistest.Key(t, "sem"), 1).Acquire(ctx, sessionTTL, nil)
			if err != nil {
				t.Fatal(err)
			}
			ka, err := sess.Add(permit)
			if err != nil {
				t.Fatal(err)
			}
			expireNow(t, rdb, keys[0])
			recv(t, kas[0].Done(), "the loss of the key deleted")
			if err := sess.Release(ctx); err != nil {
				t.Errorf("Release: %v", err)
			}
			if err := ka.Err(); !errors.Is(err, redislock.ErrKeepAliveStopped) {
				t.Errorf("permit: Err = %v", err)
			}
			if n, err := permit.TTL(ctx); err != nil || n != 0 {
				t.Errorf("permit TTL after Release = %v, %v", n, err)
			}
		})
	}
	t.Run("frozen", func(t *testing.T) {
		srv := redistest.NewServer(t, redistest.Redis)
		defer leaktest.Check(t, leaktest.Now())
		opt := srv.Options()
		opt.ReadTimeout = 300 * time.Millisecond
		rdb := redis.NewClient(opt)
		defer rdb.Close()
		sess, err := redislock.New(rdb).Session(sessionTTL, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, ka, err := sess.Obtain(context.Background(), redistest.Key(t, "lock"), nil)
		if err != nil {
			t.Fatal(err)
		}
		thaw := srv.Freeze(t)
		recv(t, ka.Done(), "the loss while the server is frozen")
		start := time.Now()
		sess.Close()
		t.Logf("Close took %v, a batch hanging (ReadTimeout %v)", time.Since(start), opt.ReadTimeout)
		thaw()
	})
}

// The session refuses what it cannot keep, before anything is sent.
func TestSessionBadInput(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	if _, err := c.Session(0, nil); !errors.Is(err, redislock.ErrInvalidTTL) {
		t.Errorf("Session(0) = %v, want ErrInvalidTTL", err)
	}
	if _, err := c.Session(time.Second, &redislock.SessionOptions{Interval: time.Second}); !errors.Is(err, redislock.ErrInvalidOption) {
		t.Errorf("Interval = TTL: %v, want ErrInvalidOption", err)
	}
	if _, err := (*redislock.Client)(nil).Session(time.Second, nil); !errors.Is(err, redislock.ErrNilClient) {
		t.Errorf("nil Client: %v, want ErrNilClient", err)
	}
	if _, err := redislock.New(nil).Session(time.Second, nil); !errors.Is(err, redislock.ErrNilClient) {
		t.Errorf("nil RedisClient: %v, want ErrNilClient", err)
	}
	sess := newSession(t, c, nil)
	if _, err := sess.Add(nil); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Add(nil) = %v, want ErrLockNotHeld", err)
	}
	if _, err := sess.Add((*redislock.Lock)(nil)); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Add of a nil Lock = %v, want ErrLockNotHeld", err)
	}
	other, err := redislock.New(rdb).Obtain(ctx, redistest.Key(t, "other"), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release(ctx)
	if _, err := sess.Add(other); !errors.Is(err, redislock.ErrUnsupportedClient) {
		t.Errorf("Add of another Client's lock = %v, want ErrUnsupportedClient", err)
	}
	lock, ka, err := sess.Obtain(ctx, redistest.Key(t, "lock"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Add(lock); !errors.Is(err, redislock.ErrKeepAliveRunning) {
		t.Errorf("Add twice = %v, want ErrKeepAliveRunning", err)
	}
	if _, err := lock.KeepAlive(time.Second, nil); !errors.Is(err, redislock.ErrKeepAliveRunning) {
		t.Errorf("KeepAlive of a lock in the session = %v, want ErrKeepAliveRunning", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ka.Err(); !errors.Is(err, redislock.ErrKeepAliveStopped) {
		t.Errorf("Err after Release = %v, want ErrKeepAliveStopped", err)
	}
	if _, err := sess.Add(lock); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Add of a released lock = %v, want ErrLockNotHeld", err)
	}
	lead, err := c.Election(redistest.Key(t, "e")).Campaign(ctx, "v", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lead.Resign(ctx) }()
	if _, err := sess.Add(lead); !errors.Is(err, redislock.ErrLockNotHeld) {
		t.Errorf("Add of a Leadership = %v, want ErrLockNotHeld", err)
	}
	sess.Close()
	if _, _, err := sess.Obtain(ctx, redistest.Key(t, "late"), nil); !errors.Is(err, redislock.ErrKeepAliveStopped) {
		t.Errorf("Obtain after Close = %v, want ErrKeepAliveStopped", err)
	}
	if mustExist(t, rdb, redistest.Key(t, "late")) {
		t.Error("Obtain after Close left its key held")
	}
	//lint:ignore SA1012 a nil context is the input under test
	if err := sess.Release(nil); !errors.Is(err, redislock.ErrNilContext) { //nolint:staticcheck // SA1012: a nil context is the input under test
		t.Errorf("Release(nil) = %v, want ErrNilContext", err)
	}
}
