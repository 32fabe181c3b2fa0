package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// electionName returns a name for the test's election without a hash tag
// (the election's other keys then get "{name}" as theirs); the other tests
// use redistest.Key, which has one.
func electionName(t *testing.T) string {
	return strings.Trim(redistest.Tag(t), "{}") + ":election"
}

// electionWaitQueues returns the names the wait queue of WaitForRelease
// can have for an election key (see WaitForRelease's cost): "<key>:…" for a
// key with a hash tag, "{<key>}:…" for one without, which the handoff
// engine suffixes with ":untagged".
func electionWaitQueues(name string) []string {
	if strings.HasPrefix(name, "{") {
		return []string{name + ":redislock:waiters"}
	}
	q := "{" + name + "}:redislock:waiters"
	return []string{q, q + ":untagged"}
}

func TestElectionCampaignResign(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := electionName(t)
		e := redislock.New(rdb).Election(name)

		if _, err := e.Leader(ctx); !errors.Is(err, redislock.ErrNoLeader) {
			t.Fatalf("Leader before any campaign: got %v, want ErrNoLeader", err)
		}
		a, err := e.Campaign(ctx, "a", 10*time.Second)
		if err != nil {
			t.Fatalf("Campaign a: %v", err)
		}
		info, err := e.Leader(ctx)
		if err != nil || info.Value != "a" || info.Term != a.Term() || info.TTL <= 0 {
			t.Fatalf("Leader: got %+v, %v; want value a, term %d, a TTL", info, err, a.Term())
		}

		// b waits in line; a's Resign hands over to it.
		type result struct {
			lead *redislock.Leadership
			err  error
		}
		bc := make(chan result, 1)
		go func() {
			l, err := e.Campaign(ctx, "b", 10*time.Second)
			bc <- result{l, err}
		}()
		waitForWaiter(t, rdb, e)
		if err := a.Resign(ctx); err != nil {
			t.Fatalf("Resign a: %v", err)
		}
		select {
		case <-a.Done():
		default:
			t.Fatal("a.Done() is not closed after Resign")
		}
		if !errors.Is(a.Err(), redislock.ErrKeepAliveStopped) {
			t.Fatalf("a.Err() after Resign: got %v, want ErrKeepAliveStopped", a.Err())
		}
		if err := a.Resign(ctx); err != nil {
			t.Fatalf("second Resign: got %v, want nil (idempotent)", err)
		}
		r := <-bc
		if r.err != nil {
			t.Fatalf("Campaign b: %v", r.err)
		}
		b := r.lead
		if b.Term() <= a.Term() {
			t.Fatalf("terms: a %d, b %d; want b's greater", a.Term(), b.Term())
		}
		if err := a.Proclaim(ctx, "a again"); !errors.Is(err, redislock.ErrNotLeader) {
			t.Fatalf("Proclaim after Resign: got %v, want ErrNotLeader", err)
		}
		if err := b.Proclaim(ctx, "b v2"); err != nil {
			t.Fatalf("Proclaim b: %v", err)
		}
		if info, err := e.Leader(ctx); err != nil || info.Value != "b v2" || info.Term != b.Term() {
			t.Fatalf("Leader after Proclaim: got %+v, %v; want b v2 at term %d", info, err, b.Term())
		}
		if got := b.Value(); got != "b v2" {
			t.Fatalf("b.Value(): got %q, want %q", got, "b v2")
		}

		// A campaign that gives up leaves nothing: b's Resign then deletes
		// the key at once instead of reserving it for a waiter.
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		_, err = e.Campaign(cctx, "c", 10*time.Second)
		cancel()
		if !errors.Is(err, redislock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Campaign with a short deadline: got %v, want ErrNotObtained and DeadlineExceeded", err)
		}
		if err := b.Resign(ctx); err != nil {
			t.Fatalf("Resign b: %v", err)
		}
		if mustExist(t, rdb, name) {
			t.Fatalf("key %s exists after the last leader resigned (got %q): the failed campaign left a registration", name, mustGet(t, rdb, name))
		}
		if _, err := e.Leader(ctx); !errors.Is(err, redislock.ErrNoLeader) {
			t.Fatalf("Leader after Resign: got %v, want ErrNoLeader", err)
		}
		c, err := e.Campaign(ctx, "c", 10*time.Second)
		if err != nil {
			t.Fatalf("Campaign c: %v", err)
		}
		if c.Term() <= b.Term() {
			t.Fatalf("terms: b %d, c %d; want c's greater", b.Term(), c.Term())
		}
		_ = c.Resign(ctx)
	})
}

