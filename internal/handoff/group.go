package handoff

import (
	"context"
	"slices"
	"sync"
	"time"
)

// A group gathers the waits of one [Registry] for one line (a key's wait
// line) through one client, so that they block one pooled connection
// instead of one each: only the leader blocks, on the grant lists of
// every member at once; the others sleep until the lead passes to them, a
// grant for them comes, or it is time to attempt. With no leader, the
// first member ready to block takes the lead; when the leader leaves, the
// lead passes to the member that has waited longest among those with time
// enough to block. The leader is the goroutine of a wait, never one of the
// package.
//
// The order in which keys are handed over is the line's, on the server
// (lua/handover.lua): a group only shares the connection that waits for
// the grants.
type group struct {
	reg   *Registry
	key   groupKey // zero for a client that cannot be a map key
	line  string
	state *clientState

	mu      sync.Mutex
	members []*member  // oldest first
	leader  *member    // the member that may block, or nil
	few     [2]*member // members' first backing array
}

// member is one wait in a group.
type member struct {
	id        string        // its registration in the line
	grants    string        // its grant list in the group's line (GrantList)
	grantsArg any           // grants boxed once, for every leader's BLPOP
	wake      chan struct{} // the lead, or a grant, was given to it (capacity 1)
	timer     *time.Timer
	since     time.Time     // when it registered (its first failed attempt)
	longest   time.Duration // the longest block its client allows

	noLead bool // too little time left to block; guarded by the group's mu
	now    bool // attempt at once (a grant came, see Request.Shared); guarded by the group's mu
}

func newMember(id string) *member {
	m := &member{}
	m.init(id)
	return m
}

// init makes m a new member named id.
func (m *member) init(id string) {
	m.id, m.wake = id, make(chan struct{}, 1)
}

// sleep waits for d on the member's timer, or for the lead to be given to
// it when wake is true; false when ctx ended first.
func (m *member) sleep(ctx context.Context, d time.Duration, wake bool) bool {
	if m.timer == nil {
		m.timer = time.NewTimer(d)
	} else {
		m.timer.Reset(d)
	}
	var woken <-chan struct{}
	if wake {
		woken = m.wake
	}
	select {
	case <-ctx.Done():
		m.timer.Stop()
		return false
	case <-woken:
		m.timer.Stop()
		return true
	case <-m.timer.C:
		return true
	}
}

// stop releases the member's timer.
func (m *member) stop() {
	if m.timer != nil {
		m.timer.Stop()
	}
}

// signal tells m that the lead was given to it, without blocking.
func (m *member) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// wait returns how long m, a member, may block now: a positive
// duration when m leads (as long as m has waited, between firstBlock and
// m.longest, and ending slack before until), zero when its caller should
// try without blocking: at until, or at once when the lead passes to m
// with too little time to block. While another member leads it sleeps
// until then, or until it is told it leads. It returns ctx's error when
// ctx ends first.
//
// A leader must hold one of the client's blocking connections while it
// blocks: wait takes one for it, and the caller gives it back with
// unblock.
func (g *group) wait(ctx context.Context, m *member, until time.Time, slack time.Duration) (time.Duration, error) {
	for {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		now := time.Now()
		block := min(max(now.Sub(m.since), firstBlock), m.longest, until.Sub(now)-slack)
		g.mu.Lock()
		if m.now {
			m.now = false
			g.mu.Unlock()
			return 0, nil
		}
		m.noLead = block < minBlock
		if g.leader == m && m.noLead {
			g.passLead(m)
		} else if g.leader == nil && !m.noLead {
			g.leader = m
		}
		leading := g.leader == m
		g.mu.Unlock()
		if leading {
			if g.reg.acquire(g.state) {
				return block, nil
			}
			// Too many connections of this client block: try again
			// without blocking, every firstBlock.
			if !m.sleep(ctx, min(firstBlock, until.Sub(now)), false) {
				return 0, ctx.Err()
			}
			return 0, nil
		}
		wait := until.Sub(now)
		if wait <= 0 {
			return 0, nil
		}
		if !m.sleep(ctx, wait, true) {
			return 0, ctx.Err()
		}
		if !time.Now().Before(until) {
			return 0, nil
		}
	}
}

// leadAlone makes m, the group's only member, its leader with one of the
// client's blocking connections (given back with unblock); false, and
// nothing changed, when the group has other members or the client has no
// blocking connection free.
func (g *group) leadAlone(m *member) bool {
	g.mu.Lock()
	alone := g.leader == nil && len(g.members) == 1 && g.members[0] == m
	if alone {
		g.leader = m
	}
	g.mu.Unlock()
	if !alone {
		return false
	}
	if g.reg.acquire(g.state) {
		return true
	}
	g.mu.Lock()
	g.passLead(m)
	g.mu.Unlock()
	return false
}

// wakeAll tells every member but m to attempt at once, without blocking
// (see [Request.Shared]).
func (g *group) wakeAll(m *member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range g.members {
		if o != m {
			o.now = true
			o.signal()
		}
	}
}

// unblock gives back the blocking connection that wait took.
func (g *group) unblock() { g.reg.release(g.state) }

// others reports whether m's group has members other than m.
func (g *group) others(m *member) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.members) > 1 || (len(g.members) == 1 && g.members[0] != m)
}

// lists returns the grant lists that m, the leader, blocks on: its own,
// then the other members', oldest first.
func (g *group) lists(m *member) []any {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]any, 1, len(g.members))
	out[0] = m.grantsArg
	for _, o := range g.members {
		if o != m {
			out = append(out, o.grantsArg)
		}
	}
	return out
}

// wake tells the member whose grant list is list that a grant came for
// it: it attempts at once.
func (g *group) wake(list string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range g.members {
		if o.grants == list {
			o.now = true
			o.signal()
			return
		}
	}
}

// passLead makes the oldest member other than m that can block the
// leader, and tells it. Called with mu held.
func (g *group) passLead(m *member) {
	g.leader = nil
	for _, o := range g.members {
		if o != m && !o.noLead {
			g.leader = o
			o.signal()
			return
		}
	}
}

// remove takes m out of the group, passing the lead on when m had it.
func (g *group) remove(m *member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if i := slices.Index(g.members, m); i >= 0 {
		g.members = slices.Delete(g.members, i, i+1)
	}
	if g.leader == m {
		g.passLead(m)
	}
	m.noLead = false
}
