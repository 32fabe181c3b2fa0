package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/redistest"
)

// waitEnv is one topology for the tests of WaitForRelease: clients with a
// name of their choosing (to find their connections in CLIENT LIST) and an
// admin client.
type waitEnv struct {
	newClient func(name string) redis.UniversalClient
	admin     redis.UniversalClient
}

// forEachWaitTopology runs fn as a parallel subtest on every topology, like
// forEachTopology, with a waitEnv.
func forEachWaitTopology(t *testing.T, fn func(t *testing.T, env *waitEnv)) {
	t.Helper()
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			t.Parallel()
			env := &waitEnv{newClient: namedClients(t, topo)}
			env.admin = env.newClient("")
			fn(t, env)
		})
	}
}

// namedClients returns a function that makes clients of topo's shared
// instance whose connections carry a name (CLIENT SETNAME). Cleanup closes
// them.
func namedClients(t *testing.T, topo redistest.Topology) func(string) redis.UniversalClient {
	return func(name string) redis.UniversalClient {
		o := topo.Options(t)
		o.ClientName = name
		c := redis.NewUniversalClient(o)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
}

var clientSeq atomic.Int64

// clientName returns a connection name no other test uses.
func clientName(what string) string {
	return fmt.Sprintf("redislock-test-%s-%d", what, clientSeq.Add(1))
}

// blocked reports whether a connection named name is blocked (in BLMOVE)
// on some master of admin's topology.
func blocked(t *testing.T, admin redis.UniversalClient, name string) bool {
	t.Helper()
	ctx := context.Background()
	var lists []string
	if c, ok := admin.(*redis.ClusterClient); ok {
		var mu sync.Mutex
		err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
			l, err := m.ClientList(ctx).Result()
			mu.Lock()
			lists = append(lists, l)
			mu.Unlock()
			return err
		})
		if err != nil {
			t.Fatalf("CLIENT LIST: %v", err)
		}
	} else {
		l, err := admin.ClientList(ctx).Result()
		if err != nil {
			t.Fatalf("CLIENT LIST: %v", err)
		}
		lists = append(lists, l)
	}
	for _, l := range lists {
		for line := range strings.SplitSeq(l, "\n") {
			fields := strings.Fields(line)
			if slices.Contains(fields, "name="+name) && slices.ContainsFunc(fields, func(f string) bool {
				flags, ok := strings.CutPrefix(f, "flags=")
				return ok && strings.Contains(flags, "b")
			}) {
				return true
			}
		}
	}
	return false
}

// waitUntil polls cond, each poll a Redis round trip, until it holds; it
// fails the test after 10 s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	redistest.WaitFor(t, what, 10*time.Second, cond)
}

// waitCounter is a go-redis hook that counts what a waiter sends.
type waitCounter struct {
	mu       sync.Mutex
	sending  int  // BLPOP calls sent, counted before their reply
	evals    int  // script calls, in pipelines or not
	blocks   int  // BLPOP calls
	timeouts int  // BLPOP calls that timed out
	grants   int  // attempts right after a block that obtained the lock: handed over (before, at or just after the block's end)
	blocked  bool // the last command was a block
}

// sent returns the BLPOP calls sent so far, replied to or not.
func (c *waitCounter) sent() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sending
}

func (c *waitCounter) counts() (evals, blocks, timeouts, grants int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.evals, c.blocks, c.timeouts, c.grants
}

func (c *waitCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *waitCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			c.mu.Lock()
			c.evals++
			if v, ok := cmd.(*redis.Cmd); ok && c.blocked {
				if fence, ok := v.Val().(int64); ok && fence >= 0 && fence != 1 {
					c.grants++
				}
			}
			c.blocked = false
			c.mu.Unlock()
		}
		return err
	}
}

func (c *waitCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.mu.Lock()
		for _, cmd := range cmds {
			if cmd.Name() == "blpop" {
				c.sending++
			}
		}
		c.mu.Unlock()
		err := next(ctx, cmds)
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, cmd := range cmds {
			switch cmd.Name() {
			case "evalsha", "eval":
				c.evals++
			case "blpop":
				c.blocks++
				c.blocked = true
				if errors.Is(cmd.Err(), redis.Nil) {
					c.timeouts++
				}
			}
		}
		return err
	}
}

// waitQueue and aliveSet name the companions of a lock key with a hash tag
// (see internal/handoff.Companions).
func waitQueue(key string) string { return key + ":redislock:waiters" }
func aliveSet(key string) string  { return key + ":redislock:alive" }

func waitOpt() *redislock.Options {
	// The fallback would poll once an hour: a waiter that gets the lock
	// soon was woken by an event.
	return &redislock.Options{RetryStrategy: redislock.WaitForRelease(redislock.LinearBackoff(time.Hour))}
}

type obtained struct {
	lock *redislock.Lock
	err  error
	at   time.Time
}

// obtainAsync runs Obtain in a goroutine; the result comes on the channel.
func obtainAsync(ctx context.Context, rdb redislock.RedisClient, key string, ttl time.Duration, opt *redislock.Options) <-chan obtained {
	ch := make(chan obtained, 1)
	go func() {
		lock, err := redislock.Obtain(ctx, rdb, key, ttl, opt)
		ch <- obtained{lock, err, time.Now()}
	}()
	return ch
}

