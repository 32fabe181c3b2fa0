package redislock_test

import (
	"context"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// TestRing runs the lock's life cycle through a go-redis Ring of two shards.
// A Ring places a key by its hash tag, like a Cluster: the keys and the
// fence key of one lock share a tag, so they land on one shard. Tags are
// tried until both shards have held a lock.
func TestRing(t *testing.T) {
	shards := []*redistest.Server{redistest.NewServer(t, redistest.Redis), redistest.NewServer(t, redistest.Redis)}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{
		"shard0": shards[0].Addr(),
		"shard1": shards[1].Addr(),
	}})
	t.Cleanup(func() { _ = ring.Close() })
	if _, cluster := any(ring).(*redis.ClusterClient); cluster {
		t.Fatal("a Ring must not be taken for a cluster")
	}

	direct := []*redis.Client{shards[0].Client(t), shards[1].Client(t)}
	used := make(map[int]bool)
	for i := 0; len(used) < len(shards); i++ {
		if i == 64 {
			t.Fatalf("64 tags all landed on shard(s) %v", used)
		}
		tag := redislock.HashTag("job" + strconv.Itoa(i))
		lockLifeCycle(t, ring, tag)
		// The fence counter outlives the lock: it shows where the tag went.
		var on []int
		for j, c := range direct {
			if mustExist(t, c, tag.Key("fence")) {
				on = append(on, j)
			}
		}
		if len(on) != 1 {
			t.Fatalf("fence key of tag %q on shards %v, want exactly one", tag, on)
		}
		used[on[0]] = true
	}
}

// TestUniversalClient runs the lock's life cycle through each kind of client
// that redis.NewUniversalClient builds: a single node, a Cluster (several
// addresses, or one with IsClusterMode) and a Sentinel failover client
// (MasterName). A cluster client is recognised behind the interface:
// keys of different slots are refused.
func TestUniversalClient(t *testing.T) {
	cases := []struct {
		name    string
		opts    func(t *testing.T) *redis.UniversalOptions
		want    any // the concrete client type
		cluster bool
	}{
		{"single", func(t *testing.T) *redis.UniversalOptions {
			return &redis.UniversalOptions{Addrs: []string{redistest.SharedServer(t, redistest.Redis).Addr()}}
		}, (*redis.Client)(nil), false},
		{"cluster", func(t *testing.T) *redis.UniversalOptions {
			return &redis.UniversalOptions{Addrs: redistest.SharedCluster(t, redistest.Redis).Addrs()}
		}, (*redis.ClusterClient)(nil), true},
		{"cluster-mode-one-address", func(t *testing.T) *redis.UniversalOptions {
			addrs := redistest.SharedCluster(t, redistest.Valkey).Addrs()
			return &redis.UniversalOptions{Addrs: addrs[:1], IsClusterMode: true}
		}, (*redis.ClusterClient)(nil), true},
		{"failover", func(t *testing.T) *redis.UniversalOptions {
			s := redistest.SharedSentinel(t, redistest.Redis)
			return &redis.UniversalOptions{Addrs: s.SentinelAddrs(), MasterName: redistest.MasterName}
		}, (*redis.Client)(nil), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rdb := redis.NewUniversalClient(tc.opts(t))
			t.Cleanup(func() { _ = rdb.Close() })
			if got, want := reflect.TypeOf(rdb), reflect.TypeOf(tc.want); got != want {
				t.Fatalf("NewUniversalClient built a %v, want %v", got, want)
			}
			lockLifeCycle(t, rdb, testTag(t))

			a, b := crossSlotKeys(t)
			lock, err := redislock.ObtainMulti(context.Background(), rdb, []string{a, b}, time.Minute, nil)
			switch {
			case tc.cluster && !errors.Is(err, redislock.ErrCrossSlot):
				t.Errorf("ObtainMulti over two slots: got %v, want ErrCrossSlot", err)
			case !tc.cluster && err != nil:
				t.Errorf("ObtainMulti over two slots on a single master: %v", err)
			case !tc.cluster:
				if err := lock.Release(context.Background()); err != nil {
					t.Errorf("Release: %v", err)
				}
			}
		})
	}
}

