package handoff

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// scripterOnly is a comparable client with no limits known.
type scripterOnly struct{ redis.Scripter }

// model is a conn that plays a server holding one key, for the timing
// properties of a wait under testing/synctest: attempts take no time, and
// a block ends tick late when it times out, as on a server whose hz is
// 1/tick; no grant ever comes. It is not Redis: the scripts are tested on
// real servers.
type model struct {
	mu        sync.Mutex
	heldUntil time.Time // zero: held with no expiry
	free      bool      // released: the next attempt obtains
	tickLate  time.Duration
	attempts  int
	blocks    []time.Duration
	left      int
	calls     []string // "attempt", "block", or "requeue" (a block with the first attempt before it)
	lists     []int    // how many grant lists each block waits on
	kinds     []any    // each attempt's last argument (first, later)
	ids       []any    // each attempt's waiter id
}

func (m *model) reply() any {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.attempts++
	now := time.Now()
	if m.free || (!m.heldUntil.IsZero() && !now.Before(m.heldUntil)) {
		return int64(7)
	}
	code := int64(-1)
	if !m.heldUntil.IsZero() {
		code = -(m.heldUntil.Sub(now).Milliseconds() + 1)
	}
	return []any{code, int64(1), int64(0)}
}

func (m *model) attempt(_ context.Context, _ []string, args []any) (any, error) {
	m.mu.Lock()
	m.calls = append(m.calls, "attempt")
	if len(args) >= 3 {
		m.kinds = append(m.kinds, args[len(args)-1])
		m.ids = append(m.ids, args[len(args)-3])
	}
	m.mu.Unlock()
	return m.reply(), nil
}

func (m *model) block(_ context.Context, _ []string, first, lists []any, d time.Duration) (string, error) {
	m.mu.Lock()
	m.blocks = append(m.blocks, d)
	call := "block"
	if first != nil {
		call = "requeue"
		if first[len(first)-1] != requeueAttempt {
			call = fmt.Sprintf("requeue with %v", first[len(first)-1])
		}
	}
	m.calls = append(m.calls, call)
	m.lists = append(m.lists, len(lists))
	m.mu.Unlock()
	time.Sleep(d + m.tickLate)
	return "", nil
}

func (m *model) leave(context.Context, []string, []any) {
	m.mu.Lock()
	m.left++
	m.mu.Unlock()
}

func (m *model) tick(context.Context) time.Duration { return m.tickLate }

// startLeader starts a wait of reg for the model's key through client,
// which leads its group (its attempt fails, and it blocks until ctx
// ends), and returns once it blocks; the channel gets its error.
func startLeader(ctx context.Context, reg *Registry, client redis.Scripter, m *model) <-chan error {
	leader := request(time.Minute)
	leader.Client = client
	done := make(chan error, 1)
	go func() {
		_, err := reg.run(ctx, leader, m, maxBlock)
		done <- err
	}()
	synctest.Wait()
	return done
}

func request(ttl time.Duration) *Request {
	return &Request{
		Client:    &scripterOnly{},
		Keys:      []string{"{k}:lock"},
		TTL:       ttl,
		Backoff:   func() time.Duration { return time.Hour },
		Transient: func(error) bool { return true },
	}
}

// The context's deadline bounds a wait, whatever the server's tick: the
// last block ends a tick before it, and the wait ends at the deadline.
func TestWaitDeadline(t *testing.T) {
	for _, tick := range []time.Duration{time.Millisecond, 100 * time.Millisecond, time.Second} {
		for _, deadline := range []time.Duration{150 * time.Millisecond, 300 * time.Millisecond, 1500 * time.Millisecond, 5 * time.Second} {
			synctest.Test(t, func(t *testing.T) {
				m := &model{tickLate: tick}
				ctx, cancel := context.WithTimeout(context.Background(), deadline)
				defer cancel()
				start := time.Now()
				_, err := NewRegistry().run(ctx, request(time.Minute), m, maxBlock)
				var ended *EndedError
				if !errors.As(err, &ended) || !errors.Is(err, context.DeadlineExceeded) {
					t.Fatalf("tick %v, deadline %v: %v, want an EndedError with DeadlineExceeded", tick, deadline, err)
				}
				if took := time.Since(start); took != deadline {
					t.Errorf("tick %v: a wait with a deadline of %v ended after %v", tick, deadline, took)
				}
				if m.left != 1 {
					t.Errorf("tick %v, deadline %v: %d leave scripts, want 1", tick, deadline, m.left)
				}
			})
		}
	}
}

