package quorum

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/leaktest"
	"github.com/redislock/redislock/internal/redistest"
)

// allFlavors puts every server the harness runs into one quorum: the
// scripts (INFO and TIME inside them, SET … KEEPTTL, PEXPIRE) work on each.
var allFlavors = []redistest.Flavor{redistest.Redis, redistest.Valkey, redistest.Redis8, redistest.Valkey9}

// parse splits a lock value as the root package's Inspect does.
func parse(t *testing.T, v string) (token, fence, metadata string) {
	t.Helper()
	n, rest, ok := strings.Cut(v, ":")
	l, err := strconv.Atoi(n)
	if !ok || err != nil || l >= len(rest) || rest[l] != ':' {
		t.Fatalf("value %q is not in the lock format", v)
	}
	token, rest = rest[:l], rest[l+1:]
	fence, metadata, ok = strings.Cut(rest, ":")
	if !ok {
		t.Fatalf("value %q has no metadata field", v)
	}
	return token, fence, metadata
}

func TestObtainRefreshReleaseOnEveryFlavor(t *testing.T) {
	q := startQuorum(t, 5, persistent, allFlavors...)
	ctx := context.Background()
	keys := []string{key(t, "a"), key(t, "b")}
	fence := key(t, "fence")
	r := Request{Keys: keys, Token: "tok", Metadata: "m:1", TTL: time.Second, FenceKey: fence}

	// The counters do not exist yet: each node sets its own to its TIME in
	// µs, above the proposal (the client's clock when it sent round 1), so
	// the token needs a second round.
	g1, err := q.engine.Obtain(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if g1.Rounds != 2 || g1.Nodes != 5 || g1.Fence < g1.Sent.UnixMicro() {
		t.Fatalf("first grant %+v: want 2 rounds, 5 nodes, a token from the nodes' clocks", g1)
	}
	if want := g1.Sent.Add(Validity(time.Second)); !g1.ValidUntil.Equal(want) {
		t.Fatalf("ValidUntil %v, want %v", g1.ValidUntil, want)
	}
	for i := range q.servers {
		for _, k := range keys {
			v, ok := q.get(t, i, k)
			if !ok {
				t.Fatalf("node %d has no %s", i, k)
			}
			tok, f, meta := parse(t, v)
			if want := strconv.FormatInt(g1.Fence, 10) + "/" + g1.Tag; tok != "tok" || f != want || meta != "m:1" {
				t.Fatalf("node %d %s = %q: want token tok, fence %s, metadata m:1", i, k, v, want)
			}
		}
		if c, _ := q.get(t, i, fence); c != strconv.FormatInt(g1.Fence, 10) {
			t.Fatalf("node %d counter %s, want %d", i, c, g1.Fence)
		}
	}
	if !strings.HasPrefix(g1.Tag, CounterTag(fence)) || len(g1.Tag) != 8+nonceLen {
		t.Fatalf("tag %q: want the counter's tag and a nonce", g1.Tag)
	}
	ttl, err := q.engine.TTL(ctx, keys, "tok", g1.Tag)
	if err != nil || ttl <= 0 || ttl > time.Second {
		t.Fatalf("TTL = %v, %v; want in (0, 1s]", ttl, err)
	}
	ren, err := q.engine.Refresh(ctx, Hold{Keys: keys, Token: "tok", Tag: g1.Tag, Metadata: "m:1", Fence: g1.Fence, ValidUntil: g1.ValidUntil}, time.Second)
	if err != nil || ren.Nodes != 5 || !ren.ValidUntil.After(g1.ValidUntil) {
		t.Fatalf("Refresh = %+v, %v; want 5 nodes and a later validity", ren, err)
	}
	if n, err := q.engine.Release(ctx, keys, "tok", g1.Tag); n != 5 || err != nil {
		t.Fatalf("Release = %d, %v; want 5, nil", n, err)
	}
	if n := q.holders(t, keys[0]) + q.holders(t, keys[1]); n != 0 {
		t.Fatalf("%d keys left after release", n)
	}

	// Acquiring again proposes above the last token: one round.
	g2, err := q.engine.Obtain(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if g2.Rounds != 1 || g2.Fence <= g1.Fence || g2.Tag == g1.Tag {
		t.Fatalf("second grant %+v after %+v: want one round, a greater token, a tag of its own", g2, g1)
	}
	if _, err := q.engine.Release(ctx, keys, "tok", g2.Tag); err != nil {
		t.Fatal(err)
	}

	// Unfenced: the fence field is "0", one round.
	g3, err := q.engine.Obtain(ctx, Request{Keys: keys[:1], Token: "plain", TTL: time.Second})
	if err != nil || g3.Fence != 0 || g3.Rounds != 1 {
		t.Fatalf("unfenced grant %+v, %v", g3, err)
	}
	if v, _ := q.get(t, 3, keys[0]); v != "5:plain:0/"+g3.Tag+":" || len(g3.Tag) != nonceLen {
		t.Fatalf("unfenced value %q, want 5:plain:0/<nonce>:", v)
	}
}

func TestMajorityLost(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(strconv.Itoa(n)+" nodes dead", func(t *testing.T) {
			q := startQuorum(t, n, persistent)
			dead := Majority(n)
			for i := range dead {
				q.servers[i].Kill()
			}
			k := key(t, "lock")
			_, err := q.engine.Obtain(context.Background(), Request{Keys: []string{k}, Token: "tok", TTL: time.Second, FenceKey: key(t, "fence")})
			var f *Failure
			if !errors.Is(err, ErrNotObtained) || !errors.As(err, &f) || f.Counts.Failed != dead || !f.Transient() {
				t.Fatalf("Obtain: %v; want ErrNotObtained with %d failed nodes, transient", err, dead)
			}
			if h := q.holders(t, k, rangeInts(dead)...); h != 0 {
				t.Fatalf("%d live nodes left holding the key", h)
			}
		})
		t.Run(strconv.Itoa(n)+" nodes held by another", func(t *testing.T) {
			q := startQuorum(t, n, persistent)
			k := key(t, "lock")
			other := "5:other:0:"
			for i := range Majority(n) {
				if err := q.admin[i].Set(context.Background(), k, other, time.Minute).Err(); err != nil {
					t.Fatal(err)
				}
			}
			_, err := q.engine.Obtain(context.Background(), Request{Keys: []string{k}, Token: "tok", TTL: time.Second, FenceKey: key(t, "fence")})
			var f *Failure
			if !errors.Is(err, ErrNotObtained) || !errors.As(err, &f) || f.Counts.Held != Majority(n) || f.Transient() {
				t.Fatalf("Obtain: %v; want ErrNotObtained, %d held, not transient", err, Majority(n))
			}
			for i := range n {
				v, ok := q.get(t, i, k)
				if i < Majority(n) && v != other || i >= Majority(n) && ok {
					t.Fatalf("node %d: %q, %v after the failed obtain", i, v, ok)
				}
			}
		})
	}
}

func rangeInts(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func TestMinorityDead(t *testing.T) {
	for _, n := range []int{3, 5} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			q := startQuorum(t, n, persistent)
			dead := n - Majority(n)
			for i := range dead {
				q.servers[n-1-i].Kill()
			}
			ctx := context.Background()
			k, fence := key(t, "lock"), key(t, "fence")
			var last int64
			for range 3 {
				g, err := q.engine.Obtain(ctx, Request{Keys: []string{k}, Token: "tok", TTL: time.Second, FenceKey: fence})
				if err != nil || g.Nodes != Majority(n) || g.Fence <= last {
					t.Fatalf("Obtain = %+v, %v; want %d nodes and a token above %d", g, err, Majority(n), last)
				}
				last = g.Fence
				ren, err := q.engine.Refresh(ctx, Hold{Keys: []string{k}, Token: "tok", Tag: g.Tag, Fence: g.Fence, ValidUntil: g.ValidUntil}, time.Second)
				if err != nil || ren.Nodes != Majority(n) {
					t.Fatalf("Refresh = %+v, %v", ren, err)
				}
				released, err := q.engine.Release(ctx, []string{k}, "tok", g.Tag)
				var f *Failure
				if released != Majority(n) || !errors.As(err, &f) || f.Counts.Failed != dead {
					t.Fatalf("Release = %d, %v; want %d and the dead nodes' errors", released, err, Majority(n))
				}
			}
		})
	}
}

