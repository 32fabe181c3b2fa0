package redislock_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// The tests of Semaphore.Acquire with WaitForRelease (issue 16): a release
// hands its permit slot to the longest waiter, wakes no other, across
// processes; a crashed waiter costs one reservation at most; limits hold
// with waiters, mixed limits included; reservations expire.

type acquired struct {
	permit *redislock.Permit
	err    error
	at     time.Time
}

// acquireAsync runs Acquire in a goroutine; the result comes on the channel.
func acquireAsync(ctx context.Context, sem redislock.Semaphore, ttl time.Duration, opt *redislock.Options) <-chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		p, err := sem.Acquire(ctx, ttl, opt)
		ch <- acquired{p, err, time.Now()}
	}()
	return ch
}

// holdAll takes the limit permits of sem with WaitForRelease (so that their
// Release hands over).
func holdAll(t *testing.T, sem redislock.Semaphore) []*redislock.Permit {
	t.Helper()
	var out []*redislock.Permit
	for i := range sem.Limit() {
		p, err := sem.Acquire(context.Background(), time.Minute, waitOpt())
		if err != nil {
			t.Fatalf("holder %d: %v", i, err)
		}
		out = append(out, p)
	}
	return out
}

// startSemWaiter starts a waiter for sem on a client of its own, counted by
// the returned counter, and waits until it is registered (registered
// waiters in all) and blocked.
func startSemWaiter(t *testing.T, env *waitEnv, sem redislock.Semaphore, registered int, opt *redislock.Options) (<-chan acquired, *waitCounter) {
	t.Helper()
	return startSemWaiterThen(t, env, sem, registered, opt, false)
}

// startSemWaiterThen is startSemWaiter; with release, the waiter releases
// its permit as soon as it has it (the result then has no permit).
func startSemWaiterThen(t *testing.T, env *waitEnv, sem redislock.Semaphore, registered int, opt *redislock.Options, release bool) (<-chan acquired, *waitCounter) {
	t.Helper()
	name := clientName("semwaiter")
	rdb := env.newClient(name)
	counter := &waitCounter{}
	rdb.AddHook(counter)
	ws := redislock.New(rdb).Semaphore(sem.Key(), sem.Limit())
	done := make(chan acquired, 1)
	go func() {
		p, err := ws.Acquire(context.Background(), time.Minute, opt)
		got := acquired{p, err, time.Now()}
		if err == nil && release {
			got.err, got.permit = p.Release(context.Background()), nil
		}
		done <- got
	}()
	waitUntil(t, fmt.Sprintf("waiter %d to register", registered), func() bool {
		return env.admin.ZCount(context.Background(), waitQueue(sem.Key()), "0", "+inf").Val() == int64(registered)
	})
	waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, name) })
	return done, counter
}

// reservations returns the members of a semaphore key that are slots
// reserved for a grant.
func reservations(t *testing.T, admin redis.UniversalClient, key string) []string {
	t.Helper()
	members, err := admin.ZRange(context.Background(), key, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(members, func(m string) bool { return !strings.HasPrefix(m, "~") })
}

// Waiters are served in the order they came, each woken once: two
// attempts and one block each (no herd), whatever the number waiting and
// however long they waited.
// Before WaitForRelease worked for permits, Acquire refused it.
func TestSemaphoreWaitForReleaseFairness(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		order, counters := semFairRound(t, env)
		if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(order, want) {
			t.Errorf("waiters acquired in the order %v, want %v", order, want)
		}
		for i, c := range counters {
			// Its Release counts one script call too; each block is
			// followed by one attempt. A block may time out on a loaded
			// machine (before or just as its turn came), but no more than
			// one was woken.
			evals, blocks, timeouts, grants := c.counts()
			if evals != 2+blocks || blocks-timeouts > 1 || grants != 1 {
				t.Errorf("waiter %d sent %d scripts and %d blocks (%d timed out), acquired with %d grants; want 2 + one per block, at most 1 woken, 1", i, evals, blocks, timeouts, grants)
			}
		}
	})
}