// Without a deadline, a wait ends after the TTL.
func TestWaitTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		_, err := NewRegistry().run(context.Background(), request(300*time.Millisecond), &model{tickLate: 100 * time.Millisecond}, maxBlock)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want DeadlineExceeded", err)
		}
		if took := time.Since(start); took != 300*time.Millisecond {
			t.Errorf("ended after %v, want the TTL of 300ms", took)
		}
	})
}

// A waiter takes the lock of a holder that died when its key expires: the
// attempt comes at the expiry (to the millisecond the script reports), not
// at the end of a block that may end a tick late.
func TestWaitHolderExpiry(t *testing.T) {
	for _, tick := range []time.Duration{time.Millisecond, 100 * time.Millisecond, time.Second} {
		for _, ttl := range []time.Duration{50 * time.Millisecond, 300 * time.Millisecond, 2 * time.Second} {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				m := &model{heldUntil: start.Add(ttl), tickLate: tick}
				out, err := NewRegistry().run(context.Background(), request(time.Minute), m, maxBlock)
				if err != nil || !out.Obtained || out.Value != 7 {
					t.Fatalf("tick %v, ttl %v: %+v, %v", tick, ttl, out, err)
				}
				if took := time.Since(start); took < ttl || took > ttl+time.Millisecond {
					t.Errorf("tick %v: obtained the lock of a holder with %v left after %v", tick, ttl, took)
				}
				for _, b := range m.blocks {
					if b > maxBlock || b < minBlock {
						t.Errorf("tick %v: a block of %v", tick, b)
					}
				}
				if m.left != 0 {
					t.Errorf("%d leave scripts after obtaining", m.left)
				}
			})
		}
	}
}

// MaxAttempts counts every attempt: the first, and each block that ends
// without the lock.
func TestWaitMaxAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &model{tickLate: time.Millisecond}
		req := request(time.Minute)
		req.MaxAttempts = 4
		_, err := NewRegistry().run(context.Background(), req, m, maxBlock)
		if !errors.Is(err, ErrGaveUp) || m.attempts != 4 {
			t.Errorf("%d attempts, %v; want 4, ErrGaveUp", m.attempts, err)
		}
		// Blocks grow with the wait: 250ms, then as long as waited (each ends
		// a tick, 1ms, late).
		want := []time.Duration{firstBlock, firstBlock + time.Millisecond, 2*firstBlock + 3*time.Millisecond}
		if len(m.blocks) != 3 || m.blocks[0] != want[0] || m.blocks[1] != want[1] || m.blocks[2] != want[2] {
			t.Errorf("blocks %v, want %v", m.blocks, want)
		}
	})
}

func TestGroupLead(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		r := NewRegistry()
		client := &scripterOnly{}
		far := time.Now().Add(time.Minute)
		members := make([]*member, 3)
		var g *group
		for i := range members {
			members[i] = newMember(string(rune('a' + i)))
			members[i].longest = maxBlock
			members[i].since = time.Now()
			if j := r.join(client, "line", members[i]); g == nil {
				g = j
			} else if j != g {
				t.Fatal("two groups for one client and list")
			}
		}
		// The first member to wait leads and may block: as long as it has
		// waited, at least firstBlock.
		if block, err := g.wait(ctx, members[0], far, 100*time.Millisecond); err != nil || block != firstBlock {
			t.Fatalf("first member: block %v, %v; want %v", block, err, firstBlock)
		}
		g.unblock()
		// The others sleep until the lead passes to them, oldest first.
		blocks := make(chan int, 2)
		for i := 1; i < 3; i++ {
			go func() {
				if block, err := g.wait(ctx, members[i], far, 100*time.Millisecond); err == nil && block > 0 {
					g.unblock()
					blocks <- i
				}
			}()
		}
		synctest.Wait()
		if len(blocks) != 0 {
			t.Fatalf("member %d leads while the first one does", <-blocks)
		}
		time.Sleep(time.Second) // in the bubble: the members have waited a second
		r.leave(g, members[0])
		if i := <-blocks; i != 1 {
			t.Fatalf("lead passed to member %d, want the oldest, 1", i)
		}
		r.leave(g, members[1])
		if i := <-blocks; i != 2 {
			t.Fatalf("lead passed to member %d, want 2", i)
		}
		// A member too close to its deadline (a server tick of 1s, hz 1)
		// does not lead: it is told to attempt when the time comes.
		near := time.Now().Add(time.Second + minBlock/2)
		if block, err := g.wait(ctx, members[2], near, time.Second); err != nil || block != 0 || time.Now().Before(near) {
			t.Fatalf("member near its deadline: block %v, %v at %v before it", block, err, time.Until(near))
		}
		r.leave(g, members[2])
		if waits, groups, clients := r.Waits(); waits+groups+clients != 0 {
			t.Errorf("%d waits, %d groups, %d clients left after every member left", waits, groups, clients)
		}
	})
}

func TestGroupBlockSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		r := NewRegistry()
		client := &scripterOnly{}
		far := time.Now().Add(time.Minute)
		// Five groups of one client, whose pool size is unknown: four may
		// block at once; the fifth leader polls at firstBlock.
		var ms []*member
		var gs []*group
		for i := range 5 {
			m := newMember("m")
			m.longest, m.since = maxBlock, time.Now()
			ms = append(ms, m)
			gs = append(gs, r.join(client, "line"+string(rune('a'+i)), m))
		}
		for i := range 4 {
			if block, _ := gs[i].wait(ctx, ms[i], far, 100*time.Millisecond); block <= 0 {
				t.Fatalf("group %d may not block", i)
			}
		}
		start := time.Now()
		if block, _ := gs[4].wait(ctx, ms[4], far, 100*time.Millisecond); block != 0 || time.Since(start) != firstBlock {
			t.Errorf("fifth group: block %v after %v, want 0 after %v", block, time.Since(start), firstBlock)
		}
		gs[0].unblock()
		if block, _ := gs[4].wait(ctx, ms[4], far, 100*time.Millisecond); block <= 0 {
			t.Errorf("fifth group may not block once a slot is free")
		}
		for i := range 5 {
			if i > 0 {
				gs[i].unblock()
			}
			r.leave(gs[i], ms[i])
		}
		if waits, groups, clients := r.Waits(); waits+groups+clients != 0 {
			t.Errorf("%d waits, %d groups, %d clients left", waits, groups, clients)
		}
	})
}

// A requeue (Request.Requeue) sends no attempt alone before its first
// block: alone in its group, or in a group whose other member does not
// lead, it starts with a block whose pipeline carries the first attempt;
// in a group whose other member leads, it sends nothing until the lead
// passes to it, then the same. Each block is followed by an attempt. The
// first attempt is not an attempt of MaxAttempts.
func TestWaitRequeue(t *testing.T) {
	for _, c := range []string{"alone", "joins a group that does not block", "joins a group that blocks"} {
		synctest.Test(t, func(t *testing.T) {
			reg := NewRegistry()
			m := &model{tickLate: time.Millisecond}
			req := request(time.Minute)
			req.Requeue, req.MaxAttempts = true, 2
			var leaderDone <-chan error
			leaderCtx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch c {
			case "joins a group that does not block":
				co, _ := Companions(req.Keys)
				other := newMember("other")
				g := reg.join(req.Client, co[1], other)
				defer reg.leave(g, other)
			case "joins a group that blocks":
				// A wait of the process leads: its attempt fails, and it
				// blocks until its context ends.
				leaderDone = startLeader(leaderCtx, reg, req.Client, m)
				if !slices.Equal(m.calls, []string{"attempt", "block"}) {
					t.Fatalf("the leader's calls: %q", m.calls)
				}
			}
			done := make(chan error, 1)
			go func() {
				_, err := reg.run(context.Background(), req, m, maxBlock)
				done <- err
			}()
			want := []string{"requeue", "attempt", "block", "attempt"}
			if c == "joins a group that blocks" {
				synctest.Wait()
				if len(m.calls) != 2 {
					t.Errorf("the requeue sent %q while the group's leader blocked, want nothing", m.calls[2:])
				}
				// The leader gives up; its block ends, and the lead passes.
				cancel()
				if err := <-leaderDone; !errors.Is(err, context.Canceled) {
					t.Errorf("the leader: %v", err)
				}
				want = []string{"attempt", "block", "requeue", "attempt", "block", "attempt"}
			}
			if err := <-done; !errors.Is(err, ErrGaveUp) {
				t.Fatalf("%s: %v, want ErrGaveUp", c, err)
			}
			if !slices.Equal(m.calls, want) {
				t.Errorf("%s: calls %q, want %q", c, m.calls, want)
			}
			// A block lasts as long as the wait has waited, at least
			// firstBlock: the requeue that joined waited for the leader's
			// block, which ended a tick late.
			wantBlock := firstBlock
			if c == "joins a group that blocks" {
				wantBlock = firstBlock + m.tickLate
			}
			if b := m.blocks[len(m.blocks)-2]; b != wantBlock {
				t.Errorf("%s: blocks %v, want the requeue's of %v", c, m.blocks, wantBlock)
			}
		})
	}
}

