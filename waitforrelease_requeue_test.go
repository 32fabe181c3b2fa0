package redislock_test

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/handoff"
	"github.com/redislock/redislock/internal/redistest"
)

// tripCounter is a go-redis hook that counts a client's round trips: the
// commands sent alone (by name) and the pipelines (with the names of their
// commands, in order, counted when sent), and what each BLPOP returned;
// not the handshake of a new connection.
type tripCounter struct {
	mu        sync.Mutex
	alone     []string
	pipelines [][]string
	moved     []any // what each BLPOP returned (nil: it timed out)
}

func (c *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

// handshake reports a command that go-redis sends on a new connection.
func handshake(name string) bool {
	switch name {
	case "hello", "client", "auth", "select", "readonly":
		return true
	}
	return false
}

func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if !handshake(cmd.Name()) {
			c.mu.Lock()
			c.alone = append(c.alone, cmd.Name())
			c.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		// Counted when sent, so that a pipeline blocked in Redis counts.
		var names []string
		for _, cmd := range cmds {
			if !handshake(cmd.Name()) {
				names = append(names, cmd.Name())
			}
		}
		if names == nil {
			return next(ctx, cmds)
		}
		c.mu.Lock()
		c.pipelines = append(c.pipelines, names)
		c.mu.Unlock()
		err := next(ctx, cmds)
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, cmd := range cmds {
			if cmd.Name() == "blpop" {
				var v any
				if got, err := cmd.(*redis.StringSliceCmd).Result(); err == nil {
					v = got
				}
				c.moved = append(c.moved, v)
			}
		}
		return err
	}
}

// timeouts returns how many of the BLPOPs counted timed out.
func (c *tripCounter) timeouts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, m := range c.moved {
		if m == nil {
			n++
		}
	}
	return n
}

// reset forgets what was counted.
func (c *tripCounter) reset() {
	c.mu.Lock()
	c.alone, c.pipelines, c.moved = nil, nil, nil
	c.mu.Unlock()
}

func (c *tripCounter) get() (alone []string, pipelines [][]string, moved []any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.alone, c.pipelines, c.moved
}

// handedOverOnce makes a Client on a client of its own hold key, lets a
// waiter block for it, and releases it: handed over to the waiter, which
// then holds it. It returns the Client, its client's counter (reset) and
// the waiter's lock.
func handedOverOnce(t *testing.T, env *waitEnv, key string) (*redislock.Client, *tripCounter, string, *redislock.Lock) {
	t.Helper()
	ctx := context.Background()
	name := clientName("releaser")
	rdb := env.newClient(name)
	trips := &tripCounter{}
	rdb.AddHook(trips)
	locker := redislock.New(rdb)
	first, err := locker.Obtain(ctx, key, time.Minute, waitOpt())
	if err != nil {
		t.Fatal(err)
	}
	waiterName := clientName("waiter")
	waiter := env.newClient(waiterName)
	done := obtainAsync(ctx, waiter, key, time.Minute, waitOpt())
	waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, waiterName) })
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	trips.reset()
	return locker, trips, name, got.lock
}