// semFairRound: a semaphore of limit 2 held twice; six waiters queue one
// after the other; one holder releases, and each waiter releases as soon
// as it has its permit, so that the slot goes round the line.
func semFairRound(t *testing.T, env *waitEnv) (order []int, counters []*waitCounter) {
	ctx := context.Background()
	sem := redislock.New(env.admin).Semaphore(redistest.Key(t, fmt.Sprintf("sem-%d", clientSeq.Add(1))), 2)
	holders := holdAll(t, sem)
	const waiters = 6
	var dones []<-chan acquired
	for i := range waiters {
		done, c := startSemWaiterThen(t, env, sem, i+1, waitOpt(), true)
		dones = append(dones, done)
		counters = append(counters, c)
	}
	if err := holders[0].Release(ctx); err != nil {
		t.Fatal(err)
	}
	type result struct {
		i  int
		at time.Time
	}
	var results []result
	for i, done := range dones {
		got := <-done
		if got.err != nil {
			t.Fatalf("waiter %d: %v", i, got.err)
		}
		results = append(results, result{i, got.at})
	}
	slices.SortFunc(results, func(a, b result) int { return a.at.Compare(b.at) })
	for _, r := range results {
		order = append(order, r.i)
	}
	if err := holders[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	return order, counters
}

// One release wakes one waiter of many: the others send nothing.
func TestSemaphoreWaitForReleaseNoHerd(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		sem := redislock.New(env.admin).Semaphore(redistest.Key(t, "sem"), 4)
		holders := holdAll(t, sem)
		const waiters = 8
		var (
			dones    []<-chan acquired
			counters []*waitCounter
		)
		for i := range waiters {
			done, c := startSemWaiter(t, env, sem, i+1, waitOpt())
			dones, counters = append(dones, done), append(counters, c)
		}
		if err := holders[0].Release(ctx); err != nil {
			t.Fatal(err)
		}
		// The waiter blocked longest gets the slot: the first, unless its
		// block ended before the release (250 ms, a loaded machine).
		cases := make([]reflect.SelectCase, len(dones))
		for i, d := range dones {
			cases[i] = reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(d)}
		}
		first, v, _ := reflect.Select(cases)
		got := v.Interface().(acquired)
		if got.err != nil {
			t.Fatalf("waiter %d: %v", first, got.err)
		}
		if first != 0 {
			t.Logf("waiter %d acquired first (waiter 0 blocked %d times)", first, counters[0].sent())
		}
		attempts, grants := 0, 0
		for _, c := range counters {
			evals, _, _, g := c.counts()
			attempts, grants = attempts+evals, grants+g
		}
		if grants != 1 {
			t.Errorf("%d waiters woken with a grant by one release, want 1", grants)
		}
		// Every waiter registered once, and the one woken attempted once
		// more; a block that ended on its own is followed by one attempt.
		if want := waiters + 1 + countReblocks(counters); attempts > want {
			t.Errorf("%d attempts in all for one release, want %d", attempts, want)
		}
		for _, p := range append(holders[1:], got.permit) {
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// The others get their permits in any order: each releases its own.
		var wg sync.WaitGroup
		for i, done := range dones {
			if i == first {
				continue
			}
			wg.Go(func() {
				got := <-done
				if got.err != nil {
					t.Errorf("waiter %d: %v", i, got.err)
					return
				}
				_ = got.permit.Release(ctx)
			})
		}
		wg.Wait()
	})
}

// countReblocks counts the blocks beyond the first of each counter: a
// block that ended by its timeout is followed by one more attempt.
func countReblocks(counters []*waitCounter) int {
	n := 0
	for _, c := range counters {
		n += max(c.sent()-1, 0)
	}
	return n
}

// crashSemWaiter starts a waiter for sem on a client of its own and, once
// it blocks, closes that client: to Redis, a waiter whose process died,
// registered in the wait queue.
func crashSemWaiter(t *testing.T, env *waitEnv, sem redislock.Semaphore) {
	t.Helper()
	name := clientName("semcrash")
	rdb := env.newClient(name)
	ctx, cancel := context.WithCancel(context.Background())
	done := acquireAsync(ctx, redislock.New(rdb).Semaphore(sem.Key(), sem.Limit()), time.Minute, waitOpt())
	waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, name) })
	_ = rdb.Close()
	cancel()
	if got := <-done; got.err == nil {
		t.Fatal("the crashed waiter acquired a permit")
	}
}