func TestWaitForReleaseWakesOnRelease(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		holder, err := redislock.Obtain(ctx, env.admin, key, time.Minute, waitOpt())
		if err != nil {
			t.Fatalf("holder: %v", err)
		}
		name := clientName("waiter")
		rdb := env.newClient(name)
		counter := &waitCounter{}
		rdb.AddHook(counter)
		done := obtainAsync(ctx, rdb, key, time.Minute, waitOpt())
		waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, name) })

		if err := holder.Release(ctx); err != nil {
			t.Fatalf("holder's Release: %v", err)
		}
		got := <-done
		if got.err != nil {
			t.Fatalf("waiter: %v", got.err)
		}
		evals, blocks, timeouts, grants := counter.counts()
		// One attempt that failed and registered, one block that the
		// release served, and the attempt after it. On a loaded machine a
		// block may time out (before or just as the release came): each
		// block is followed by one attempt, and no more than one block was
		// woken.
		if grants != 1 || evals != 1+blocks || blocks-timeouts > 1 {
			t.Errorf("waiter sent %d attempts and %d blocks (%d timed out), obtained with %d grants; want 1 + one per block, at most 1 woken, 1",
				evals, blocks, timeouts, grants)
		}
		if err := got.lock.Release(ctx); err != nil {
			t.Fatalf("waiter's Release: %v", err)
		}
		for _, k := range []string{key, waitQueue(key), aliveSet(key)} {
			if mustExist(t, env.admin, k) {
				t.Errorf("%s left behind", k)
			}
		}
	})
}

func TestWaitForReleaseFirstComeFirstServed(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		for _, shared := range []bool{false, true} {
			// Waiters are served in the order they arrived, whether their
			// blocks ended and began again meanwhile or not.
			if order := firstComeFirstServed(t, env, shared); !slices.Equal(order, []int{0, 1, 2, 3}) {
				t.Errorf("shared client %t: waiters obtained the lock in the order %v, want [0 1 2 3]", shared, order)
			}
		}
	})
}

// firstComeFirstServed starts four waiters, one after the other, on their
// own clients or sharing one, then releases the lock they wait for, and
// returns the order in which they obtained it.
func firstComeFirstServed(t *testing.T, env *waitEnv, shared bool) (order []int) {
	ctx := context.Background()
	key := redistest.Key(t, fmt.Sprintf("lock-%t-%d", shared, clientSeq.Add(1)))
	holder, err := redislock.Obtain(ctx, env.admin, key, time.Minute, waitOpt())
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	var (
		mu         sync.Mutex
		wg         sync.WaitGroup
		sharedName = clientName("shared")
		one        = env.newClient(sharedName)
	)
	const waiters = 4
	for i := range waiters {
		name := clientName("fifo")
		rdb := one
		if !shared {
			rdb = env.newClient(name)
		}
		wg.Go(func() {
			lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, waitOpt())
			if err != nil {
				t.Errorf("waiter %d: %v", i, err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			if err := lock.Release(ctx); err != nil {
				t.Errorf("waiter %d: Release: %v", i, err)
			}
		})
		// Each waiter in turn registers, and blocks on its own connection
		// or joins the client's waiting goroutines.
		waitUntil(t, fmt.Sprintf("waiter %d to register", i), func() bool {
			n, err := env.admin.ZCard(ctx, waitQueue(key)).Result()
			return err == nil && n == int64(i+1)
		})
		switch {
		case !shared:
			waitUntil(t, fmt.Sprintf("waiter %d to block", i), func() bool { return blocked(t, env.admin, name) })
		case i == 0:
			// The first of the client's waits to be ready to block leads
			// them: let waiter 0 be that one before waiter 1 starts.
			waitUntil(t, "waiter 0 to block for the shared client", func() bool { return blocked(t, env.admin, sharedName) })
		}
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatalf("holder's Release: %v", err)
	}
	wg.Wait()
	return order
}

func TestWaitForReleaseHolderDies(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		const ttl = 300 * time.Millisecond
		cases := []struct {
			name   string
			client redislock.RedisClient
		}{
			{"blocking", env.newClient(clientName("orphan"))},
			// Only a redis.Scripter: it polls, with an hour-long fallback.
			{"polling", newFaultyClient(env.newClient(clientName("orphan")))},
		}
		for _, tc := range cases {
			key := redistest.Key(t, tc.name)
			start := time.Now()
			// The holder takes the lock and never releases it.
			if _, err := redislock.Obtain(ctx, env.admin, key, ttl, waitOpt()); err != nil {
				t.Fatalf("holder: %v", err)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			lock, err := redislock.Obtain(wctx, tc.client, key, time.Minute, waitOpt())
			cancel()
			if err != nil {
				t.Fatalf("%s waiter: %v", tc.name, err)
			}
			// Not before the TTL, and not at the end of a block: the
			// exact timing is TestWaitHolderExpiry's (internal/handoff).
			if took := time.Since(start); took < ttl-5*time.Millisecond || took > ttl+time.Second {
				t.Errorf("%s waiter obtained the lock of a dead holder after %v, want %v plus a round trip", tc.name, took, ttl)
			} else {
				t.Logf("%s waiter: %v after a TTL of %v", tc.name, took, ttl)
			}
			_ = lock.Release(ctx)
		}
	})
}