// A releaser that asks again at once (the lock went to a waiter) sends its
// first attempt with its block: one round trip until the lock comes back,
// where it failed first before.
func TestWaitForReleaseRequeue(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		locker, trips, name, held := handedOverOnce(t, env, key)
		done := make(chan obtained, 1)
		go func() {
			lock, err := locker.Obtain(ctx, key, time.Minute, waitOpt())
			done <- obtained{lock: lock, err: err}
		}()
		waitUntil(t, "the releaser to block", func() bool { return blocked(t, env.admin, name) })
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.err != nil {
			t.Fatalf("the releaser's second Obtain: %v", got.err)
		}
		defer func() { _ = got.lock.Release(ctx) }()
		alone, pipelines, moved := trips.get()
		// The first attempt goes with the first block; each block is
		// followed by an attempt (a block that timed out before the
		// release, on a loaded machine, costs a block and an attempt more).
		want := []string{"evalsha", "blpop"}
		if len(pipelines) == 0 || !slices.Equal(pipelines[0], want) {
			t.Fatalf("pipelines %q, want the first to be %q", pipelines, want)
		}
		for i, p := range pipelines[1:] {
			if !slices.Equal(p, []string{"blpop"}) || moved[i] != nil {
				t.Errorf("pipeline %d: %q after a block that returned %v, want a block after a timeout", i+2, p, moved[i])
			}
		}
		if !slices.Equal(alone, slices.Repeat([]string{"evalsha"}, len(pipelines))) {
			t.Errorf("sent %q alone, want one attempt after each of the %d blocks", alone, len(pipelines))
		}
		if last := moved[len(moved)-1]; last == nil {
			t.Error("the last block timed out: the release did not hand the lock over")
		}
		if keys := keysWithoutTTL(t, env.admin, redistest.Tag(t)+"*"); len(keys) != 0 {
			t.Errorf("keys without expiry: %q", keys)
		}
	})
}

// A requeue that finds the key free (the waiter that got it released it
// already) and nobody else in line grants it to itself: its own block
// returns at once, and the attempt after it takes the key.
func TestWaitForReleaseRequeueFreeKey(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		locker, trips, _, held := handedOverOnce(t, env, key)
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		lock, err := locker.Obtain(ctx, key, time.Minute, waitOpt())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = lock.Release(ctx) }()
		alone, pipelines, moved := trips.get()
		if !slices.Equal(alone, []string{"evalsha"}) || len(pipelines) != 1 || len(moved) != 1 || moved[0] == nil {
			t.Errorf("sent %q alone and the pipelines %q, whose block returned %v; want one pipeline whose block popped a grant, then one attempt", alone, pipelines, moved)
		}
		if keys := keysWithoutTTL(t, env.admin, redistest.Tag(t)+"*"); len(keys) != 0 {
			t.Errorf("keys without expiry: %q", keys)
		}
	})
}

// The requeue attempt never takes a free key: it registers its waiter at
// the back of the line and grants the key to the waiter that arrived
// first.
func TestObtainScriptRequeueGrantsOldest(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	obtain := redis.NewScript(luaSource(t, "lua/lib.lua", "lua/handover.lua", "lua/obtain.lua"))
	key := redistest.Key(t, "lock")
	line, alive := waitQueue(key), aliveSet(key)
	t.Cleanup(func() { rdb.Del(ctx, key, line, alive, line+":A.500", line+":w.500") })
	env := &waitEnv{admin: rdb}
	registerGhost(t, env, key, "A.500")

	reply, err := obtain.Run(ctx, rdb, []string{key, line, alive}, "tok", "", 60000, "0", "w.500", 3000, "2").Result()
	if err != nil {
		t.Fatal(err)
	}
	if code, ok := reply.(int64); !ok || code >= 0 {
		t.Errorf("reply %v, want a negative code (not obtained; the code alone)", reply)
	}
	checkReservedFor(t, rdb, key, "A.500", 500*time.Millisecond)
	if n := rdb.LLen(ctx, line+":A.500").Val(); n != 1 {
		t.Errorf("A's grant list holds %d grants, want 1", n)
	}
	ids, err := rdb.ZRange(ctx, line, 0, -1).Result()
	if err != nil || !slices.Equal(ids, []string{"A.500", "w.500"}) {
		t.Errorf("line %q (%v), want A then w", ids, err)
	}
	if score, err := rdb.ZScore(ctx, alive, "w.500").Result(); err != nil || score <= float64(time.Now().UnixMilli()) {
		t.Errorf("w's registration lapses at %v (%v), want a live one", score, err)
	}
}