// A waiter that died costs at most one reservation with no taker, as for
// locks (TestWaitForReleaseCrashedWaiterCostsOneReservation).
func TestSemaphoreWaitForReleaseCrashedWaiter(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		sem := redislock.New(env.admin).Semaphore(redistest.Key(t, "sem"), 1)
		holder := holdAll(t, sem)[0]
		crashSemWaiter(t, env, sem)
		other := redislock.New(env.newClient(clientName("other"))).Semaphore(sem.Key(), 1)
		refused := 0
		const rounds = 5
		for range rounds {
			if err := holder.Release(ctx); err != nil {
				t.Fatalf("holder's Release: %v", err)
			}
			// Nobody holds a permit, and the only waiter is dead.
			if p, err := other.Acquire(ctx, time.Minute, nil); err == nil {
				if err := p.Release(ctx); err != nil {
					t.Fatal(err)
				}
			} else if errors.Is(err, redislock.ErrNotObtained) {
				refused++
			} else {
				t.Fatal(err)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			var err error
			holder, err = sem.Acquire(wctx, time.Minute, waitOpt())
			cancel()
			if err != nil {
				t.Fatalf("holder: %v", err)
			}
		}
		if refused > 1 {
			t.Errorf("%d of %d NoRetry acquires of a free semaphore refused after a waiter died, want at most 1", refused, rounds)
		}
		_ = holder.Release(ctx)
		if keys := keysWithoutTTL(t, env.admin, redistest.Tag(t)+"*"); len(keys) != 0 {
			t.Errorf("keys without expiry: %q", keys)
		}
	})
}

// A waiter that dies after its wake-up (a ghost: registered and blocked on
// its own connection, it takes the grant and never acquires): the slot's
// reservation is the member "~<id>" scored with the end of its claim
// window, 100 ms on, which stops counting then and is handed to the next
// waiter by the next script that notices it. The reservation is held
// (its score set a minute on) while the test looks at it, and its expiry
// forced (its score set in the past), not slept.
func TestSemaphoreWaitForReleaseReservationExpires(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()

		// woken releases the only permit of sem to a ghost and returns the
		// grant the ghost took.
		woken := func(t *testing.T, sem redislock.Semaphore, holder *redislock.Permit, g *ghost) string {
			t.Helper()
			if err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if ttl := env.admin.PTTL(ctx, sem.Key()).Val(); ttl == -time.Nanosecond || ttl > 100*time.Millisecond {
				t.Errorf("semaphore key's PTTL %v with only a reservation, want 100 ms at most", ttl)
			}
			if err := <-g.done; err != nil {
				t.Fatalf("ghost's BLPOP: %v", err) // it got the grant, and dies with it
			}
			grant := "~" + g.id
			if err := env.admin.ZScore(ctx, sem.Key(), grant).Err(); err != nil {
				t.Fatalf("the ghost's reservation %q: %v", grant, err)
			}
			return grant
		}

		t.Run("newcomer", func(t *testing.T) {
			sem := redislock.New(env.admin).Semaphore(redistest.Key(t, "sem"), 1)
			holder := holdAll(t, sem)[0]
			grant := woken(t, sem, holder, newGhost(t, env, sem.Key()))
			// Held for the test: while it is live, the slot is taken.
			holdMember(t, env.admin, sem.Key(), grant)
			if _, err := sem.Acquire(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Fatalf("Acquire of a reserved slot: %v, want ErrNotObtained", err)
			}
			if h, err := sem.Holders(ctx); err != nil || len(h) != 0 {
				t.Errorf("Holders = %+v, %v; want none (a reservation is not a permit)", h, err)
			}
			expireMember(t, env.admin, sem.Key(), grant)
			p, err := sem.Acquire(ctx, time.Minute, nil)
			if err != nil {
				t.Fatalf("Acquire once the reservation expired: %v", err)
			}
			if got := reservations(t, env.admin, sem.Key()); len(got) != 0 {
				t.Errorf("expired reservation %q not pruned", got)
			}
			_ = p.Release(ctx)
			env.admin.Del(ctx, waitQueue(sem.Key()))
		})

		t.Run("waiter", func(t *testing.T) {
			// Limit 1: the ghost's lapsed reservation is noticed by the
			// attempt of a waiter that arrives meanwhile, which hands the
			// slot to the waiter blocked before it instead of taking it.
			// Each releases its permit as soon as it has it.
			sem := redislock.New(env.admin).Semaphore(redistest.Key(t, "sem"), 1)
			holder := holdAll(t, sem)[0]
			g := newGhost(t, env, sem.Key())
			first, counter := startSemWaiterThen(t, env, sem, 2, waitOpt(), true)
			grant := woken(t, sem, holder, g)
			holdMember(t, env.admin, sem.Key(), grant)
			expireMember(t, env.admin, sem.Key(), grant)
			noticed := time.Now()
			lateSem := redislock.New(env.newClient(clientName("late"))).Semaphore(sem.Key(), 1)
			late := make(chan acquired, 1)
			go func() {
				p, err := lateSem.Acquire(ctx, time.Minute, waitOpt())
				got := acquired{nil, err, time.Now()}
				if err == nil {
					got.err = p.Release(ctx)
				}
				late <- got
			}()
			got, l := <-first, <-late
			if got.err != nil || l.err != nil {
				t.Fatalf("first waiter: %v; newcomer: %v", got.err, l.err)
			}
			_, _, timeouts, grants := counter.counts()
			if timeouts == 0 {
				// Blocked all along: woken by the newcomer's hand-over.
				if grants != 1 || !got.at.Before(l.at) {
					t.Errorf("first waiter acquired with %d grants, %v before the newcomer; want 1 grant and before it", grants, l.at.Sub(got.at))
				}
			} else {
				// A loaded machine: its block ended first, and its own
				// attempt may have noticed the lapsed slot.
				t.Logf("the first waiter's block ended %d times; acquired with %d grants, %v before the newcomer", timeouts, grants, l.at.Sub(got.at))
			}
			if stall := got.at.Sub(noticed); stall > time.Second {
				t.Errorf("the first waiter acquired %v after the newcomer's attempt", stall)
			}
			env.admin.Del(ctx, waitQueue(sem.Key()))
		})
	})
}