// TestCrossSlot: on a Cluster, a lock whose keys, or fence key, lie in
// different hash slots is refused with a *CrossSlotError and nothing is
// sent; keys with one hash tag work, fencing included. Elsewhere there are
// no slots, and the same keys are locked.
func TestCrossSlot(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		a, b := crossSlotKeys(t)
		tag := testTag(t)
		cc, cluster := rdb.(*redis.ClusterClient)
		if !cluster {
			lock, err := redislock.ObtainMulti(ctx, rdb, []string{a, b}, time.Minute, &redislock.Options{FenceKey: tag.Key("fence")})
			if err != nil {
				t.Fatalf("ObtainMulti over keys of different slots: %v", err)
			}
			if err := lock.Release(ctx); err != nil {
				t.Fatalf("Release: %v", err)
			}
			return
		}

		var sent countingHook
		cc.AddHook(&sent)
		_, err := redislock.ObtainMulti(ctx, rdb, []string{a, b}, time.Minute, nil)
		var cross *redislock.CrossSlotError
		if !errors.As(err, &cross) || !errors.Is(err, redislock.ErrCrossSlot) {
			t.Fatalf("ObtainMulti(%q, %q): got %v, want a *CrossSlotError", a, b, err)
		}
		if !reflect.DeepEqual(cross.Keys, []string{a, b}) || !reflect.DeepEqual(cross.Slots, []int{redislock.HashSlot(a), redislock.HashSlot(b)}) {
			t.Errorf("CrossSlotError{Keys: %q, Slots: %v}, want the keys and their slots", cross.Keys, cross.Slots)
		}
		fence := a // a has no tag: another slot than tag's
		_, err = redislock.ObtainMulti(ctx, rdb, tag.Keys("x", "y"), time.Minute, &redislock.Options{FenceKey: fence})
		if !errors.As(err, &cross) || len(cross.Keys) != 3 || cross.Keys[2] != fence {
			t.Fatalf("fence key in another slot: got %v, want a *CrossSlotError naming it", err)
		}
		if n := sent.commands.Load(); n != 0 {
			t.Fatalf("%d commands sent for refused locks, want 0", n)
		}
		if mustExist(t, rdb, a) || mustExist(t, rdb, tag.Key("x")) {
			t.Error("a refused lock wrote a key")
		}

		lockLifeCycle(t, rdb, tag)
		if sent.commands.Load() == 0 {
			t.Error("the hook counted nothing for a lock that was taken: it does not see the scripts")
		}
	})
}

// TestCrossSlotReachesNoServer checks on the servers themselves, with an own
// Cluster (so that no other test runs scripts on it), that refused locks
// send nothing: no node's INFO commandstats counts a script call. A tagged
// multi-key lock with fencing then runs on the one master of its slot and on
// no other node.
func TestCrossSlotReachesNoServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := redistest.NewCluster(t, redistest.Redis)
	rdb := c.Client(t)
	a, b := crossSlotKeys(t)
	tag := testTag(t)

	before := scriptCalls(t, c)
	if _, err := redislock.ObtainMulti(ctx, rdb, []string{a, b}, time.Minute, nil); !errors.Is(err, redislock.ErrCrossSlot) {
		t.Fatalf("ObtainMulti over two slots: got %v, want ErrCrossSlot", err)
	}
	if _, err := redislock.Obtain(ctx, rdb, tag.Key("lock"), time.Minute, &redislock.Options{FenceKey: a}); !errors.Is(err, redislock.ErrCrossSlot) {
		t.Fatalf("fence key in another slot: got %v, want ErrCrossSlot", err)
	}
	if after := scriptCalls(t, c); !reflect.DeepEqual(after, before) {
		t.Fatalf("script calls per node went from %v to %v for refused locks, want no change", before, after)
	}

	lockLifeCycle(t, rdb, tag)
	after := scriptCalls(t, c)
	owner := c.MasterForKey(t, tag.Key("lock")).Addr()
	for addr, n := range after {
		switch ran := n - before[addr]; {
		case addr == owner && ran == 0:
			t.Errorf("master %s of the tag's slot ran no script", addr)
		case addr != owner && ran != 0:
			t.Errorf("node %s, not the tag's master %s, ran %d scripts", addr, owner, ran)
		}
	}
}