// ghost plays a waiter that no longer answers (its process died or was
// stopped, its host cut off): registered in the key's line, live for a
// minute, and blocked on its grant list through a connection of its own
// (BLPOP, whose grant nobody then takes). Its claim window is 100 ms.
type ghost struct {
	rdb  redis.UniversalClient
	name string
	id   string
	done chan error
}

const ghostClaim = 100 * time.Millisecond

func newGhost(t *testing.T, env *waitEnv, key string) *ghost {
	t.Helper()
	g := &ghost{name: clientName("ghost"), id: "GHOST.100", done: make(chan error, 1)}
	g.rdb = env.newClient(g.name)
	registerGhost(t, env, key, g.id)
	go func() {
		g.done <- g.rdb.BLPop(context.Background(), 5*time.Second, waitQueue(key)+":"+g.id).Err()
	}()
	waitUntil(t, "the ghost to block", func() bool { return blocked(t, env.admin, g.name) })
	return g
}

// registerGhost registers waiter id in key's line, as its first failed
// attempt would, live for a minute.
func registerGhost(t *testing.T, env *waitEnv, key, id string) {
	t.Helper()
	ctx := context.Background()
	now, err := env.admin.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.admin.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZAddNX(ctx, waitQueue(key), redis.Z{Score: float64(now.UnixMicro()), Member: id})
		p.ZAdd(ctx, aliveSet(key), redis.Z{Score: float64(now.Add(time.Minute).UnixMilli()), Member: id})
		p.PExpire(ctx, waitQueue(key), time.Minute)
		p.PExpire(ctx, aliveSet(key), time.Minute)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// checkReservedFor checks that key is reserved for waiter id, for at most
// its claim window.
func checkReservedFor(t *testing.T, admin redis.UniversalClient, key, id string, claim time.Duration) {
	t.Helper()
	ctx := context.Background()
	v, err := admin.Get(ctx, key).Result()
	if want := strconv.Itoa(len(id)+1) + ":~" + id + ":0:"; err != nil || v != want {
		t.Fatalf("%s = %q (%v), want the reservation %q", key, v, err, want)
	}
	if pttl := admin.PTTL(ctx, key).Val(); pttl <= 0 || pttl > claim {
		t.Errorf("the reservation for %s lasts %v, want at most its claim window %v", id, pttl, claim)
	}
}

// A waiter that no longer answers keeps the key at most its claim window,
// once: blocked (its grant popped by Redis and never taken), or
// registered and not blocked. The live waiter behind it then gets the
// lock, and the ghost has left the line.
func TestWaitForReleaseDeadWaiters(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		for _, blocking := range []bool{true, false} {
			t.Run(fmt.Sprintf("blocking=%t", blocking), func(t *testing.T) {
				ctx := context.Background()
				key := redistest.Key(t, "lock")
				holder, err := redislock.Obtain(ctx, env.admin, key, time.Minute, waitOpt())
				if err != nil {
					t.Fatalf("holder: %v", err)
				}
				id := "GHOST.100"
				if blocking {
					id = newGhost(t, env, key).id
				} else {
					registerGhost(t, env, key, id)
				}
				name := clientName("live")
				done := obtainAsync(ctx, env.newClient(name), key, time.Minute, waitOpt())
				waitUntil(t, "the live waiter to register", func() bool {
					return env.admin.ZCard(ctx, waitQueue(key)).Val() == 2
				})
				released := time.Now()
				if err := holder.Release(ctx); err != nil {
					t.Fatal(err)
				}
				checkReservedFor(t, env.admin, key, id, ghostClaim)
				got := <-done
				if got.err != nil {
					t.Fatalf("live waiter: %v", got.err)
				}
				t.Logf("a waiter that does not answer stalled the next one for %v", got.at.Sub(released))
				if n := env.admin.ZScore(ctx, waitQueue(key), id).Err(); !errors.Is(n, redis.Nil) {
					t.Errorf("the ghost is still in the line (%v)", n)
				}
				_ = got.lock.Release(ctx)
			})
		}
	})
}

func TestWaitForReleaseContext(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		key := redistest.Key(t, "lock")
		holder, err := redislock.Obtain(context.Background(), env.admin, key, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = holder.Release(context.Background()) }()

		t.Run("cancel", func(t *testing.T) {
			// One goroutine blocks on Redis for the shared client; the other
			// waits for it. Both notice the cancellation, the first within
			// its block.
			ctx, cancel := context.WithCancel(context.Background())
			rdb := env.newClient(clientName("cancel"))
			first := obtainAsync(ctx, rdb, key, time.Minute, waitOpt())
			waitUntil(t, "the first waiter to register", func() bool {
				return env.admin.ZCard(context.Background(), waitQueue(key)).Val() == 1
			})
			second := obtainAsync(ctx, rdb, key, time.Minute, waitOpt())
			waitUntil(t, "the second waiter to register", func() bool {
				return env.admin.ZCard(context.Background(), waitQueue(key)).Val() == 2
			})
			cancelled := time.Now()
			cancel()
			for i, ch := range []<-chan obtained{second, first} {
				got := <-ch
				if !errors.Is(got.err, redislock.ErrNotObtained) || !errors.Is(got.err, context.Canceled) {
					t.Errorf("waiter %d: %v, want ErrNotObtained and context.Canceled", 2-i, got.err)
				}
				if took := got.at.Sub(cancelled); took > time.Second {
					t.Errorf("waiter %d noticed the cancellation after %v", 2-i, took)
				}
			}
			if n := env.admin.ZCard(context.Background(), waitQueue(key)).Val(); n != 0 {
				t.Errorf("%d waiters still registered after giving up", n)
			}
		})

		t.Run("deadline", func(t *testing.T) {
			const wait = 300 * time.Millisecond
			start := time.Now() // before the deadline is set: took >= wait
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			_, err := redislock.Obtain(ctx, env.newClient(clientName("deadline")), key, time.Minute, waitOpt())
			if !errors.Is(err, redislock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want ErrNotObtained and DeadlineExceeded", err)
			}
			// Not before the deadline, nor a block after it; the exact
			// timing is TestWaitDeadline's (internal/handoff).
			if took := time.Since(start); took < wait || took > wait+time.Second {
				t.Errorf("gave up after %v, want the deadline of %v", took, wait)
			}
		})

		t.Run("ttl", func(t *testing.T) {
			// Without a deadline, the wait ends after the TTL.
			const ttl = 300 * time.Millisecond
			start := time.Now()
			_, err := redislock.Obtain(context.Background(), env.newClient(clientName("ttl")), key, ttl, waitOpt())
			if !errors.Is(err, redislock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want ErrNotObtained and DeadlineExceeded", err)
			}
			if took := time.Since(start); took < ttl || took > ttl+time.Second {
				t.Errorf("gave up after %v, want the TTL of %v", took, ttl)
			}
		})
	})
}