// holdMember makes member of a semaphore key live for a minute, and the
// key with it: an admin hold of that permit or reservation.
func holdMember(t *testing.T, admin redis.UniversalClient, key, member string) {
	t.Helper()
	ctx := context.Background()
	now, err := admin.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	// The key may expire with the reservation meanwhile: a key that is
	// still there is given a minute first, one made again by the ZADD
	// after it.
	for _, cmd := range []func() error{
		func() error { return admin.PExpire(ctx, key, time.Minute).Err() },
		func() error {
			return admin.ZAdd(ctx, key, redis.Z{Score: float64(now.Add(time.Minute).UnixMilli()), Member: member}).Err()
		},
		func() error { return admin.PExpire(ctx, key, time.Minute).Err() },
	} {
		if err := cmd(); err != nil {
			t.Fatal(err)
		}
	}
}

// expireMember sets the score of member in a semaphore key in the past:
// an admin expiry of that one permit or reservation.
func expireMember(t *testing.T, admin redis.UniversalClient, key, member string) {
	t.Helper()
	if err := admin.ZAddXX(context.Background(), key, redis.Z{Score: 1, Member: member}).Err(); err != nil {
		t.Fatal(err)
	}
}

// The limit holds with waiters: 32 goroutines on 8 clients, limits 2 and 4
// mixed, WaitForRelease. No more than 4 permits are ever held at once, the
// holders of limit 2 acquire only while fewer than 2 others are held (by
// the semaphore's own count), and every worker is served.
func TestSemaphoreWaitForReleaseLimits(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		key := redistest.Key(t, "sem")
		const workers, clients, rounds = 32, 8, 8
		rdbs := make([]redis.UniversalClient, clients)
		for i := range rdbs {
			rdbs[i] = env.newClient(clientName("semlimits"))
		}
		var (
			wg     sync.WaitGroup
			inside atomic.Int32
			most   atomic.Int32
			served [workers]int
		)
		for w := range workers {
			limit := 4
			if w%2 == 1 {
				limit = 2
			}
			sem := redislock.New(rdbs[w%clients]).Semaphore(key, limit)
			wg.Go(func() {
				for range rounds {
					// A waiter of limit 2 waits while holders of limit 4
					// keep 2 or more permits, which may be until they are
					// all done: on a loaded machine that took more than
					// 20 s. The deadline only catches a wait that nothing
					// ends (a lost wake-up polls once an hour).
					wctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
					p, err := sem.Acquire(wctx, 10*time.Second, waitOpt())
					cancel()
					if err != nil {
						t.Errorf("worker %d: %v", w, err)
						return
					}
					n := inside.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					inside.Add(-1)
					if err := p.Release(ctx); err != nil {
						t.Errorf("worker %d: Release: %v", w, err)
						return
					}
					served[w]++
				}
			})
		}
		wg.Wait()
		if m := most.Load(); m > 4 {
			t.Errorf("%d permits held at once, want at most 4", m)
		}
		for w, n := range served {
			if n != rounds {
				t.Errorf("worker %d served %d times, want %d", w, n, rounds)
			}
		}

		// Limit 2 beside limit 4, by the server's count: four permits held,
		// a waiter of limit 2 queued before one of limit 4. A release
		// wakes the first, whose limit refuses the slot: it passes it to
		// the second and waits on, until fewer than 2 are held.
		sem4 := redislock.New(env.admin).Semaphore(redistest.Key(t, "mixed"), 4)
		holders := holdAll(t, sem4)
		small, _ := startSemWaiter(t, env, redislock.New(env.admin).Semaphore(sem4.Key(), 2), 1, waitOpt())
		large, _ := startSemWaiter(t, env, sem4, 2, waitOpt())
		if err := holders[0].Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-large
		if got.err != nil {
			t.Fatalf("waiter of limit 4: %v", got.err)
		}
		holders = append(holders[1:], got.permit)
		for len(holders) > 1 {
			select {
			case s := <-small:
				t.Fatalf("waiter of limit 2 acquired (%v) while %d were held", s.err, len(holders))
			default:
			}
			if err := holders[0].Release(ctx); err != nil {
				t.Fatal(err)
			}
			holders = holders[1:]
		}
		s := <-small
		if s.err != nil {
			t.Fatalf("waiter of limit 2: %v", s.err)
		}
		if h, err := sem4.Holders(ctx); err != nil || len(h) != 2 {
			t.Errorf("holders after the waiter of limit 2 acquired: %d, %v; want 2", len(h), err)
		}
		_ = s.permit.Release(ctx)
		_ = holders[0].Release(ctx)
	})
}