// waitForWaiter returns once a campaigner waits in line for e: its key
// then has a wait queue. It polls Redis, which is the only place that
// knows.
func waitForWaiter(t *testing.T, rdb redis.UniversalClient, e *redislock.Election) {
	t.Helper()
	qs := electionWaitQueues(e.Name())
	redistest.WaitFor(t, fmt.Sprint("a campaigner in ", qs), 10*time.Second, func() bool {
		for _, q := range qs {
			if n, err := rdb.ZCard(context.Background(), q).Result(); err == nil && n > 0 {
				return true
			}
		}
		return false
	})
}

func TestElectionProclaimLost(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := electionName(t)
		e := redislock.New(rdb).Election(name)
		a, err := e.Campaign(ctx, "a", 10*time.Second)
		if err != nil {
			t.Fatalf("Campaign: %v", err)
		}
		lctx, cancel := a.Context(ctx)
		defer cancel()
		// Someone else takes the key (an operator, a split brain).
		if err := rdb.Set(ctx, name, "5:other:1:0:x", 10*time.Second).Err(); err != nil {
			t.Fatal(err)
		}
		err = a.Proclaim(ctx, "a2")
		if !errors.Is(err, redislock.ErrNotLeader) || !errors.Is(err, redislock.ErrLockLost) {
			t.Fatalf("Proclaim of a lost leadership: got %v, want ErrNotLeader and ErrLockLost", err)
		}
		<-a.Done()
		<-lctx.Done()
		if cause := context.Cause(lctx); !errors.Is(cause, redislock.ErrLockLost) {
			t.Fatalf("context cause: got %v, want ErrLockLost", cause)
		}
		if got := mustGet(t, rdb, name); got != "5:other:1:0:x" {
			t.Fatalf("the other holder's key: got %q", got)
		}
		if err := a.Resign(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
			t.Fatalf("Resign of a lost leadership: got %v, want ErrLockNotHeld", err)
		}
		if got := mustGet(t, rdb, name); got != "5:other:1:0:x" {
			t.Fatalf("Resign touched the other holder's key: got %q", got)
		}
		_ = rdb.Del(ctx, name)
	})
}

func TestElectionBadInput(t *testing.T) {
	rdb := redistest.Standalone(t)
	ctx := context.Background()
	c := redislock.New(rdb)
	for _, name := range []string{"", "a}b"} {
		e := c.Election(name)
		if _, err := e.Campaign(ctx, "v", time.Second); !errors.Is(err, redislock.ErrInvalidKey) {
			t.Errorf("Campaign on %q: got %v, want ErrInvalidKey", name, err)
		}
		if _, err := e.Leader(ctx); !errors.Is(err, redislock.ErrInvalidKey) {
			t.Errorf("Leader on %q: got %v, want ErrInvalidKey", name, err)
		}
		if _, ok := <-e.Observe(ctx); ok {
			t.Errorf("Observe on %q: got an event, want a closed channel", name)
		}
	}
	e := c.Election(redistest.Key(t, "e"))
	if _, err := e.Campaign(ctx, "v", 0); !errors.Is(err, redislock.ErrInvalidTTL) {
		t.Errorf("Campaign with ttl 0: got %v, want ErrInvalidTTL", err)
	}
	//lint:ignore SA1012 a nil context is the bad input under test
	if _, err := e.Campaign(nil, "v", time.Second); !errors.Is(err, redislock.ErrNilContext) { //nolint:staticcheck // the bad input under test
		t.Errorf("Campaign with a nil context: got %v, want ErrNilContext", err)
	}
	var nilLead *redislock.Leadership
	if err := nilLead.Proclaim(ctx, "x"); !errors.Is(err, redislock.ErrNotLeader) {
		t.Errorf("Proclaim on nil: got %v, want ErrNotLeader", err)
	}
	if err := nilLead.Resign(ctx); err != nil {
		t.Errorf("Resign on nil: got %v, want nil", err)
	}
	<-nilLead.Done()
	if nilLead.Term() != 0 || nilLead.Value() != "" {
		t.Errorf("nil Leadership accessors: term %d value %q", nilLead.Term(), nilLead.Value())
	}
}