// Many short holds by waiters on their own clients and on a shared one: one
// holder at a time, every waiter served, handovers made, nothing left.
func TestWaitForReleaseStress(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		const workers, rounds = 8, 25
		var (
			wg       sync.WaitGroup
			inside   atomic.Int32
			counters []*waitCounter
			shared   = env.newClient(clientName("stress-shared"))
		)
		sharedCounter := &waitCounter{}
		shared.AddHook(sharedCounter)
		counters = append(counters, sharedCounter)
		start := time.Now()
		for i := range workers {
			rdb := shared
			if i%2 == 0 {
				rdb = env.newClient(clientName("stress"))
				c := &waitCounter{}
				rdb.AddHook(c)
				counters = append(counters, c)
			}
			wg.Go(func() {
				for range rounds {
					lock, err := redislock.Obtain(ctx, rdb, key, 10*time.Second, waitOpt())
					if err != nil {
						t.Errorf("worker %d: %v", i, err)
						return
					}
					if n := inside.Add(1); n != 1 {
						t.Errorf("%d holders at once", n)
					}
					inside.Add(-1)
					if err := lock.Release(ctx); err != nil {
						t.Errorf("worker %d: Release: %v", i, err)
						return
					}
				}
			})
		}
		wg.Wait()
		var blocks, timeouts, grants int
		for _, c := range counters {
			_, b, to, g := c.counts()
			blocks, timeouts, grants = blocks+b, timeouts+to, grants+g
		}
		// Blocks may time out: a waiter blocks for as long as it has
		// waited (at least 250 ms), and on a loaded machine seven others
		// can take longer than that to go round. The line's order and its
		// wake-ups are checked script by script by TestLineScripts.
		t.Logf("%d acquisitions in %v: %d blocks (%d timed out), %d obtained with a grant", workers*rounds, time.Since(start), blocks, timeouts, grants)
		if grants == 0 {
			t.Errorf("no acquisition of %d came with a grant: nothing was handed over", workers*rounds)
		}
		for _, k := range []string{key, waitQueue(key), aliveSet(key)} {
			if mustExist(t, env.admin, k) {
				t.Errorf("%s left behind", k)
			}
		}
	})
}

func TestWaitForReleaseMultiKey(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		a, b := redistest.Key(t, "a"), redistest.Key(t, "b")

		// Both keys held by another lock: the waiter gets both on release.
		holder, err := redislock.ObtainMulti(ctx, env.admin, []string{a, b}, time.Minute, waitOpt())
		if err != nil {
			t.Fatal(err)
		}
		name := clientName("multi")
		rdb := env.newClient(name)
		counter := &waitCounter{}
		rdb.AddHook(counter)
		done := make(chan obtained, 1)
		go func() {
			lock, err := redislock.ObtainMulti(ctx, rdb, []string{a, b}, time.Minute, waitOpt())
			done <- obtained{lock, err, time.Now()}
		}()
		waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, name) })
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.err != nil {
			t.Fatal(got.err)
		}
		if _, _, _, grants := counter.counts(); grants != 1 {
			t.Errorf("obtained with %d grants, want 1", grants)
		}
		if err := got.lock.Release(ctx); err != nil {
			t.Fatal(err)
		}

		// The keys held by two locks: the waiter queues on the one held
		// longer (b), is woken when b is released while a is still held,
		// passes b on and waits for a, then is woken by a's release.
		la, err := redislock.Obtain(ctx, env.admin, a, 20*time.Second, waitOpt())
		if err != nil {
			t.Fatal(err)
		}
		lb, err := redislock.Obtain(ctx, env.admin, b, 40*time.Second, waitOpt())
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			lock, err := redislock.ObtainMulti(ctx, rdb, []string{a, b}, time.Minute, waitOpt())
			done <- obtained{lock, err, time.Now()}
		}()
		waitUntil(t, "the waiter to queue on b", func() bool { return env.admin.ZCard(ctx, waitQueue(b)).Val() == 1 })
		if err := lb.Release(ctx); err != nil {
			t.Fatal(err)
		}
		waitUntil(t, "the waiter to queue on a", func() bool { return env.admin.ZCard(ctx, waitQueue(a)).Val() == 1 })
		if mustExist(t, env.admin, b) {
			t.Errorf("b is still reserved after the waiter found a held")
		}
		if err := la.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got = <-done
		if got.err != nil {
			t.Fatal(got.err)
		}
		if err := got.lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