// LimitRetry and the jitters around WaitForRelease behave as for Lock:
// LimitRetry(…, 0) makes one attempt and leaves no registration; Jitter
// keeps the wait event-driven.
func TestSemaphoreWaitForReleaseWrapped(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		sem := redislock.New(env.admin).Semaphore(redistest.Key(t, "sem"), 1)
		holder := holdAll(t, sem)[0]
		start := time.Now()
		once := &redislock.Options{RetryStrategy: redislock.LimitRetry(redislock.WaitForRelease(nil), 0)}
		if _, err := sem.Acquire(ctx, time.Minute, once); !errors.Is(err, redislock.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("LimitRetry(WaitForRelease, 0): %v, want ErrNotObtained at once", err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("LimitRetry(WaitForRelease, 0) took %v", took)
		}
		if n := env.admin.ZCard(ctx, waitQueue(sem.Key())).Val(); n != 0 {
			t.Errorf("%d registrations left by a waiter that gave up", n)
		}
		jitter := &redislock.Options{RetryStrategy: redislock.FullJitter(redislock.LimitRetry(redislock.WaitForRelease(redislock.LinearBackoff(time.Hour)), 5))}
		done, counter := startSemWaiter(t, env, sem, 1, jitter)
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.err != nil {
			t.Fatalf("wrapped waiter: %v", got.err)
		}
		if _, _, _, grants := counter.counts(); grants != 1 {
			t.Errorf("wrapped waiter acquired with %d grants, want 1", grants)
		}
		_ = got.permit.Release(ctx)
	})
}

// A waiter gives up (its context ends): it leaves the queue, and a slot
// reserved for it is passed on.
func TestSemaphoreWaitForReleaseContext(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		sem := redislock.New(env.admin).Semaphore(redistest.Key(t, "sem"), 1)
		holder := holdAll(t, sem)[0]
		const wait = 300 * time.Millisecond
		start := time.Now()
		dctx, cancel := context.WithTimeout(ctx, wait)
		_, err := redislock.New(env.newClient(clientName("deadline"))).Semaphore(sem.Key(), 1).Acquire(dctx, time.Minute, waitOpt())
		cancel()
		if !errors.Is(err, redislock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want ErrNotObtained and DeadlineExceeded", err)
		}
		if took := time.Since(start); took < wait || took > wait+time.Second {
			t.Errorf("gave up after %v, want the deadline of %v", took, wait)
		}
		if n := env.admin.ZCard(ctx, waitQueue(sem.Key())).Val(); n != 0 {
			t.Errorf("%d registrations left by a waiter that gave up", n)
		}
		_ = holder.Release(ctx)
	})
}

// The helper processes of TestSemaphoreWaitForReleaseProcesses are this
// test binary run again (TestMain belongs to helpers_test.go).
const semHelperEnv = "REDISLOCK_SEM_HELPER" // JSON of semHelperSpec