// The requeue attempt on a key another holds (a releaser that joined its
// group registers when the lead passes to it, after the previous leader
// took the key) reads no expiry and replies one integer: the wait reads
// neither. It registers the waiter as any failed attempt does.
func TestObtainScriptRequeueHeldKey(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t, redistest.Redis).Client(t)
	ctx := context.Background()
	obtain := redis.NewScript(luaSource(t, "lua/lib.lua", "lua/handover.lua", "lua/obtain.lua"))
	key := redistest.Key(t, "lock")
	line, alive := waitQueue(key), aliveSet(key)
	if err := rdb.Set(ctx, key, "5:other:0:", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := obtain.Load(ctx, rdb).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	reply, err := obtain.EvalSha(ctx, rdb, []string{key, line, alive}, "tok", "", 60000, "0", "w.500", 3000, "2").Result()
	if err != nil {
		t.Fatal(err)
	}
	if reply != int64(-2) {
		t.Errorf("reply %v, want -2: the code alone, with no expiry read", reply)
	}
	stats, err := rdb.InfoMap(ctx, "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := stats["Commandstats"]["cmdstat_pttl"]; ok {
		t.Errorf("the requeue attempt read the holder's expiry: %s", v)
	}
	if score, err := rdb.ZScore(ctx, alive, "w.500").Result(); err != nil || score <= float64(time.Now().UnixMilli()) {
		t.Errorf("registration %v (%v), want a live one", score, err)
	}
	if v := rdb.Get(ctx, key).Val(); v != "5:other:0:" {
		t.Errorf("the key holds %q, want the holder's value", v)
	}
}

// A requeue whose scripts the server forgot (a restart, a failover) still
// waits and obtains, and leaves no key without an expiry: the first
// attempt is lost (NOSCRIPT), the attempt after the block (sent again
// with EVAL) registers the waiter.
func TestWaitForReleaseRequeueNoScript(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		locker, trips, name, held := handedOverOnce(t, env, key)
		flushScripts(t, env.admin)
		done := make(chan obtained, 1)
		go func() {
			lock, err := locker.Obtain(ctx, key, time.Minute, waitOpt())
			done <- obtained{lock: lock, err: err}
		}()
		// The first block (unregistered) ends; the attempt after it
		// registers, and the next block waits for the release.
		waitUntil(t, "the releaser to register and block again", func() bool {
			_, pipelines, _ := trips.get()
			return len(pipelines) >= 2 && blocked(t, env.admin, name)
		})
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.err != nil {
			t.Fatalf("the releaser's second Obtain: %v", got.err)
		}
		_ = got.lock.Release(ctx)
		if _, pipelines, _ := trips.get(); !slices.Equal(pipelines[0], []string{"evalsha", "blpop"}) {
			t.Errorf("first pipeline %q, want the requeue", pipelines[0])
		}
		if keys := keysWithoutTTL(t, env.admin, redistest.Tag(t)+"*"); len(keys) != 0 {
			t.Errorf("keys without expiry: %q", keys)
		}
	})
}