// A wait that the caller's release registered (Request.Registered) sends
// no attempt of its own before it blocks: alone in its group, it blocks at
// once under its ID, then attempts as a later attempt, and its Outcome
// says it led alone; in a group whose other member leads, it sends
// nothing until the lead passes to it, then blocks. Given up, it leaves
// (its registration is taken back).
func TestWaitRegistered(t *testing.T) {
	for _, c := range []string{"alone", "joins a group that blocks"} {
		synctest.Test(t, func(t *testing.T) {
			reg := NewRegistry()
			m := &model{tickLate: time.Millisecond}
			req := request(time.Minute)
			req.ID, req.Registered, req.MaxAttempts = "registered", time.Now(), 2
			leaderCtx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var leaderDone <-chan error
			if c == "joins a group that blocks" {
				leaderDone = startLeader(leaderCtx, reg, req.Client, m)
			}
			type result struct {
				out Outcome
				err error
			}
			done := make(chan result, 1)
			go func() {
				out, err := reg.run(context.Background(), req, m, maxBlock)
				done <- result{out, err}
			}()
			synctest.Wait()
			want := []string{"block", "attempt"}
			if c == "joins a group that blocks" {
				if !slices.Equal(m.calls, []string{"attempt", "block"}) {
					t.Fatalf("calls %q while the leader blocks, want only the leader's", m.calls)
				}
				cancel()
				if err := <-leaderDone; !errors.Is(err, context.Canceled) {
					t.Errorf("the leader: %v", err)
				}
				want = []string{"attempt", "block", "block", "attempt"}
			}
			// The key comes free during the registered wait's first block.
			m.mu.Lock()
			m.free = true
			m.mu.Unlock()
			got := <-done
			if got.err != nil || !got.out.Obtained {
				t.Fatalf("%s: %+v, %v; want the keys", c, got.out, got.err)
			}
			if !slices.Equal(m.calls, want) {
				t.Errorf("%s: calls %q, want %q", c, m.calls, want)
			}
			if m.ids[len(m.ids)-1] != "registered" || m.kinds[len(m.kinds)-1] != laterAttempt {
				t.Errorf("%s: the attempt after the block had id %v and kind %v, want the registered id and a later attempt", c, m.ids, m.kinds)
			}
			if alone := c == "alone"; got.out.Alone != alone {
				t.Errorf("%s: Outcome.Alone %v, want %v", c, got.out.Alone, alone)
			}
			// The leader that gave up left; the registered wait obtained.
			wantLeft := 0
			if c == "joins a group that blocks" {
				wantLeft = 1
			}
			if m.left != wantLeft {
				t.Errorf("%s: %d leaves, want %d", c, m.left, wantLeft)
			}
		})
	}
	// Given up: its registration is taken back.
	synctest.Test(t, func(t *testing.T) {
		m := &model{tickLate: time.Millisecond}
		req := request(time.Minute)
		req.ID, req.Registered, req.MaxAttempts = "registered", time.Now(), 1
		_, err := NewRegistry().run(context.Background(), req, m, maxBlock)
		if !errors.Is(err, ErrGaveUp) || m.left != 1 || !slices.Equal(m.calls, []string{"block", "attempt"}) {
			t.Errorf("gave up with %v after %q, %d leaves; want ErrGaveUp after one block, one leave", err, m.calls, m.left)
		}
	})
}