func init() {
	if spec := os.Getenv(semHelperEnv); spec != "" {
		os.Exit(semHelperMain(spec))
	}
}

type semHelperSpec struct {
	Addrs   []string
	Master  string
	Cluster bool
	Key     string // the semaphore
	Count   string // a counter of holders, INCR'd after Acquire and DECR'd before Release
	Limit   int
	Workers int
	Rounds  int
	Name    string // the client's name
}

// semHelperMain: spec.Workers goroutines acquire a permit spec.Rounds
// times each with WaitForRelease, hold it 2 ms, release it. Its last line
// on stdout: "done <acquisitions> <over limit> <blocks> <timeouts> <grants>".
func semHelperMain(js string) int {
	var spec semHelperSpec
	if err := json.Unmarshal([]byte(js), &spec); err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", semHelperEnv, js, err)
		return 2
	}
	ctx := context.Background()
	redis.SetLogger(quietLog{})
	rdb := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: spec.Addrs, MasterName: spec.Master, IsClusterMode: spec.Cluster, ClientName: spec.Name})
	defer func() { _ = rdb.Close() }()
	counter := &waitCounter{}
	rdb.AddHook(counter)
	sem := redislock.New(rdb).Semaphore(spec.Key, spec.Limit)
	var acquisitions, over atomic.Int64
	var wg sync.WaitGroup
	failed := atomic.Bool{}
	for range spec.Workers {
		wg.Go(func() {
			for range spec.Rounds {
				wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
				p, err := sem.Acquire(wctx, 10*time.Second, waitOpt())
				cancel()
				if err != nil {
					fmt.Fprintln(os.Stderr, "acquire:", err)
					failed.Store(true)
					return
				}
				acquisitions.Add(1)
				if n, err := rdb.Incr(ctx, spec.Count).Result(); err != nil || n > int64(spec.Limit) {
					over.Add(1)
				}
				time.Sleep(2 * time.Millisecond)
				rdb.Decr(ctx, spec.Count)
				if err := p.Release(ctx); err != nil {
					fmt.Fprintln(os.Stderr, "release:", err)
					failed.Store(true)
					return
				}
			}
		})
	}
	wg.Wait()
	_, blocks, timeouts, grants := counter.counts()
	fmt.Printf("done %d %d %d %d %d\n", acquisitions.Load(), over.Load(), blocks, timeouts, grants)
	if failed.Load() {
		return 1
	}
	return 0
}

// Waiters in other processes: a process waits for the permit that this one
// holds and is woken by its release; then three processes of four
// goroutines share a semaphore of limit 2, never more than 2 holders.
func TestSemaphoreWaitForReleaseProcesses(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			opts := topo.Options(t)
			admin := namedClients(t, topo)("")
			base := semHelperSpec{Addrs: opts.Addrs, Master: opts.MasterName, Cluster: opts.IsClusterMode, Count: redistest.Key(t, "count")}
			admin.Set(ctx, base.Count, 0, time.Minute)

			// One waiter in another process.
			sem := redislock.New(admin).Semaphore(redistest.Key(t, "one"), 1)
			holder := holdAll(t, sem)[0]
			one := base
			one.Key, one.Limit, one.Workers, one.Rounds, one.Name = sem.Key(), 1, 1, 1, clientName("semproc")
			h := startSemHelper(t, one)
			waitUntil(t, "the other process's waiter to block", func() bool { return blocked(t, admin, one.Name) })
			if err := holder.Release(ctx); err != nil {
				t.Fatal(err)
			}
			if r := h.wait(t); r.acquisitions != 1 || r.grants != 1 {
				t.Errorf("the other process acquired %d times with %d grants, want 1 and 1", r.acquisitions, r.grants)
			}

			// Three processes on one semaphore.
			many := base
			many.Key, many.Limit, many.Workers, many.Rounds = redistest.Key(t, "many"), 2, 4, 10
			var helpers []*semHelper
			for range 3 {
				s := many
				s.Name = clientName("semproc")
				helpers = append(helpers, startSemHelper(t, s))
			}
			var total, over, blocks, timeouts, grants int
			for _, h := range helpers {
				r := h.wait(t)
				total, over, blocks, timeouts, grants = total+r.acquisitions, over+r.over, blocks+r.blocks, timeouts+r.timeouts, grants+r.grants
			}
			t.Logf("%d acquisitions in 3 processes: %d blocks (%d timed out), %d with a grant", total, blocks, timeouts, grants)
			if want := 3 * many.Workers * many.Rounds; total != want {
				t.Errorf("%d acquisitions, want %d", total, want)
			}
			if over != 0 {
				t.Errorf("%d acquisitions saw more than %d holders", over, many.Limit)
			}
			if grants == 0 {
				t.Errorf("no acquisition came with a grant: the processes did not hand over")
			}
			if keys := keysWithoutTTL(t, admin, redistest.Tag(t)+"*"); len(keys) != 0 {
				t.Errorf("keys without expiry: %q", keys)
			}
		})
	}
}