// nextEvent returns the next event of an observer, failing the test if the
// channel closes or nothing comes within 10 s (far beyond the 1 s bound).
func nextEvent(t *testing.T, ch <-chan redislock.LeaderEvent) redislock.LeaderEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the observer's channel closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10s")
	}
	panic("unreachable")
}

func wantEvent(t *testing.T, ch <-chan redislock.LeaderEvent, want redislock.LeaderEvent) {
	t.Helper()
	if got := nextEvent(t, ch); got != want {
		t.Fatalf("event: got %+v, want %+v", got, want)
	}
}

func TestElectionObserve(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		e := redislock.New(rdb).Election(electionName(t))
		octx, stop := context.WithCancel(ctx)
		events := e.Observe(octx)
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.NoLeader})

		a, err := e.Campaign(ctx, "a", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.LeaderElected, Term: a.Term(), Value: "a"})
		if err := a.Proclaim(ctx, "a2"); err != nil {
			t.Fatal(err)
		}
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.LeaderProclaimed, Term: a.Term(), Value: "a2"})

		bc := make(chan *redislock.Leadership, 1)
		go func() {
			l, err := e.Campaign(ctx, "b", 10*time.Second)
			if err != nil {
				t.Error(err)
			}
			bc <- l
		}()
		waitForWaiter(t, rdb, e)
		if err := a.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.NoLeader, Term: a.Term()})
		b := <-bc
		if b == nil {
			t.FailNow()
		}
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.LeaderElected, Term: b.Term(), Value: "b"})

		// A leader that crashes: its client stops reaching Redis, so its
		// key expires, which Redis does not notify; the observer reads it
		// at the key's expiry.
		if err := b.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.NoLeader, Term: b.Term()})
		dead := newFaultyClient(rdb)
		c, err := redislock.New(dead).Election(e.Name()).Campaign(ctx, "c", 300*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.LeaderElected, Term: c.Term(), Value: "c"})
		dead.failNext(1<<30, errTransient)
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.NoLeader, Term: c.Term()})
		<-c.Done()
		if !errors.Is(c.Err(), redislock.ErrLockLost) {
			t.Fatalf("crashed leader's Err: got %v, want ErrLockLost", c.Err())
		}

		stop()
		for range events {
			// drained: the channel closes once ctx ends
		}
	})
}

// lostNotices is a client whose subscriptions listen on a channel nobody
// publishes to: every notification of the election is lost, and an
// observer only has its re-reads.
type lostNotices struct {
	redis.UniversalClient
}

func (c lostNotices) Subscribe(ctx context.Context, _ ...string) *redis.PubSub {
	return c.UniversalClient.Subscribe(ctx, "{nowhere}:lost")
}

func (c lostNotices) SSubscribe(ctx context.Context, _ ...string) *redis.PubSub {
	return c.UniversalClient.SSubscribe(ctx, "{nowhere}:lost")
}

func TestElectionObserveLostNotifications(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		name := redistest.Key(t, "election")
		e := redislock.New(rdb).Election(name)
		// Wrapped, a cluster client is not seen as one by New: the deaf
		// observer subscribes with Subscribe, to the wrong channel.
		deaf := redislock.New(lostNotices{rdb}).Election(name)
		events := deaf.Observe(ctx)
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.NoLeader})
		a, err := e.Campaign(ctx, "a", 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.LeaderElected, Term: a.Term(), Value: "a"})
		if err := a.Proclaim(ctx, "a2"); err != nil {
			t.Fatal(err)
		}
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.LeaderProclaimed, Term: a.Term(), Value: "a2"})
		if err := a.Resign(ctx); err != nil {
			t.Fatal(err)
		}
		wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.NoLeader, Term: a.Term()})
	})
}