// lockLifeCycle takes a two-key lock with a fence key, all under tag,
// through client, and checks obtain, contention, TTL, Refresh, Release and
// that a second acquisition gets a higher fence token. It leaves no lock
// key, only the fence counter.
func lockLifeCycle(t *testing.T, client redislock.RedisClient, tag redislock.HashTag) {
	t.Helper()
	ctx := context.Background()
	keys := tag.Keys("a", "b")
	opt := &redislock.Options{FenceKey: tag.Key("fence")}
	first, err := redislock.ObtainMulti(ctx, client, keys, time.Minute, opt)
	if err != nil {
		t.Fatalf("ObtainMulti(%q): %v", keys, err)
	}
	if first.FenceToken() < 1 {
		t.Errorf("FenceToken() = %d, want >= 1", first.FenceToken())
	}
	if _, err := redislock.Obtain(ctx, client, keys[1], time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Obtain of a held key: got %v, want ErrNotObtained", err)
	}
	if err := first.Refresh(ctx, time.Hour, nil); err != nil {
		t.Errorf("Refresh: %v", err)
	}
	if ttl, err := first.TTL(ctx); err != nil || ttl <= time.Minute {
		t.Errorf("TTL after Refresh(1h) = %v, %v; want about 1h", ttl, err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := first.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
		t.Errorf("Refresh after Release: got %v, want ErrNotObtained", err)
	}
	second, err := redislock.ObtainMulti(ctx, client, keys, time.Minute, opt)
	if err != nil {
		t.Fatalf("ObtainMulti after Release: %v", err)
	}
	if second.FenceToken() <= first.FenceToken() {
		t.Errorf("second FenceToken() = %d, want above %d", second.FenceToken(), first.FenceToken())
	}
	if err := second.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
}

// crossSlotKeys returns two keys of t without a hash tag (so each is hashed
// whole) that lie in different slots.
func crossSlotKeys(t *testing.T) (string, string) {
	t.Helper()
	base := strings.Trim(redistest.Tag(t), "{}")
	a := base + ":a"
	for i := 0; ; i++ {
		b := base + ":b" + strconv.Itoa(i)
		if redislock.HashSlot(b) != redislock.HashSlot(a) {
			return a, b
		}
	}
}

// countingHook counts the commands, pipelines and dials of a go-redis client.
type countingHook struct{ commands atomic.Int64 }

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.commands.Add(1)
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.commands.Add(int64(len(cmds)))
		return next(ctx, cmds)
	}
}

// scriptCalls returns, for every node of c, how many script commands
// (EVAL, EVALSHA and their _RO forms, SCRIPT, FCALL) reached it, failed and
// rejected calls included, from INFO commandstats.
func scriptCalls(t *testing.T, c *redistest.Cluster) map[string]int64 {
	t.Helper()
	calls := make(map[string]int64)
	for _, n := range c.Nodes() {
		client := n.Client(t)
		var sum int64
		for _, cmd := range []string{"eval", "evalsha", "eval_ro", "evalsha_ro", "script", "fcall", "fcall_ro"} {
			for field := range strings.SplitSeq(redistest.Info(t, client, "commandstats", "cmdstat_"+cmd), ",") {
				name, v, _ := strings.Cut(field, "=")
				if name == "calls" || name == "failed_calls" || name == "rejected_calls" {
					x, _ := strconv.ParseInt(v, 10, 64)
					sum += x
				}
			}
		}
		calls[n.Addr()] = sum
	}
	return calls
}