// semHelper is a running helper process of the semaphore tests.
type semHelper struct {
	cmd  *exec.Cmd
	last chan string // its last line on stdout, when it has exited
}

// semReport is a helper's "done" line.
type semReport struct{ acquisitions, over, blocks, timeouts, grants int }

func startSemHelper(t *testing.T, spec semHelperSpec) *semHelper {
	t.Helper()
	js, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	h := &semHelper{last: make(chan string, 1)}
	h.cmd = exec.Command(os.Args[0], "-test.run=^$") // #nosec G204 G702 -- this test binary, run again
	h.cmd.Env = append(os.Environ(), semHelperEnv+"="+string(js))
	h.cmd.Stderr = os.Stderr
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		last := ""
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			last = sc.Text()
		}
		h.last <- last
	}()
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
			<-h.last
			_ = h.cmd.Wait()
		}
	})
	return h
}

// wait waits for the helper to exit and returns its report.
func (h *semHelper) wait(t *testing.T) semReport {
	t.Helper()
	var line string
	select {
	case line = <-h.last:
	case <-time.After(time.Minute):
		t.Fatal("a helper process ran for a minute")
	}
	if err := h.cmd.Wait(); err != nil {
		t.Errorf("helper process: %v", err)
	}
	var r semReport
	if _, err := fmt.Sscanf(line, "done %d %d %d %d %d", &r.acquisitions, &r.over, &r.blocks, &r.timeouts, &r.grants); err != nil {
		t.Fatalf("helper's last line %q: %v", line, err)
	}
	return r
}

// Releases in a row, before the woken waiters have taken their slots:
// each grant stays on its waiter's grant list until the waiter takes it,
// none replaces another. Three waiters share one client, so that only one
// of them blocks at a time (on the grant lists of all three), and the
// blocks after the first are held back until the three releases are done.
func TestSemaphoreWaitForReleaseGrantsInFlight(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		sem := redislock.New(env.admin).Semaphore(redistest.Key(t, "sem"), 3)
		holders := holdAll(t, sem)
		name := clientName("semshared")
		shared := env.newClient(name)
		counter := &waitCounter{}
		shared.AddHook(counter)
		gate := &blockGate{open: make(chan struct{})}
		shared.AddHook(gate)
		ws := redislock.New(shared).Semaphore(sem.Key(), 3)
		var dones []<-chan acquired
		for i := range 3 {
			dones = append(dones, acquireAsync(ctx, ws, time.Minute, waitOpt()))
			waitUntil(t, fmt.Sprintf("waiter %d to register", i), func() bool {
				return env.admin.ZCard(ctx, waitQueue(sem.Key())).Val() == int64(i+1)
			})
		}
		waitUntil(t, "the first waiter to block", func() bool { return blocked(t, env.admin, name) })
		for _, p := range holders {
			if err := p.Release(ctx); err != nil {
				t.Fatal(err)
			}
		}
		close(gate.open)
		for i, done := range dones {
			got := <-done
			if got.err != nil {
				t.Fatalf("waiter %d: %v", i, got.err)
			}
			defer func() { _ = got.permit.Release(ctx) }()
		}
		if _, _, timeouts, grants := counter.counts(); grants != 3 {
			t.Errorf("%d waiters acquired with a grant (%d blocks timed out), want 3", grants, timeouts)
		}
	})
}

// blockGate is a go-redis hook that holds every blocking pipeline but the
// first until open is closed.
type blockGate struct {
	open   chan struct{}
	passed atomic.Bool
}

func (g *blockGate) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (g *blockGate) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (g *blockGate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if len(cmds) > 0 && cmds[len(cmds)-1].Name() == "blpop" && g.passed.Swap(true) {
			<-g.open
		}
		return next(ctx, cmds)
	}
}

// semHook records what a semaphore's hooks report.
type semHook struct {
	redislock.NopHook
	mu       sync.Mutex
	released []int  // ReleaseDone's HandedOver
	obtained []bool // ObtainDone's HandedOver, of calls that obtained
}