func TestElectionObserveDroppedConnection(t *testing.T) {
	for _, topo := range redistest.Topologies() {
		t.Run(topo.Name, func(t *testing.T) {
			t.Parallel()
			opts := topo.Options(t)
			opts.ClientName = strings.Trim(redistest.Tag(t), "{}")
			rdb := redis.NewUniversalClient(opts)
			defer func() { _ = rdb.Close() }()
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			e := redislock.New(rdb).Election(redistest.Key(t, "election"))
			events := e.Observe(ctx)
			wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.NoLeader})
			a, err := e.Campaign(ctx, "a", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.LeaderElected, Term: a.Term(), Value: "a"})
			for i := range 3 {
				if n := killSubscribers(t, rdb, opts.ClientName); n == 0 && i == 0 {
					t.Fatal("no subscribed connection of the observer found")
				}
				v := fmt.Sprintf("a%d", i)
				if err := a.Proclaim(ctx, v); err != nil {
					t.Fatal(err)
				}
				wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.LeaderProclaimed, Term: a.Term(), Value: v})
			}
			_ = a.Resign(ctx)
			wantEvent(t, events, redislock.LeaderEvent{Kind: redislock.NoLeader, Term: a.Term()})
		})
	}
}

// killSubscribers closes, on every master of rdb, the connections named name
// that are subscribed to a channel (CLIENT LIST shows sub= or ssub= above
// 0), as a network failure would, and returns how many it closed.
func killSubscribers(t *testing.T, rdb redis.UniversalClient, name string) int {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	killed := 0
	kill := func(ctx context.Context, c *redis.Client) error {
		list, err := c.ClientList(ctx).Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(list, "\n") {
			f := strings.Fields(line)
			if len(f) == 0 || !slices.Contains(f, "name="+name) {
				continue
			}
			if slices.Contains(f, "sub=0") && (slices.Contains(f, "ssub=0") || !strings.Contains(line, " ssub=")) {
				continue
			}
			if err := c.Do(ctx, "CLIENT", "KILL", "ID", strings.TrimPrefix(f[0], "id=")).Err(); err != nil {
				return err
			}
			mu.Lock()
			killed++
			mu.Unlock()
		}
		return nil
	}
	var err error
	switch c := rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, kill)
	case *redis.Client:
		err = kill(ctx, c)
	}
	if err != nil {
		t.Fatalf("killing the subscriptions: %v", err)
	}
	return killed
}

// A Resign whose request fails still ends the leadership locally (no
// Proclaim, Done closed), and a later Resign releases the key, so the next
// campaigner does not wait for the TTL.
func TestElectionResignFails(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.Key(t, "election")
		faulty := newFaultyClient(rdb)
		a, err := redislock.New(faulty).Election(name).Campaign(ctx, "a", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		faulty.failNext(1, errTransient)
		if err := a.Resign(ctx); !errors.Is(err, errTransient) {
			t.Fatalf("Resign through a failing client: got %v, want the client's error", err)
		}
		<-a.Done()
		if err := a.Proclaim(ctx, "still?"); !errors.Is(err, redislock.ErrNotLeader) {
			t.Fatalf("Proclaim after a failed Resign: got %v, want ErrNotLeader", err)
		}
		if !mustExist(t, rdb, name) {
			t.Fatal("the key is gone although the release failed")
		}
		if err := a.Resign(ctx); err != nil {
			t.Fatalf("second Resign: %v", err)
		}
		if mustExist(t, rdb, name) {
			t.Fatal("the key is still there after the second Resign")
		}
		if err := a.Resign(ctx); err != nil {
			t.Fatalf("third Resign: got %v, want nil", err)
		}
	})
}