// A releaser that asks again while other goroutines of its process wait
// for the key through the same go-redis client joins their group and
// sends nothing until the lead passes to it; then its first attempt goes
// with its first block. Before, it sent a failed attempt first. Not
// parallel: it counts the waits of handoff.Default.
func TestWaitForReleaseRequeueJoinsGroup(t *testing.T) {
	srv := redistest.SharedServer(t, redistest.Redis)
	ctx := context.Background()
	admin := srv.Client(t)
	key := redistest.Key(t, "lock")
	companions, _ := handoff.Companions([]string{key})
	queue := companions[1]
	opt := waitOpt()
	o := srv.Options()
	o.ClientName = clientName("joins")
	shared := redis.NewClient(o)
	defer shared.Close()
	trips := &tripCounter{}
	shared.AddHook(trips)
	locker := redislock.New(shared)
	obtain := func() <-chan obtained {
		done := make(chan obtained, 1)
		go func() {
			l, err := locker.Obtain(ctx, key, time.Minute, opt)
			done <- obtained{lock: l, err: err}
		}()
		return done
	}
	got := func(what string, done <-chan obtained) *redislock.Lock {
		t.Helper()
		r := <-done
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.lock
	}
	blocks := func() bool { return blocked(t, admin, o.ClientName) }
	a, err := locker.Obtain(ctx, key, time.Minute, opt)
	if err != nil {
		t.Fatal(err)
	}
	// Two goroutines wait: the first leads (blocks), the second sleeps.
	cDone := obtain()
	for admin.ZCard(ctx, queue).Val() != 1 || !blocks() {
	}
	eDone := obtain()
	for admin.ZCard(ctx, queue).Val() != 2 {
	}
	// The release hands the lock to the first; the second then leads.
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c := got("the first waiter", cDone)
	for !blocks() {
	}
	trips.reset()
	aDone := obtain()
	for waits, _, _ := handoff.Default.Waits(); waits != 2; waits, _, _ = handoff.Default.Waits() {
	}
	if err := c.Release(ctx); err != nil {
		t.Fatal(err)
	}
	e := got("the second waiter", eDone)
	// The lead passes to the releaser, which blocks.
	for _, pipes, _ := trips.get(); len(pipes) == 0 || !blocks(); _, pipes, _ = trips.get() {
	}
	if err := e.Release(ctx); err != nil {
		t.Fatal(err)
	}
	_ = got("the releaser's second Obtain", aDone).Release(ctx)
	alone, pipes, _ := trips.get()
	// Sent alone: the three releases, and the attempts after the blocks
	// of the second waiter and of the releaser (and one more after each
	// block that timed out): no failed first attempt of the releaser.
	if want := slices.Repeat([]string{"evalsha"}, 5+trips.timeouts()); !slices.Equal(alone, want) {
		t.Errorf("sent %q alone, want %q: the releaser's first attempt goes with its block", alone, want)
	}
	if want := []string{"evalsha", "blpop"}; !slices.ContainsFunc(pipes, func(p []string) bool { return slices.Equal(p, want) }) {
		t.Errorf("pipelines %q, want one to be the requeue %q", pipes, want)
	}
}

// A releaser that asked again at once, alone, and was served registers its
// next wait with its next Release when that Release hands the key over:
// the Obtain that follows sends no registration of its own, only its block
// and the attempt after it (two commands, one round trip), and gets the
// key when the holder releases it. The registration and the grant list
// expire by themselves.
func TestWaitForReleaseRegisteredByRelease(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		locker, trips, name, got, done := heldWithWaiter(t, env, key)

		// The third Obtain goes right after the Release (within
		// registeredWithin): its goroutine is ready before.
		start, third := make(chan struct{}), make(chan obtained, 1)
		go func() {
			<-start
			lock, err := locker.Obtain(ctx, key, time.Minute, waitOpt())
			third <- obtained{lock: lock, err: err}
		}()
		if err := got.lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
		trips.reset()
		close(start)
		w2 := <-done
		if w2.err != nil {
			t.Fatalf("the second waiter: %v", w2.err)
		}
		waitUntil(t, "the releaser to block again", func() bool { return blocked(t, env.admin, name) })
		// The line holds the releaser's registration alone (the second
		// waiter's went when it obtained), live for the hint's lapse at
		// most, unless it attempted since (a block that timed out).
		companions, _ := handoff.Companions([]string{key})
		line, alive := companions[1], companions[2]
		ids, err := env.admin.ZRange(ctx, line, 0, -1).Result()
		if err != nil || len(ids) != 1 {
			t.Fatalf("line %q (%v), want one registration", ids, err)
		}
		now := env.admin.Time(ctx).Val()
		lapse, err := env.admin.ZScore(ctx, alive, ids[0]).Result()
		if err != nil || lapse <= float64(now.UnixMilli()) || (trips.timeouts() == 0 && lapse > float64(now.Add(handoff.RegisteredLapse).UnixMilli())) {
			t.Errorf("the registration lapses at %v (%v), now %v: want live, for at most %v", lapse, err, now.UnixMilli(), handoff.RegisteredLapse)
		}
		if keys := keysWithoutTTL(t, env.admin, redistest.Tag(t)+"*"); len(keys) != 0 {
			t.Errorf("keys without expiry: %q", keys)
		}
		if err := w2.lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
		last := <-third
		if last.err != nil {
			t.Fatalf("the releaser's third Obtain: %v", last.err)
		}
		defer func() { _ = last.lock.Release(ctx) }()
		alone, pipelines, moved := trips.get()
		// No registration before the first block: a block, then an
		// attempt, as many times as blocks timed out, plus one.
		for i, p := range pipelines {
			if !slices.Equal(p, []string{"blpop"}) {
				t.Errorf("pipeline %d: %q, want a block", i+1, p)
			}
		}
		if !slices.Equal(alone, slices.Repeat([]string{"evalsha"}, len(pipelines))) {
			t.Errorf("sent %q alone, want one attempt after each of the %d blocks: the release registered the wait", alone, len(pipelines))
		}
		if len(moved) == 0 || moved[len(moved)-1] == nil {
			t.Errorf("blocks returned %v: the release did not hand the lock over", moved)
		}
	})
}