func (h *semHook) ReleaseDone(_ context.Context, e redislock.ReleaseEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released = append(h.released, e.HandedOver)
}

func (h *semHook) ObtainDone(_ context.Context, e redislock.ObtainEvent) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e.Err == nil {
		h.obtained = append(h.obtained, e.HandedOver)
	}
}

// The hooks see the hand-over: the release reports one slot handed over,
// the waiter's acquire that it came with a grant.
func TestSemaphoreWaitForReleaseHooks(t *testing.T) {
	forEachWaitTopology(t, func(t *testing.T, env *waitEnv) {
		ctx := context.Background()
		h := &semHook{}
		locker := redislock.New(env.admin)
		locker.AddHook(h)
		sem := locker.Semaphore(redistest.Key(t, "sem"), 1)
		holder := holdAll(t, sem)[0]
		name := clientName("semhook")
		waiter := redislock.New(env.newClient(name))
		waiter.AddHook(h)
		done := acquireAsync(ctx, waiter.Semaphore(sem.Key(), 1), time.Minute, waitOpt())
		waitUntil(t, "the waiter to block", func() bool { return blocked(t, env.admin, name) })
		if err := holder.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := <-done
		if got.err != nil {
			t.Fatal(got.err)
		}
		h.mu.Lock()
		released, obtained := slices.Clone(h.released), slices.Clone(h.obtained)
		h.mu.Unlock()
		if !slices.Equal(released, []int{1}) || !slices.Equal(obtained, []bool{false, true}) {
			t.Errorf("hooks saw releases handing over %v and acquisitions with a grant %v; want [1] and [false true]", released, obtained)
		}
		_ = got.permit.Release(ctx)
	})
}

// semWaitACL is what a semaphore's user needs, WaitForRelease and fence
// key included, as docs/semaphore.md lists it (INFO, with which the engine
// reads the server's hz, is optional).
var semWaitACL = []string{"~sems:*", "+evalsha", "+eval", "+evalsha_ro", "+eval_ro", "+time", "+info",
	"+zadd", "+zrange", "+zrangebyscore", "+zremrangebyscore", "+zscore", "+zcard", "+zrem", "+zcount",
	"+hget", "+hset", "+hdel", "+hmget", "+pexpireat", "+pexpiretime", "+pexpire",
	"+rpush", "+blpop", "+get", "+set"}

// With the documented ACL, a waiter registers, is handed a permit, gives
// up (its leave script runs) and nothing is refused (ACL LOG stays empty).
func TestSemaphoreWaitForReleaseACL(t *testing.T) {
	srv := redistest.NewServer(t, redistest.Redis)
	admin := srv.Client(t)
	ctx := context.Background()
	setUser(t, admin, "sem", semWaitACL)
	if err := admin.Do(ctx, "ACL", "LOG", "RESET").Err(); err != nil {
		t.Fatal(err)
	}
	o := srv.Options()
	o.Username, o.Password = "sem", "sem"
	rdb := redis.NewClient(o)
	defer func() { _ = rdb.Close() }()
	sem := redislock.New(rdb).Semaphore("sems:{a}", 1)
	opt := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil), FenceKey: "sems:{a}:fence", Metadata: "m"}
	p, err := sem.Acquire(ctx, time.Minute, opt)
	if err != nil {
		t.Fatal(err)
	}
	done := acquireAsync(ctx, sem, time.Minute, opt)
	waitUntil(t, "the waiter to register", func() bool { return admin.ZCard(ctx, waitQueue(sem.Key())).Val() == 1 })
	if err := p.Release(ctx); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if got.err != nil {
		t.Fatalf("waiter: %v", got.err)
	}
	if h, err := sem.Holders(ctx); err != nil || len(h) != 1 {
		t.Fatalf("Holders: %d, %v", len(h), err)
	}
	if _, err := got.permit.TTL(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := sem.Acquire(wctx, time.Minute, opt); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire of a held semaphore: %v, want the deadline", err)
	}
	if err := got.permit.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := admin.ZCard(ctx, waitQueue(sem.Key())).Val(); n != 0 {
		t.Errorf("%d registrations left: the leave script did not run", n)
	}
	if log, err := admin.Do(ctx, "ACL", "LOG").Slice(); err != nil || len(log) != 0 {
		t.Errorf("ACL LOG: %v, %v; want nothing refused", log, err)
	}
}