// A client that is only a redis.Scripter cannot block: it polls, and its
// Release still hands the lock over to a waiter that blocks.
func TestWaitForReleaseScripterOnly(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		scripter := newFaultyClient(env.newClient(clientName("scripter")))
		holder, err := redislock.Obtain(ctx, scripter, key, time.Minute, waitOpt())
		if err != nil {
			t.Fatal(err)
		}
		name := clientName("waiter")
		rdb := env.newClient(name)
		counter := &waitCounter{}
		rdb.AddHook(counter)
		done := obtainAsync(ctx, rdb, key, time.Minute, waitOpt())
		waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, name) })
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.err != nil {
			t.Fatal(got.err)
		}
		if _, _, _, grants := counter.counts(); grants != 1 {
			t.Errorf("obtained with %d grants, want 1: the polling holder's Release did not hand over", grants)
		}

		// And it waits by polling with its fallback.
		poll := &redislock.Options{RetryStrategy: redislock.WaitForRelease(redislock.LinearBackoff(5 * time.Millisecond))}
		before := scripter.calls()
		pending := obtainAsync(ctx, scripter, key, time.Minute, poll)
		waitUntil(t, "the scripter to poll", func() bool { return scripter.calls() > before+1 })
		if err := got.lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got := <-pending; got.err != nil {
			t.Fatalf("polling waiter: %v", got.err)
		} else {
			_ = got.lock.Release(ctx)
		}
	})
}

// A server that forgot the scripts (restarted, failed over) while a waiter
// blocked: the attempt that follows the block loads the script again.
func TestWaitForReleaseNoScript(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Redis)
	ctx := context.Background()
	admin := srv.Client(t)
	key := redistest.Key(t, "lock")
	holder, err := redislock.Obtain(ctx, admin, key, time.Minute, waitOpt())
	if err != nil {
		t.Fatal(err)
	}
	o := srv.Options()
	o.ClientName = clientName("noscript")
	rdb := redis.NewClient(o)
	defer rdb.Close()
	counter := &waitCounter{}
	rdb.AddHook(counter)
	done := obtainAsync(ctx, rdb, key, time.Minute, waitOpt())
	waitUntil(t, "the waiter to block", func() bool { return blocked(t, admin, o.ClientName) })
	if err := admin.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	if evals, _, _, _ := counter.counts(); evals != 3 {
		t.Errorf("%d script calls, want 3: the failed attempt, the attempt after the block (NOSCRIPT), and its EVAL", evals)
	}
	_ = got.lock.Release(ctx)
}

// A lock handed over at the end of a long block still has most of its lease
// on the local clock: it can be kept alive.
func TestWaitForReleaseKeepAlive(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	key := redistest.Key(t, "lock")
	const ttl = time.Second
	holder, err := redislock.Obtain(ctx, rdb, key, time.Minute, waitOpt())
	if err != nil {
		t.Fatal(err)
	}
	name := clientName("keepalive")
	waiter := namedClients(t, redistest.Topology{Name: "redis"})(name)
	done := obtainAsync(ctx, waiter, key, ttl, waitOpt())
	waitUntil(t, "the waiter to block", func() bool { return blocked(t, rdb, name) })
	// Release late in the waiter's block (at most half its TTL), as after
	// a long hold.
	time.Sleep(ttl / 4)
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	k, err := got.lock.KeepAlive(ttl, nil)
	if err != nil {
		t.Fatalf("KeepAlive of a lock handed over after a block: %v", err)
	}
	k.Stop()
	_ = got.lock.Release(ctx)
}

// crashWaiter starts a waiter for key on a client of its own and, once it
// blocks, closes that client: to Redis, a waiter whose process died,
// registered in the wait queue. It returns when the waiter's Obtain has
// returned (with the closed client's error).
func crashWaiter(t *testing.T, env *waitEnv, keys []string) {
	t.Helper()
	name := clientName("crash")
	rdb := env.newClient(name)
	done := make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, err := redislock.ObtainMulti(ctx, rdb, keys, time.Minute, waitOpt())
		done <- err
	}()
	waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, name) })
	_ = rdb.Close()
	// What remains of the waiter cannot reach Redis: its Obtain ends, and
	// its leave script fails.
	cancel()
	if err := <-done; err == nil {
		t.Fatal("the crashed waiter obtained the lock")
	}
}