func TestKeyHeldOnMinorityIsNotOverwritten(t *testing.T) {
	q := startQuorum(t, 3, persistent)
	ctx := context.Background()
	k := key(t, "lock")
	other := "5:other:7/abcdef01:theirs"
	if err := q.admin[0].Set(ctx, k, other, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	g, err := q.engine.Obtain(ctx, Request{Keys: []string{k}, Token: "tok", TTL: time.Second, FenceKey: key(t, "fence")})
	if err != nil || g.Nodes != 2 {
		t.Fatalf("Obtain = %+v, %v; want the 2 free nodes", g, err)
	}
	if v, _ := q.get(t, 0, k); v != other {
		t.Fatalf("the other holder's key became %q", v)
	}
	if ttl := q.admin[0].PTTL(ctx, k).Val(); ttl < 50*time.Second {
		t.Fatalf("the other holder's key has PTTL %v, was set for a minute", ttl)
	}
}

func TestTokensIncreaseAcrossRestarts(t *testing.T) {
	for _, p := range []persistence{persistent, ephemeral} {
		name := map[persistence]string{persistent: "aof", ephemeral: "no persistence"}[p]
		t.Run(name, func(t *testing.T) {
			q := startQuorum(t, 5, p)
			ctx := context.Background()
			k, fence := key(t, "lock"), key(t, "fence")
			r := Request{Keys: []string{k}, Token: "tok", TTL: time.Second, FenceKey: fence}
			var last int64
			obtain := func(what string) Grant {
				t.Helper()
				g, err := q.engine.Obtain(ctx, r)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if g.Fence <= last {
					t.Fatalf("%s: token %d after %d", what, g.Fence, last)
				}
				last = g.Fence
				if _, err := q.engine.Release(ctx, r.Keys, r.Token, g.Tag); err != nil {
					t.Fatal(err)
				}
				return g
			}
			for round := range 2 {
				for i := range q.servers {
					what := "round " + strconv.Itoa(round) + ", node " + strconv.Itoa(i) + " restarted"
					obtain(what + " next")
					// Killed while holding nothing, so that no key of ours
					// waits for its TTL on the node.
					q.servers[i].Restart(t)
					if p == persistent {
						if c, _ := q.get(t, i, fence); c != strconv.FormatInt(last, 10) {
							t.Fatalf("node %d kept counter %q across its restart, want %d", i, c, last)
						}
						if g := obtain(what); g.Nodes != 5 {
							t.Fatalf("%s: %d nodes, want 5", what, g.Nodes)
						}
						continue
					}
					if _, ok := q.get(t, i, fence); ok {
						t.Fatalf("node %d kept its counter without persistence", i)
					}
					// It recovers for MaxTTL: the others carry the lock.
					if g := obtain(what); g.Nodes != 4 {
						t.Fatalf("%s: %d nodes, want the 4 that are not recovering", what, g.Nodes)
					}
					redistest.WaitFor(t, "node "+strconv.Itoa(i)+"'s recovery", 10*time.Second, func() bool {
						return obtain(what).Nodes == 5
					})
				}
			}
		})
	}
}

// TestTokenAfterIntersectionLostCounter is docs/quorum.md's "Counters that
// are lost" on real servers: the only node shared by two acquisitions'
// majorities restarts without its counter, and the later token is still
// greater.
func TestTokenAfterIntersectionLostCounter(t *testing.T) {
	q := startMixed(t, []persistence{ephemeral, persistent, persistent})
	ctx := context.Background()
	k, fence := key(t, "lock"), key(t, "fence")
	r := Request{Keys: []string{k}, Token: "tok", TTL: time.Second, FenceKey: fence}
	obtain := func(what string) int64 {
		t.Helper()
		g, err := q.engine.Obtain(ctx, r)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if _, err := q.engine.Release(ctx, r.Keys, r.Token, g.Tag); err != nil && what == "on every node" {
			t.Fatal(err)
		}
		return g.Fence
	}
	t0 := obtain("on every node")
	q.servers[2].Kill()
	tA := obtain("on nodes 0 and 1")
	q.servers[2].Restart(t) // AOF: back with t0
	q.servers[0].Restart(t) // no persistence: back with nothing
	q.servers[1].Kill()
	if c, _ := q.get(t, 2, fence); c != strconv.FormatInt(t0, 10) {
		t.Fatalf("node 2's counter %q, want the old %d", c, t0)
	}
	if _, ok := q.get(t, 0, fence); ok {
		t.Fatal("node 0 kept its counter without persistence")
	}
	// Node 0 recovers for MaxTTL, during which nodes 0 and 2 are no
	// majority.
	_, err := q.engine.Obtain(ctx, r)
	var f *Failure
	if !errors.As(err, &f) || f.Counts.Recovering != 1 {
		t.Fatalf("Obtain while node 0 recovers: %v; want not obtained, 1 recovering", err)
	}
	var tB int64
	redistest.WaitFor(t, "node 0's recovery", 10*time.Second, func() bool {
		g, err := q.engine.Obtain(ctx, r)
		tB = g.Fence
		return err == nil
	})
	if tB <= tA {
		t.Fatalf("token %d after %d", tB, tA)
	}
	if c, _ := q.get(t, 0, fence); c != strconv.FormatInt(tB, 10) {
		t.Fatalf("node 0's counter %q, want %d", c, tB)
	}
}

func TestRefreshWhenMajorityGoes(t *testing.T) {
	q := startQuorum(t, 3, ephemeral)
	ctx := context.Background()
	k, fence := key(t, "lock"), key(t, "fence")
	g, err := q.engine.Obtain(ctx, Request{Keys: []string{k}, Token: "tok", TTL: time.Second, FenceKey: fence})
	if err != nil {
		t.Fatal(err)
	}
	h := Hold{Keys: []string{k}, Token: "tok", Tag: g.Tag, Fence: g.Fence, ValidUntil: g.ValidUntil}
	q.servers[0].Kill()
	q.servers[1].Kill()
	_, err = q.engine.Refresh(ctx, h, time.Second)
	var f *Failure
	if !errors.Is(err, ErrNoQuorum) || !errors.As(err, &f) || !f.Transient() || f.Counts.Taken != 1 {
		t.Fatalf("Refresh with 2 of 3 nodes dead: %v; want ErrNoQuorum, transient", err)
	}
	// Back without their data, and recovering: they re-take nothing.
	q.servers[0].Restart(t)
	q.servers[1].Restart(t)
	_, err = q.engine.Refresh(ctx, h, time.Second)
	if !errors.Is(err, ErrNotHeld) || !errors.As(err, &f) || f.Transient() {
		t.Fatalf("Refresh with 2 of 3 nodes emptied: %v; want ErrNotHeld", err)
	}
	// On a loaded machine the restarts can outlast the lease: the refresh
	// is then refused as expired, without being sent, which is as lost.
	if !f.Expired && f.Counts.Lost != 2 {
		t.Fatalf("Refresh with 2 of 3 nodes emptied: %v; want 2 lost", err)
	}
	if h := q.holders(t, k, 2); h != 0 {
		t.Fatalf("a recovering node took the key")
	}
}

func TestRefreshRetakesMissingKeys(t *testing.T) {
	q := startQuorum(t, 3, persistent)
	ctx := context.Background()
	k, fence := key(t, "lock"), key(t, "fence")
	g, err := q.engine.Obtain(ctx, Request{Keys: []string{k}, Token: "tok", Metadata: "meta", TTL: time.Second, FenceKey: fence})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := q.get(t, 1, k)
	if err := q.admin[0].Del(ctx, k).Err(); err != nil {
		t.Fatal(err)
	}
	ren, err := q.engine.Refresh(ctx, Hold{Keys: []string{k}, Token: "tok", Tag: g.Tag, Metadata: "meta", Fence: g.Fence, ValidUntil: g.ValidUntil}, time.Second)
	if err != nil || ren.Nodes != 3 {
		t.Fatalf("Refresh = %+v, %v; want 3 nodes", ren, err)
	}
	if v, _ := q.get(t, 0, k); v != want {
		t.Fatalf("re-taken value %q, want %q", v, want)
	}
	if ttl := q.admin[0].PTTL(ctx, k).Val(); ttl <= 0 || ttl > time.Second {
		t.Fatalf("re-taken key's PTTL %v", ttl)
	}
}

func TestRefreshAfterTheLeaseEndedSendsNothing(t *testing.T) {
	dead := []redis.Scripter{newTestClient(t, redistest.DeadAddr(t)), newTestClient(t, redistest.DeadAddr(t)), newTestClient(t, redistest.DeadAddr(t))}
	e, err := New(dead, Config{MaxTTL: testMaxTTL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Refresh(context.Background(), Hold{Keys: []string{"k"}, Token: "tok", Tag: newTag(""), ValidUntil: time.Now().Add(-time.Millisecond)}, time.Second)
	var f *Failure
	if !errors.Is(err, ErrNotHeld) || !errors.As(err, &f) || !f.Expired || f.Counts.Failed != 0 {
		t.Fatalf("Refresh after the lease ended: %v; want ErrNotHeld, expired, nothing sent", err)
	}
}

func TestTTLIsTheMajoritysRemainingTime(t *testing.T) {
	q := startQuorum(t, 5, persistent)
	ctx := context.Background()
	k := key(t, "lock")
	g, err := q.engine.Obtain(ctx, Request{Keys: []string{k}, Token: "tok", TTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i, ms := range []int64{900_000, 800_000, 700_000, 600_000, 500_000} {
		if err := q.admin[i].PExpire(ctx, k, time.Duration(ms)*time.Millisecond).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ttl, err := q.engine.TTL(ctx, []string{k}, "tok", g.Tag)
	if err != nil || ttl > 700*time.Second || ttl <= 600*time.Second {
		t.Fatalf("TTL = %v, %v; want the third longest, just under 700s", ttl, err)
	}
	// Two nodes no longer hold it: the third longest is now node 3's.
	q.admin[0].Del(ctx, k)
	q.admin[1].Set(ctx, k, "5:other:0:", time.Minute)
	if ttl, err := q.engine.TTL(ctx, []string{k}, "tok", g.Tag); err != nil || ttl > 500*time.Second || ttl <= 400*time.Second {
		t.Fatalf("TTL = %v, %v; want node 4's, just under 500s", ttl, err)
	}
	// With two nodes dead, the answer is a lower bound.
	q.servers[2].Kill()
	q.servers[3].Kill()
	ttl, err = q.engine.TTL(ctx, []string{k}, "tok", g.Tag)
	if !errors.Is(err, ErrNoQuorum) || ttl != 0 {
		t.Fatalf("TTL with 2 dead = %v, %v; want 0 and ErrNoQuorum", ttl, err)
	}
}

// TestRecovery checks node.lua's rule on each flavor: a server without
// persistence takes nothing for MaxTTL after its start, one with AOF takes
// at once, and a restart without data starts the recovery again.
func TestRecovery(t *testing.T) {
	const window = 300 * time.Millisecond
	for _, f := range allFlavors {
		t.Run(string(f), func(t *testing.T) {
			ctx := context.Background()
			k := key(t, "lock")
			keys := []string{k, Marker(k)}
			args := obtainArgs("tok", "", time.Second, newTag(""), 0, window)
			obtainOn := func(c redis.Scripter) int64 {
				t.Helper()
				v, err := obtainScript.Run(ctx, c, keys, args...).Int64()
				if err != nil {
					t.Fatal(err)
				}
				return v
			}

			s := redistest.NewServer(t, f)
			c := newTestClient(t, s.Addr())
			if v := obtainOn(c); v != 2 {
				t.Fatalf("a fresh server without persistence answered %d, want 2 (recovering)", v)
			}
			ends, err := c.Get(ctx, Marker(k)).Int64()
			if err != nil {
				t.Fatal(err)
			}
			now, err := c.Time(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			if left := time.Duration(ends-now.UnixMilli()) * time.Millisecond; left <= 0 || left > window {
				t.Fatalf("recovery ends in %v, want in (0, %v]", left, window)
			}
			redistest.WaitFor(t, "the end of the recovery", 10*time.Second, func() bool { return obtainOn(c) == 0 })
			if m, _ := c.Get(ctx, Marker(k)).Result(); m != "0" {
				t.Fatalf("marker %q after the recovery, want 0", m)
			}
			s.Restart(t)
			if v := obtainOn(c); v != 2 {
				t.Fatalf("a server restarted without its data answered %d, want 2 (recovering)", v)
			}

			p := redistest.NewServer(t, f, "--appendonly", "yes")
			c = newTestClient(t, p.Addr())
			if v := obtainOn(c); v != 0 {
				t.Fatalf("a fresh server with AOF answered %d, want 0 (taken)", v)
			}
			if m, _ := c.Get(ctx, Marker(k)).Result(); m != "0" {
				t.Fatalf("marker %q on a server with AOF, want 0", m)
			}
		})
	}
}

// TestCounterFloor: a fence counter lost with its node's data comes back
// as that node's clock, above every token of before, even for a
// proposal far below it.
func TestCounterFloor(t *testing.T) {
	s := redistest.NewServer(t, redistest.Redis, "--appendonly", "yes")
	c := newTestClient(t, s.Addr())
	ctx := context.Background()
	k, fence := key(t, "lock"), key(t, "fence")
	keys := []string{k, fence, Marker(k)}
	before := time.Now().UnixMicro()
	v, err := obtainScript.Run(ctx, c, keys, obtainArgs("tok", "", time.Second, newTag(fence), minToken, testMaxTTL)...).Int64()
	after := time.Now().UnixMicro()
	if err != nil {
		t.Fatal(err)
	}
	if v >= 0 || -v < before || -v > after {
		t.Fatalf("obtain with a missing counter answered %d, want -(server time in µs, in [%d, %d])", v, before, after)
	}
	if got, _ := c.Get(ctx, fence).Int64(); got != -v {
		t.Fatalf("counter %d, want it set to %d", got, -v)
	}
}

func TestInputCheckedBeforeSending(t *testing.T) {
	dead := []redis.Scripter{newTestClient(t, redistest.DeadAddr(t)), newTestClient(t, redistest.DeadAddr(t)), newTestClient(t, redistest.DeadAddr(t))}
	e, err := New(dead, Config{MaxTTL: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, r := range []Request{
		{Token: "t", TTL: time.Second},
		{Keys: []string{""}, Token: "t", TTL: time.Second},
		{Keys: []string{"a", "a"}, Token: "t", TTL: time.Second},
		{Keys: []string{"a"}, TTL: time.Second},
		{Keys: []string{"a"}, Token: "t", TTL: 2 * time.Millisecond},
		{Keys: []string{"a"}, Token: "t", TTL: time.Second + time.Millisecond},
		{Keys: []string{"a"}, Token: "t", TTL: time.Second, FenceKey: "a"},
	} {
		if _, err := e.Obtain(ctx, r); !errors.Is(err, ErrInput) {
			t.Errorf("Obtain(%+v) = %v, want ErrInput", r, err)
		}
		if r.FenceKey != "" {
			continue // Refresh takes no fence key
		}
		if _, err := e.Refresh(ctx, Hold{Keys: r.Keys, Token: r.Token, Tag: newTag(""), ValidUntil: time.Now().Add(time.Hour)}, r.TTL); !errors.Is(err, ErrInput) {
			t.Errorf("Refresh(%+v) = %v, want ErrInput", r, err)
		}
	}
	tag := newTag("")
	for _, bad := range []string{"", "0", "0123456789ABCDEF", tag + "0", tag[1:], "0123456789abcdeg"} {
		if _, err := e.Refresh(ctx, Hold{Keys: []string{"a"}, Token: "t", Tag: bad, ValidUntil: time.Now().Add(time.Hour)}, time.Second); !errors.Is(err, ErrInput) {
			t.Errorf("Refresh with tag %q: %v, want ErrInput", bad, err)
		}
		if _, err := e.Release(ctx, []string{"a"}, "t", bad); !errors.Is(err, ErrInput) {
			t.Errorf("Release with tag %q: %v, want ErrInput", bad, err)
		}
		if _, err := e.TTL(ctx, []string{"a"}, "t", bad); !errors.Is(err, ErrInput) {
			t.Errorf("TTL with tag %q: %v, want ErrInput", bad, err)
		}
	}
	if _, err := e.Release(ctx, nil, "t", tag); !errors.Is(err, ErrInput) {
		t.Errorf("Release without keys: %v", err)
	}
	if _, err := e.TTL(ctx, []string{"a"}, "", tag); !errors.Is(err, ErrInput) {
		t.Errorf("TTL without token: %v", err)
	}

	one := newTestClient(t, redistest.DeadAddr(t))
	for name, nodes := range map[string][]redis.Scripter{
		"none":  nil,
		"two":   dead[:2],
		"four":  append(append([]redis.Scripter(nil), dead...), one),
		"nil":   {dead[0], nil, dead[2]},
		"twice": {dead[0], dead[1], dead[0]},
	} {
		if _, err := New(nodes, Config{MaxTTL: time.Second}); !errors.Is(err, ErrInput) {
			t.Errorf("New with %s: %v, want ErrInput", name, err)
		}
	}
	if _, err := New(dead, Config{MaxTTL: 2 * time.Millisecond}); !errors.Is(err, ErrInput) {
		t.Errorf("New with MaxTTL 2ms: %v, want ErrInput", err)
	}
}

func TestObtainWithContextDoneSendsNothing(t *testing.T) {
	q := startQuorum(t, 3, persistent)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	k := key(t, "lock")
	_, err := q.engine.Obtain(ctx, Request{Keys: []string{k}, Token: "tok", TTL: time.Second})
	if !errors.Is(err, ErrNotObtained) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Obtain with a cancelled context: %v; want ErrNotObtained and context.Canceled", err)
	}
	for i, a := range q.admin {
		if n := a.Exists(context.Background(), k, Marker(k)).Val(); n != 0 {
			t.Fatalf("node %d: %d keys written", i, n)
		}
	}
}

// TestLateReleaseOfAnotherAcquisition: an attempt's release that arrives
// late (a failed attempt's clean-up, the release of an earlier lock) must
// not delete the keys of a newer acquisition with the same token, which
// counts them for its majority (the model checker found that on the
// scripts that matched the token alone).
func TestLateReleaseOfAnotherAcquisition(t *testing.T) {
	q := startQuorum(t, 3, persistent)
	ctx := context.Background()
	k := key(t, "lock")
	r := Request{Keys: []string{k}, Token: "reused", TTL: time.Second, FenceKey: key(t, "fence")}
	g1, err := q.engine.Obtain(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.engine.Release(ctx, r.Keys, r.Token, g1.Tag); err != nil {
		t.Fatal(err)
	}
	g2, err := q.engine.Obtain(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	// g1's release again, as if it had been delayed in the network.
	if n, err := q.engine.Release(ctx, r.Keys, r.Token, g1.Tag); n != 0 || err != nil {
		t.Fatalf("the late release released %d nodes, %v; want none", n, err)
	}
	if h := q.holders(t, k); h != 3 {
		t.Fatalf("%d nodes hold g2's key after g1's late release, want 3", h)
	}
	// A late attempt of g1 is refused where g2 holds the keys.
	keys := []string{k, r.FenceKey, Marker(k)}
	v, err := obtainScript.Run(ctx, q.admin[0], keys, obtainArgs(r.Token, "", time.Second, g1.Tag, g2.Fence+1, testMaxTTL)...).Int64()
	if err != nil || v != 1 {
		t.Fatalf("g1's obtain on g2's key answered %d, %v; want 1 (held)", v, err)
	}
}

// TestNoGoroutineOutlivesACall: a node that accepts and never answers
// holds an Obtain until the validity's deadline, and the call returns with
// none of its goroutines left.
func TestNoGoroutineOutlivesACall(t *testing.T) {
	q := startQuorum(t, 3, persistent)
	silent := newTestClient(t, redistest.SilentAddr(t))
	e, err := New([]redis.Scripter{q.admin[0], q.admin[1], silent}, Config{MaxTTL: testMaxTTL})
	if err != nil {
		t.Fatal(err)
	}
	defer leaktest.Check(t, leaktest.Now())
	k := key(t, "lock")
	g, err := e.Obtain(context.Background(), Request{Keys: []string{k}, Token: "tok", TTL: 200 * time.Millisecond, FenceKey: key(t, "fence")})
	// The silent node holds the call past the validity: not obtained, and
	// released on the others.
	var f *Failure
	if !errors.Is(err, ErrNotObtained) || !errors.As(err, &f) || !f.Expired {
		t.Fatalf("Obtain with a silent node = %+v, %v; want ErrNotObtained, expired", g, err)
	}
	if h := q.holders(t, k); h != 0 {
		t.Fatalf("%d nodes left holding the key", h)
	}
}

// TestScriptsSharedWithRoot keeps the copy of the root package's lib.lua
// identical to it.
func TestScriptsSharedWithRoot(t *testing.T) {
	for name, ours := range map[string]string{"lib.lua": libSource} {
		theirs, err := readRoot("lua/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if theirs != ours {
			t.Errorf("internal/quorum/lua/%s differs from lua/%s", name, name)
		}
	}
}
