package handoff

import (
	"context"
	"slices"
	"sync"
	"time"
)

// A group gathers the waits of one [Registry] for one wake-up list through
// one client, so that they block one pooled connection instead of one
// each: only the leader blocks on the list, the others sleep until the lead
// passes to them. With no leader, the first member ready to block takes
// the lead (of two waits that began within a round trip of each other,
// either may: whichever sent its first attempt's reply back to its
// goroutine first); when the leader leaves, the lead passes to the member
// that has waited longest among those with time enough to block. So the
// next wake-up, and the lock, go to the waits in the order they became
// ready to block. The leader is the goroutine of a wait, never one of the
// package.
//
// Across processes (and across clients) the order is Redis's: the client
// blocked longest on the list gets the next grant.
type group struct {
	reg     *Registry
	key     groupKey // zero for a client that cannot be a map key
	list    string
	listArg any // list, boxed once for the blocking calls
	state   *clientState

	mu      sync.Mutex
	members []*member  // oldest first
	leader  *member    // the member that may block on the list, or nil
	few     [2]*member // members' first backing array
}

// member is one wait in a group.
type member struct {
	id      string        // its registration in the wait queue
	wake    chan struct{} // the lead was given to it (capacity 1)
	timer   *time.Timer
	since   time.Time     // when it registered (its first failed attempt)
	longest time.Duration // the longest block its client allows

	renewed time.Time // a time before its last registration or renewal; guarded by the group's mu

	grants string // its grant list (see GrantList)

	noLead  bool   // too little time left to block; guarded by the group's mu
	quiet   bool   // joined without attempting (see joinQuiet); guarded by the group's mu
	adopted bool   // registered by the script of the leader before it (see adopt); guarded by the group's mu
	plus    string // "+" and its id, once named for adoption; guarded by the group's mu
	now     bool   // attempt at once (see Request.Shared); guarded by the group's mu
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

// wait returns how long m, a member, may block on the list now: a positive
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

// joinQuiet reports whether m's group has other members, and if so marks
// m as a member that waits for the lead without a registration of its own
// (a requeue, see wait.requeue): next does not name it for a renewal.
func (g *group) joinQuiet(m *member) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	m.quiet = len(g.members) > 1 || (len(g.members) == 1 && g.members[0] != m)
	return m.quiet
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

// next returns the id of the member that would lead after m, for the
// script that ends m's wait to renew its registration, or "". A handover
// marks the oldest live registration of the queue (see lua/handover.lua),
// so that member's is renewed when it may have been marked in m's place
// (it is not younger than m's), or when it is old enough (renewAfter, at
// now) to lapse during its block; otherwise the renewal is left out.
//
// A member that joined quietly and has not registered (see joinQuiet) has
// nothing to renew: with adopt false, next returns ""; with adopt true
// (the caller's script registers a successor named "+<id>", see
// [Request.Successors]) it returns "+<id>", the member's grant list
// (which that script gives the placeholder) and the member, for adopt once
// the script has obtained the keys.
func (g *group) next(m *member, now time.Time, adopt bool) (id, grants string, o *member) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, o := range g.members {
		if o != m {
			if o.quiet && o.renewed.IsZero() {
				if !adopt {
					return "", "", nil
				}
				if o.plus == "" {
					o.plus = "+" + o.id
				}
				return o.plus, o.grants, o
			}
			if o.renewed.After(m.renewed) && now.Sub(o.renewed) < renewAfter {
				return "", "", nil
			}
			return o.id, "", nil
		}
	}
	return "", "", nil
}

// adopt records that the script of the member before o registered o at a
// time after at, and left the placeholder in its grant list: o then
// blocks without a registration of its own (see adopted).
func (g *group) adopt(o *member, at time.Time) {
	g.mu.Lock()
	o.renewed, o.adopted = at, true
	g.mu.Unlock()
}

// adopted reports whether m was adopted (see adopt) and forgets it.
func (g *group) adopted(m *member) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	a := m.adopted
	m.adopted = false
	return a
}

// registered records that m registered (or renewed its registration) at
// a time after at; g may be nil (the wait polls).
func (g *group) registered(m *member, at time.Time) {
	if g == nil {
		return
	}
	g.mu.Lock()
	m.renewed = at
	g.mu.Unlock()
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