// Run resigns when fn returns, and passes fn's error on.
func TestElectionRun(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.Key(t, "election")
		e := redislock.New(rdb).Election(name)
		boom := errors.New("boom")
		var term int64
		err := e.Run(ctx, "r", 10*time.Second, func(ctx context.Context, lead *redislock.Leadership) error {
			term = lead.Term()
			if info, err := e.Leader(ctx); err != nil || info.Term != term {
				t.Errorf("Leader inside Run: %+v, %v; want term %d", info, err, term)
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Run: got %v, want fn's error", err)
		}
		if _, err := e.Leader(ctx); !errors.Is(err, redislock.ErrNoLeader) {
			t.Fatalf("Leader after Run: got %v, want ErrNoLeader", err)
		}
		// A leadership lost while fn runs cancels fn's context.
		err = e.Run(ctx, "r", 10*time.Second, func(ctx context.Context, lead *redislock.Leadership) error {
			if err := rdb.Del(context.Background(), name).Err(); err != nil {
				t.Error(err)
			}
			if err := lead.Proclaim(context.Background(), "x"); !errors.Is(err, redislock.ErrLockLost) {
				t.Errorf("Proclaim after the key was deleted: got %v, want ErrLockLost", err)
			}
			<-ctx.Done()
			return context.Cause(ctx)
		})
		if !errors.Is(err, redislock.ErrLockLost) {
			t.Fatalf("Run with a lost leadership: got %v, want ErrLockLost", err)
		}
	})
}

// lostObtainReply runs the first script that Redis executes (the obtain of
// a Campaign), then ends the caller's context and loses the reply: the
// ambiguous failure after which the key may be held.
type lostObtainReply struct {
	redis.Scripter
	cancel context.CancelFunc
	mu     sync.Mutex
	done   bool
}

func (c *lostObtainReply) lose(ctx context.Context, cmd *redis.Cmd) *redis.Cmd {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done || (cmd.Err() != nil && strings.HasPrefix(cmd.Err().Error(), "NOSCRIPT")) {
		return cmd
	}
	c.done = true
	c.cancel()
	lost := redis.NewCmd(ctx)
	lost.SetErr(errTransient)
	return lost
}

func (c *lostObtainReply) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	return c.lose(ctx, c.Scripter.EvalSha(ctx, sha, keys, args...))
}

func (c *lostObtainReply) Eval(ctx context.Context, script string, keys []string, args ...any) *redis.Cmd {
	return c.lose(ctx, c.Scripter.Eval(ctx, script, keys, args...))
}

// A Campaign that fails after its obtain took the key (the reply was lost
// and the context ended) deletes the key: it leaves nothing behind.
func TestElectionCampaignLostReply(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		name := redistest.Key(t, "election")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c := &lostObtainReply{Scripter: rdb, cancel: cancel}
		_, err := redislock.New(c).Election(name).Campaign(ctx, "a", time.Minute)
		if !errors.Is(err, redislock.ErrNotObtained) || !errors.Is(err, context.Canceled) {
			t.Fatalf("Campaign: got %v, want ErrNotObtained and context.Canceled", err)
		}
		if !c.done {
			t.Fatal("no reply was lost")
		}
		if mustExist(t, rdb, name) {
			t.Fatalf("the failed Campaign left its key: %q", mustGet(t, rdb, name))
		}
	})
}

// Terms increase across leaders even when the term counter is lost (a
// restart without persistence, a failover before replication).
func TestElectionTermAfterCounterLoss(t *testing.T) {
	forEachTopology(t, func(t *testing.T, rdb redis.UniversalClient) {
		ctx := context.Background()
		name := redistest.Key(t, "election")
		e := redislock.New(rdb).Election(name)
		var last int64
		for i := range 3 {
			lead, err := e.Campaign(ctx, "v", 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if lead.Term() <= last {
				t.Fatalf("leadership %d: term %d after %d", i, lead.Term(), last)
			}
			last = lead.Term()
			if err := lead.Resign(ctx); err != nil {
				t.Fatal(err)
			}
			if n, err := rdb.Del(ctx, name+":redislock:term").Result(); err != nil || n != 1 {
				t.Fatalf("DEL of the term counter: %d, %v; want 1 key deleted", n, err)
			}
		}
	})
}