// Issue 11 item 4: a waiter that died costs at most one reservation with
// no taker, not one at every release for its registration's life.
func TestWaitForReleaseCrashedWaiterCostsOneReservation(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		holder, err := redislock.Obtain(ctx, env.admin, key, time.Minute, waitOpt())
		if err != nil {
			t.Fatal(err)
		}
		crashWaiter(t, env, []string{key})
		other := env.newClient(clientName("other"))
		refused := 0
		const rounds = 5
		for range rounds {
			if err := holder.Release(ctx); err != nil {
				t.Fatalf("holder's Release: %v", err)
			}
			// Nobody holds the lock, and the only waiter is dead.
			if lock, err := redislock.Obtain(ctx, other, key, time.Minute, nil); err == nil {
				if err := lock.Release(ctx); err != nil {
					t.Fatal(err)
				}
			} else if errors.Is(err, redislock.ErrNotObtained) {
				refused++
			} else {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			holder, err = redislock.Obtain(wctx, env.admin, key, time.Minute, waitOpt())
			cancel()
			if err != nil {
				t.Fatalf("holder: %v", err)
			}
		}
		if refused > 1 {
			t.Errorf("%d of %d NoRetry obtains of a free lock refused after a waiter died, want at most 1", refused, rounds)
		}
		_ = holder.Release(ctx)
	})
}

// keysWithoutTTL returns the keys matching pattern, on every master of
// admin's topology, that have no expiry.
func keysWithoutTTL(t *testing.T, admin redis.UniversalClient, pattern string) []string {
	t.Helper()
	ctx := context.Background()
	var (
		mu  sync.Mutex
		out []string
	)
	scan := func(ctx context.Context, c redis.Cmdable) error {
		keys, err := c.Keys(ctx, pattern).Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			if c.PTTL(ctx, k).Val() == -time.Nanosecond {
				mu.Lock()
				out = append(out, k)
				mu.Unlock()
			}
		}
		return nil
	}
	var err error
	if c, ok := admin.(*redis.ClusterClient); ok {
		err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return scan(ctx, m) })
	} else {
		err = scan(ctx, admin)
	}
	if err != nil {
		t.Fatalf("KEYS %s: %v", pattern, err)
	}
	return out
}

// flushScripts makes every master of admin's topology forget its scripts,
// as a restart or a failover does.
func flushScripts(t *testing.T, admin redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	var err error
	if c, ok := admin.(*redis.ClusterClient); ok {
		err = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.ScriptFlush(ctx).Err() })
	} else {
		err = admin.ScriptFlush(ctx).Err()
	}
	if err != nil {
		t.Fatalf("SCRIPT FLUSH: %v", err)
	}
}

// dyingClient is a go-redis hook that plays a process that dies at a step
// of its wait: from then on, nothing it sends reaches Redis.
type dyingClient struct {
	mu   sync.Mutex
	step string // "registered": after its first attempt; "woken": after a block that returned a grant
	dead bool
}

var errDied = errors.New("the process died")

func (d *dyingClient) isDead() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dead
}

func (d *dyingClient) DialHook(next redis.DialHook) redis.DialHook { return next }

func (d *dyingClient) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if d.isDead() {
			cmd.SetErr(errDied)
			return errDied
		}
		err := next(ctx, cmd)
		if n := cmd.Name(); d.step == "registered" && (n == "evalsha" || n == "eval") && err == nil {
			if _, held := cmd.(*redis.Cmd).Val().([]any); held {
				d.mu.Lock()
				d.dead = true
				d.mu.Unlock()
			}
		}
		return err
	}
}

func (d *dyingClient) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if d.isDead() {
			for _, c := range cmds {
				c.SetErr(errDied)
			}
			return errDied
		}
		err := next(ctx, cmds)
		if d.step == "woken" && len(cmds) > 0 && cmds[len(cmds)-1].Name() == "blpop" && cmds[len(cmds)-1].Err() == nil {
			d.mu.Lock()
			d.dead = true
			d.mu.Unlock()
		}
		return err
	}
}

// Issue 11 item 5: whatever step a waiter dies at, every key the library
// created expires by itself: its registration, the key reserved for it,
// its grant list.
func TestWaitForReleaseDyingWaiterLeavesNoKeyForever(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		for _, step := range []string{"registered", "blocked", "woken"} {
			t.Run(step, func(t *testing.T) {
				ctx := context.Background()
				key := redistest.Key(t, "lock")
				holder, err := redislock.Obtain(ctx, env.admin, key, time.Minute, waitOpt())
				if err != nil {
					t.Fatal(err)
				}
				name := clientName("dying")
				rdb := env.newClient(name)
				dying := &dyingClient{step: step}
				rdb.AddHook(dying)
				wctx, cancel := context.WithCancel(ctx)
				defer cancel()
				done := obtainAsync(wctx, rdb, key, time.Minute, waitOpt())
				switch step {
				case "registered":
					waitUntil(t, "the waiter to die", dying.isDead)
				case "blocked":
					waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, name) })
					_ = rdb.Close()
				case "woken":
					waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, name) })
				}
				if err := holder.Release(ctx); err != nil {
					t.Fatal(err)
				}
				if step == "woken" {
					waitUntil(t, "the waiter to die", dying.isDead)
				}
				// What remains of the waiter cannot reach Redis.
				cancel()
				if got := <-done; got.err == nil {
					t.Fatal("the dying waiter obtained the lock")
				}
				if keys := keysWithoutTTL(t, env.admin, redistest.Tag(t)+"*"); len(keys) != 0 {
					t.Errorf("keys without expiry after a waiter died %s: %q", step, keys)
				}
			})
		}
	})
}

