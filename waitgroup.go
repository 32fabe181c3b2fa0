package redislock

import (
	"context"
	"reflect"
	"slices"
	"sync"
	"time"
)

// A waitGroup gathers the goroutines of this process that wait for one
// lock key (one wake-up list) through one go-redis client, so that they
// block one pooled connection instead of one each: only the leader blocks
// on the list, and the others sleep until the lead passes to them. The
// leader is the member that has waited longest (among those with time
// enough to block), so the next wake-up, and the lock, go to it; when it
// leaves, the lead passes to the next. The leader is the goroutine of an
// Obtain call, not one of the package.
//
// Across processes (and across clients) the order is Redis's: the client
// blocked longest on the list gets the next grant.
type waitGroup struct {
	client RedisClient
	list   string
	slots  *blockSlots

	mu      sync.Mutex
	members []*waiter // oldest first
	leader  *waiter   // the member that may block on the list, or nil
}

// waiter is one waiting Obtain call.
type waiter struct {
	id      string        // its registration in the wait queue
	wake    chan struct{} // the lead was given to it (capacity 1)
	timer   *time.Timer
	since   time.Time     // when it registered (its first failed attempt)
	longest time.Duration // the longest block its client allows

	noLead bool // too little time left to block; guarded by the group's mu
}

func newWaiter() *waiter {
	return &waiter{id: newToken(), wake: make(chan struct{}, 1)}
}

// sleep waits for d on the waiter's timer, or for the lead to be given to
// it when wake is true; false when ctx ended first.
func (w *waiter) sleep(ctx context.Context, d time.Duration, wake bool) bool {
	if w.timer == nil {
		w.timer = time.NewTimer(d)
	} else {
		w.timer.Reset(d)
	}
	var woken <-chan struct{}
	if wake {
		woken = w.wake
	}
	select {
	case <-ctx.Done():
		w.timer.Stop()
		return false
	case <-woken:
		w.timer.Stop()
		return true
	case <-w.timer.C:
		return true
	}
}

// signal tells w that the lead was given to it, without blocking.
func (w *waiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// groupKey identifies a waitGroup: a client, compared as an interface
// value, and a wake-up list.
type groupKey struct {
	client RedisClient
	list   string
}

// blockSlots bounds how many connections of one client block at once.
type blockSlots struct {
	limit int
	used  int // guarded by waitGroups.mu
}

// waitGroups holds the groups with members, and the block slots of their
// clients. Clients whose type is not comparable cannot be map keys: each of
// their waiters is a group of its own.
var waitGroups struct {
	mu     sync.Mutex
	groups map[groupKey]*waitGroup
	slots  map[RedisClient]*blockSlots
}

// joinWaitGroup adds w, as the newest member, to the group of client and
// list.
func joinWaitGroup(client RedisClient, list string, w *waiter) *waitGroup {
	waitGroups.mu.Lock()
	defer waitGroups.mu.Unlock()
	if !reflect.TypeOf(client).Comparable() {
		return &waitGroup{client: client, list: list, slots: newBlockSlots(client), members: []*waiter{w}}
	}
	if waitGroups.groups == nil {
		waitGroups.groups = make(map[groupKey]*waitGroup)
		waitGroups.slots = make(map[RedisClient]*blockSlots)
	}
	k := groupKey{client, list}
	g := waitGroups.groups[k]
	if g == nil {
		s := waitGroups.slots[client]
		if s == nil {
			s = newBlockSlots(client)
			waitGroups.slots[client] = s
		}
		g = &waitGroup{client: client, list: list, slots: s}
		waitGroups.groups[k] = g
	}
	g.mu.Lock()
	g.members = append(g.members, w)
	g.mu.Unlock()
	return g
}

// newBlockSlots allows half the client's pool to block, at least one
// connection; 4 when the pool size is unknown.
func newBlockSlots(client RedisClient) *blockSlots {
	_, pool := clientLimits(client)
	if pool <= 0 {
		return &blockSlots{limit: 4}
	}
	return &blockSlots{limit: max(1, pool/2)}
}

// acquire takes a slot when one is free.
func (s *blockSlots) acquire() bool {
	waitGroups.mu.Lock()
	defer waitGroups.mu.Unlock()
	if s.used >= s.limit {
		return false
	}
	s.used++
	return true
}

func (s *blockSlots) release() {
	waitGroups.mu.Lock()
	s.used--
	waitGroups.mu.Unlock()
}

// wait returns how long w, a member, may block on the list now: a positive
// duration when w leads (as long as w has waited, between firstBlock and
// w.longest, and ending blockSlack before until), zero when its caller
// should try the lock without blocking: at until, or at once when the
// lead passes to w with too little time to block. It sleeps until then
// while another member leads. It returns ctx's error when ctx ends first.
//
// A leader must hold a block slot of the client while it blocks: wait
// takes one for it, and the caller gives it back with unblock.
func (g *waitGroup) wait(ctx context.Context, w *waiter, until time.Time) (time.Duration, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		now := time.Now()
		block := min(max(now.Sub(w.since), firstBlock), w.longest, until.Sub(now)-blockSlack)
		g.mu.Lock()
		w.noLead = block < minBlock
		if g.leader == w && w.noLead {
			g.passLead(w)
		} else if g.leader == nil && !w.noLead {
			g.leader = w
		}
		leading := g.leader == w
		g.mu.Unlock()
		if leading {
			if g.slots.acquire() {
				return block, nil
			}
			// Too many connections of this client block: try again
			// without blocking, every firstBlock.
			if !w.sleep(ctx, min(firstBlock, until.Sub(now)), false) {
				return 0, ctx.Err()
			}
			return 0, nil
		}
		wait := until.Sub(now)
		if wait <= 0 {
			return 0, nil
		}
		if !w.sleep(ctx, wait, true) {
			return 0, ctx.Err()
		}
		if !time.Now().Before(until) {
			return 0, nil
		}
	}
}

// unblock gives back the block slot that wait took for w.
func (g *waitGroup) unblock() { g.slots.release() }

// passLead makes the oldest member other than w that can block the
// leader, and tells it. Called with mu held.
func (g *waitGroup) passLead(w *waiter) {
	g.leader = nil
	for _, m := range g.members {
		if m != w && !m.noLead {
			g.leader = m
			m.signal()
			return
		}
	}
}

// leave removes w from the group, passing the lead on when w had it.
func (g *waitGroup) leave(w *waiter) {
	waitGroups.mu.Lock()
	defer waitGroups.mu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.Index(g.members, w); i >= 0 {
		g.members = slices.Delete(g.members, i, i+1)
	}
	if g.leader == w {
		g.passLead(w)
	}
	w.noLead = false
	if len(g.members) > 0 {
		return
	}
	k := groupKey{g.client, g.list}
	if waitGroups.groups[k] == g {
		delete(waitGroups.groups, k)
	}
	if s := waitGroups.slots[g.client]; s != nil && s.used == 0 {
		for k := range waitGroups.groups {
			if k.client == g.client {
				return
			}
		}
		delete(waitGroups.slots, g.client)
	}
}