// release.lua with a waiter id (ARGV[2]) registers that waiter only when
// it hands the key over: a key deleted (no live waiter) or not ours
// registers no one.
func TestReleaseScriptRegistersOnlyWhenHandingOver(t *testing.T) {
	t.Parallel()
	rdb := redistest.NewServer(t, redistest.Redis).Client(t)
	ctx := context.Background()
	release := redis.NewScript(luaSource(t, "lua/lib.lua", "lua/handover.lua", "lua/release.lua"))
	key := redistest.Key(t, "lock")
	line, alive := waitQueue(key), aliveSet(key)
	keys := []string{key, line, alive}
	run := func() int64 {
		t.Helper()
		n, err := release.Run(ctx, rdb, keys, "tok", "next.500", 3000, 1000).Int64()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// Ours, nobody waits: deleted (1 ours, 0 handed), no one registered.
	if err := rdb.Set(ctx, key, "3:tok:0:", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if n := run(); n != 1 {
		t.Errorf("reply %d, want 1: ours and deleted", n)
	}
	if n := rdb.Exists(ctx, key, line, alive).Val(); n != 0 {
		t.Errorf("%d of the key and its line exist after a release with no waiter", n)
	}
	// Another's key: nothing written.
	if err := rdb.Set(ctx, key, "5:other:0:", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	registerGhost(t, &waitEnv{admin: rdb}, key, "w.500")
	if n := run(); n != 0 {
		t.Errorf("reply %d, want 0: not ours", n)
	}
	if rdb.ZScore(ctx, line, "next.500").Err() != redis.Nil {
		t.Error("a release of another's key registered the waiter")
	}
	// Ours with a live waiter: handed over (reply 1*2+1) and registered
	// behind the waiter, live for a second, with expiries.
	if err := rdb.Set(ctx, key, "3:tok:0:", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.ConfigResetStat(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if n := run(); n != 3 {
		t.Errorf("reply %d, want 3: ours and handed over", n)
	}
	// The commands it ran: the handover's (the oldest live registration,
	// its mark, its grant, the reservation) and the registration's (a new
	// arrival: lapsed entries looked for).
	want := map[string]int64{
		"evalsha": 1, "get": 1, "time": 1, "zrangebyscore": 2, "zscore": 1, "zadd": 3, "rpush": 1,
		"pexpire": 3, "set": 1,
	}
	if got := commandCounts(t, rdb); !maps.Equal(got, want) {
		t.Errorf("a release that hands over and registers ran %v, want %v", got, want)
	}
	checkReservedFor(t, rdb, key, "w.500", 500*time.Millisecond)
	ids, err := rdb.ZRange(ctx, line, 0, -1).Result()
	if err != nil || !slices.Equal(ids, []string{"w.500", "next.500"}) {
		t.Errorf("line %q (%v), want the waiter served, then the releaser", ids, err)
	}
	now := float64(rdb.Time(ctx).Val().UnixMilli())
	if served := rdb.ZScore(ctx, alive, "w.500").Val(); served >= -now || served < -(now+500) {
		t.Errorf("the served waiter's lapse is %v, want marked until its claim window ends (now %v)", served, now)
	}
	if next := rdb.ZScore(ctx, alive, "next.500").Val(); next <= now || next > now+1000 {
		t.Errorf("the releaser's lapse is %v, want live for a second at most (now %v)", next, now)
	}
	for _, k := range []string{line, alive} {
		if ttl := rdb.PTTL(ctx, k).Val(); ttl <= 0 || ttl > 3*time.Second {
			t.Errorf("%s: PTTL %v, want an expiry within the registration's life", k, ttl)
		}
	}
}

// heldWithWaiter makes the Client of handedOverOnce obtain key again: its
// Obtain requeues (the last release handed the key over) and leads alone,
// so that the Release of the lock it gets registers its next wait. A
// second waiter then blocks for key. It returns the Client, its counter,
// its client's name, the lock it holds and the second waiter's result.
func heldWithWaiter(t *testing.T, env *waitEnv, key string) (*redislock.Client, *tripCounter, string, obtained, <-chan obtained) {
	t.Helper()
	ctx := context.Background()
	locker, trips, name, held := handedOverOnce(t, env, key)
	second := make(chan obtained, 1)
	go func() {
		lock, err := locker.Obtain(ctx, key, time.Minute, waitOpt())
		second <- obtained{lock: lock, err: err}
	}()
	waitUntil(t, "the releaser to block", func() bool { return blocked(t, env.admin, name) })
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-second
	if got.err != nil {
		t.Fatalf("the releaser's second Obtain: %v", got.err)
	}
	waiterName := clientName("waiter2")
	done := obtainAsync(ctx, env.newClient(waiterName), key, time.Minute, waitOpt())
	waitUntil(t, "the second waiter to block", func() bool { return blocked(t, env.admin, waiterName) })
	return locker, trips, name, got, done
}

// A caller whose Release registered its next wait (it asked again at once,
// alone) but that asks for another key next takes that registration back
// at once: no handover of the first key then reserves it for its claim
// window with nobody to take it.
func TestWaitForReleaseRegistrationWithdrawnForAnotherKey(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		key := redistest.Key(t, "lock")
		locker, _, _, got, done := heldWithWaiter(t, env, key)
		released := time.Now()
		if err := got.lock.Release(ctx); err != nil {
			t.Fatal(err)
		}
		w2 := <-done
		if w2.err != nil {
			t.Fatalf("the second waiter: %v", w2.err)
		}
		defer func() { _ = w2.lock.Release(ctx) }()
		// The waiter served left the line: the releaser's next wait is
		// what is left.
		if n := env.admin.ZCard(ctx, waitQueue(key)).Val(); n != 1 {
			t.Fatalf("%d registrations in the line after the handover, want the releaser's next wait", n)
		}
		// The releaser asks for another key instead.
		other, err := locker.Obtain(ctx, redistest.Key(t, "other"), time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = other.Release(ctx) }()
		ids := env.admin.ZRange(ctx, waitQueue(key), 0, -1).Val()
		if len(ids) == 0 {
			return
		}
		if time.Since(released) < handoff.RegisteredLapse {
			t.Fatalf("line %q: the releaser's registration is still there", ids)
		}
		// A loaded machine took longer than the registration lives: it
		// lapsed by itself and is left for the next arrival to prune.
		lapse, err := env.admin.ZScore(ctx, aliveSet(key), ids[0]).Result()
		if err == nil && lapse > float64(time.Now().UnixMilli()) {
			t.Errorf("line %q: the releaser's registration is still live, until %v", ids, time.UnixMilli(int64(lapse)))
		}
	})
}