// Issue 11 item 6: the keys "k" and "{k}" share a hash slot but not a wait
// queue: a release of one wakes a waiter of that one.
func TestWaitForReleaseTaggedAndUntaggedKeys(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		tag := redistest.Tag(t)
		plain := strings.Trim(tag, "{}") + ":job" // no hash tag
		tagged := "{" + plain + "}"
		holders := map[string]*redislock.Lock{}
		for _, k := range []string{plain, tagged} {
			l, err := redislock.Obtain(ctx, env.admin, k, time.Minute, waitOpt())
			if err != nil {
				t.Fatal(err)
			}
			holders[k] = l
		}
		t.Cleanup(func() {
			for _, k := range []string{plain, tagged} {
				_ = holders[k].Release(context.Background())
			}
		})
		// The waiter for the plain key blocks first: on a shared wake-up
		// list, it would get the grant of the tagged key.
		firstName := clientName("plain")
		first := obtainAsync(ctx, env.newClient(firstName), plain, time.Minute, waitOpt())
		waitUntil(t, "the waiter of the plain key to block", func() bool { return blocked(t, env.admin, firstName) })
		name := clientName("tagged")
		rdb := env.newClient(name)
		counter := &waitCounter{}
		rdb.AddHook(counter)
		second := obtainAsync(ctx, rdb, tagged, time.Minute, waitOpt())
		waitUntil(t, "the waiter of the tagged key to block", func() bool { return blocked(t, env.admin, name) })

		if err := holders[tagged].Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-second
		if got.err != nil {
			t.Fatal(got.err)
		}
		if _, _, _, grants := counter.counts(); grants != 1 {
			t.Errorf("the waiter of %q obtained it with %d grants, want 1: its wake-up went to the waiter of %q", tagged, grants, plain)
		}
		holders[tagged] = got.lock
		if err := holders[plain].Release(ctx); err != nil {
			t.Fatal(err)
		}
		if got := <-first; got.err != nil {
			t.Fatal(got.err)
		} else {
			holders[plain] = got.lock
		}
	})
}

// Issue 11 item 9: while a holder that does not wait for events keeps a
// key busy (no handover), waiters that crash one after the other do not make
// its line grow: a dead registration lapses (3 s) and is dropped at the
// next arrival. Set REDISLOCK_CRASH_LOOP (a duration) for a longer
// run.
func TestWaitForReleaseCrashLoopQueueBounded(t *testing.T) {
	duration := 6 * time.Second
	if v := os.Getenv("REDISLOCK_CRASH_LOOP"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		duration = d
	}
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx, cancel := context.WithCancel(context.Background())
		key := redistest.Key(t, "lock")
		var wg sync.WaitGroup
		// A holder that does not wait for events keeps the key: no
		// release hands it over, so nothing prunes the queue at a handover.
		holder, err := redislock.Obtain(ctx, env.admin, key, time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = holder.Release(context.Background()) }()
		// Two live waiters wait the whole time. A wait that ends (an error
		// on a loaded machine) and starts again registers anew: its old
		// registration may be left to lapse like a crashed one's, so the
		// ends are counted as crashes are.
		const live = 2
		var mu sync.Mutex
		var ends []time.Time
		for range live {
			rdb := env.newClient(clientName("live"))
			wg.Go(func() {
				for ctx.Err() == nil {
					if lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, waitOpt()); err == nil {
						_ = lock.Release(context.Background())
					}
					mu.Lock()
					ends = append(ends, time.Now())
					mu.Unlock()
				}
			})
		}
		start := time.Now()
		var crashes []time.Time
		most, bound := int64(0), 0
		for time.Since(start) < duration {
			time.Sleep(100 * time.Millisecond) // the pace of the crashes, not a synchronisation
			arrived := time.Now()              // before this crash's waiter registers
			crashWaiter(t, env, []string{key})
			crashes = append(crashes, time.Now())
			n := env.admin.ZCard(context.Background(), waitQueue(key)).Val()
			// Live waiters, and the dead ones whose registration (3 s)
			// had not lapsed when this crash's waiter arrived, which
			// dropped the lapsed ones: each died after arrived less 3 s
			// (and a margin for the server's clock). Counted from the
			// arrival, not from now: ZCARD may come long after it on a
			// loaded machine, and the line drops lapsed registrations
			// only when one arrives.
			recent := 0
			mu.Lock()
			for _, c := range slices.Concat(crashes, ends) {
				if c.After(arrived.Add(-handoff.Registration - 500*time.Millisecond)) {
					recent++
				}
			}
			mu.Unlock()
			if n > most {
				most = n
			}
			if n > int64(live+recent) {
				t.Errorf("after %d crashes in %v: %d registrations, want at most %d live waiters and %d recent crashes or ended waits", len(crashes), time.Since(start).Round(time.Millisecond), n, live, recent)
				break
			}
			bound = max(bound, live+recent)
		}
		cancel()
		wg.Wait()
		t.Logf("%d waiters crashed in %v, %d live waits ended; the queue held at most %d registrations (bound %d)", len(crashes), time.Since(start).Round(time.Millisecond), len(ends), most, bound)
	})
}

// blockTimeouts is a go-redis hook that records the timeout of every
// BLPOP a client sends.
type blockTimeouts struct {
	mu sync.Mutex
	d  []time.Duration
}

func (b *blockTimeouts) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (b *blockTimeouts) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (b *blockTimeouts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			if args := cmd.Args(); cmd.Name() == "blpop" {
				if secs, ok := args[len(args)-1].(float64); ok {
					b.mu.Lock()
					b.d = append(b.d, time.Duration(secs*float64(time.Second)))
					b.mu.Unlock()
				}
			}
		}
		return next(ctx, cmds)
	}
}

func (b *blockTimeouts) get() []time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.d)
}

// Issue 11 item 7: the context's deadline bounds a wait whatever the
// server's hz, although a server at hz 1 ends a block up to a second late
// (it checks their timeouts when its event loop wakes). A server of its
// own: hz is server-wide.
func TestWaitForReleaseDeadlineAtLowHz(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Redis)
	admin := srv.Client(t)
	ctx := context.Background()
	key := redistest.Key(t, "lock")
	holder, err := redislock.Obtain(ctx, admin, key, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Release(ctx) }()
	for _, hz := range []int{1, 10} {
		if err := admin.ConfigSet(ctx, "hz", strconv.Itoa(hz)).Err(); err != nil {
			t.Fatal(err)
		}
		for _, wait := range []time.Duration{150 * time.Millisecond, 300 * time.Millisecond, 1500 * time.Millisecond} {
			rdb := redis.NewClient(srv.Options()) // a client new to the server: it reads hz afresh
			blocks := &blockTimeouts{}
			rdb.AddHook(blocks)
			// Read before the deadline is set, so that a wait ended by it
			// never measures less than wait.
			start := time.Now()
			wctx, cancel := context.WithTimeout(ctx, wait)
			deadline, _ := wctx.Deadline()
			_, err := redislock.Obtain(wctx, rdb, key, time.Minute, waitOpt())
			took := time.Since(start)
			cancel()
			_ = rdb.Close()
			if !errors.Is(err, redislock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("hz %d, deadline %v: %v, want ErrNotObtained and DeadlineExceeded", hz, wait, err)
			}
			// Each block was sent at start or later, and must end a
			// server tick before the deadline, as late as the server may
			// end it: its timeout is at most what was left at start less
			// a tick (and BLPOP's rounding to the millisecond). Not a
			// window of time: a loaded machine only makes it shorter.
			tick := time.Second / time.Duration(hz)
			for _, d := range blocks.get() {
				if d > deadline.Sub(start)-tick+time.Millisecond {
					t.Errorf("hz %d, deadline %v: a block of %v, which the server may end after the deadline", hz, wait, d)
				}
			}
			t.Logf("hz %d: deadline %v, %d blocks, returned %v late", hz, wait, len(blocks.get()), (took - wait).Round(time.Millisecond))
		}
	}
}

// The commands Redis runs per step of WaitForRelease (script internals
// included, INFO commandstats), on a server of its own: an uncontended
// obtain runs no command of the waiting machinery, and one handover runs
// 24 commands in all (23 before the line kept arrival order; 96ede5c: 24;
// docs/waiting.md lists them).
func TestWaitForReleaseCommandsPerStep(t *testing.T) {
	t.Parallel()
	srv := redistest.NewServer(t, redistest.Redis)
	admin := srv.Client(t)
	ctx := context.Background()
	key := redistest.Key(t, "lock")
	// calls returns the commands run since the last call, without the
	// test's own (INFO, CLIENT LIST, CONFIG RESETSTAT, the handshake).
	calls := func() map[string]int64 {
		t.Helper()
		got := commandCounts(t, admin)
		if err := admin.ConfigResetStat(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// Load the scripts (EVALSHA fails on a new server; EVAL follows).
	warm, err := redislock.Obtain(ctx, admin, key+"-warm", time.Minute, waitOpt())
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	calls()

	holder, err := redislock.Obtain(ctx, admin, key, time.Minute, waitOpt())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := calls(), map[string]int64{"evalsha": 1, "get": 1, "set": 1}; !maps.Equal(got, want) {
		t.Errorf("uncontended obtain ran %v, want %v", got, want)
	}

	name := clientName("waiter")
	opt := srv.Options()
	opt.ClientName = name
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	done := obtainAsync(ctx, rdb, key, time.Minute, waitOpt())
	waitUntil(t, "the waiter to block", func() bool { return blocked(t, admin, name) })
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatal(got.err)
	}
	defer func() { _ = got.lock.Release(ctx) }()
	// The waiter's registration (the key held: its expiry is read; a new
	// arrival, so lapsed entries are looked for), its block, the holder's
	// release (a handover: the oldest live registration, its mark, its
	// grant, the reservation) and the waiter's attempt after its block
	// (the key reserved for it: taken, and its registration removed).
	want := map[string]int64{
		"evalsha": 3, "blpop": 1,
		"get": 3, "pttl": 1, "time": 2, "zadd": 3, "zrangebyscore": 2, "pexpire": 3,
		"zscore": 1, "rpush": 1, "set": 2, "zrem": 2,
	}
	stats := calls()
	// A block that ended before the release (a loaded machine) costs a
	// block and an attempt that renews the registration.
	for range stats["blpop"] - 1 {
		for cmd, n := range map[string]int64{"blpop": 1, "evalsha": 1, "get": 1, "pttl": 1, "time": 1, "zadd": 2, "pexpire": 2} {
			want[cmd] += n
		}
	}
	if !maps.Equal(stats, want) {
		t.Errorf("one handover ran %v, want %v", stats, want)
	}
	var total int64
	for _, n := range stats {
		total += n
	}
	t.Logf("one handover: %d commands (%d blocks)", total, stats["blpop"])
}
