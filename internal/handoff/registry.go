package handoff

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A Registry holds what the waits of one process share per go-redis
// client: the groups of goroutines that wait for one key (one line)
// and block one connection between them, the count of that client's
// connections that block, and the server's timer tick as last read (kept
// for a minute). It holds no goroutine and nothing that needs closing; a
// group lives while it has members. It is safe for concurrent use.
//
// Waits share a connection only when they go through one Registry: the
// root package uses [Default] for every Client, so that Clients made for
// one go-redis client (New is cheap and often called per use) share it
// too, and the limit on blocking connections holds per go-redis client.
type Registry struct {
	process string // the tag of its waiters' ids (newID)

	mu      sync.Mutex
	groups  map[groupKey]*group
	clients map[redis.Scripter]*clientState
	ticks   map[redis.Scripter]tickReading // kept for tickLife after the waits end
}

// tickReading is a server's tick as read at a time.
type tickReading struct {
	tick time.Duration
	at   time.Time
}

// Default is the Registry of the process: the only package-level mutable
// state of the module. Its groups and client entries exist only while some
// goroutine waits; a client's entry is dropped when its last wait ends.
var Default = NewRegistry()

// NewRegistry returns an empty Registry, whose waiters' ids carry a tag
// of their own.
func NewRegistry() *Registry { return &Registry{process: newProcessTag()} }

// groupKey identifies a group: a client, compared as an interface value,
// and a line.
type groupKey struct {
	client redis.Scripter
	line   string
}

// clientState is what the waits through one client share. Guarded by the
// Registry's mu.
type clientState struct {
	limit   int // connections that may block at once
	used    int
	members int // waits through this client, in any group
}

// tickLife is how long a server's tick, once read, is trusted.
const tickLife = time.Minute

// defaultTick is the tick of a server at the default hz of 10, assumed
// when INFO cannot be read.
const defaultTick = 100 * time.Millisecond

// join adds m, as the newest member, to the group of client and line.
func (r *Registry) join(client redis.Scripter, line string, m *member) *group {
	m.grants = GrantList(line, m.id)
	m.grantsArg = m.grants
	r.mu.Lock()
	defer r.mu.Unlock()
	if !reflect.TypeOf(client).Comparable() {
		// Not a map key: the wait is a group of its own.
		g := &group{reg: r, line: line, state: newClientState(client), members: []*member{m}}
		g.state.members = 1
		return g
	}
	if r.groups == nil {
		r.groups = make(map[groupKey]*group)
		r.clients = make(map[redis.Scripter]*clientState)
	}
	s := r.clients[client]
	if s == nil {
		s = newClientState(client)
		r.clients[client] = s
	}
	s.members++
	k := groupKey{client, line}
	g := r.groups[k]
	if g == nil {
		g = &group{reg: r, key: k, line: line, state: s}
		g.members = g.few[:0]
		r.groups[k] = g
	}
	g.mu.Lock()
	g.members = append(g.members, m)
	g.mu.Unlock()
	return g
}

// leave removes m from g, passing the lead on when m had it, and forgets g
// and its client once they have no member.
func (r *Registry) leave(g *group, m *member) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g.remove(m)
	g.state.members--
	if g.key.client == nil {
		return
	}
	if len(g.members) == 0 && r.groups[g.key] == g {
		delete(r.groups, g.key)
	}
	if g.state.members == 0 && g.state.used == 0 && r.clients[g.key.client] == g.state {
		delete(r.clients, g.key.client)
	}
}

// acquire takes one of the client's blocking connections when one is free.
func (r *Registry) acquire(s *clientState) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.used >= s.limit {
		return false
	}
	s.used++
	return true
}

// release gives back a blocking connection taken by acquire.
func (r *Registry) release(s *clientState) {
	r.mu.Lock()
	s.used--
	r.mu.Unlock()
}

// newClientState allows half the client's pool to block, at least one
// connection; 4 when the pool size is unknown.
func newClientState(client redis.Scripter) *clientState {
	_, pool := clientLimits(client)
	if pool <= 0 {
		return &clientState{limit: 4}
	}
	return &clientState{limit: max(1, pool/2)}
}

// serverTick returns the timer tick of client's server (1/hz): how late it
// may end a blocking call, since it checks their timeouts only when its
// event loop wakes, at the latest once a tick. It is read with INFO at most
// once a minute per client, and kept for that minute; [defaultTick] when
// INFO cannot be read.
func (r *Registry) serverTick(ctx context.Context, client redis.Scripter) time.Duration {
	comparable := reflect.TypeOf(client).Comparable()
	if comparable {
		r.mu.Lock()
		t, ok := r.ticks[client]
		r.mu.Unlock()
		if ok && time.Since(t.at) < tickLife {
			return t.tick
		}
	}
	tick := readTick(ctx, client)
	if comparable {
		now := time.Now()
		r.mu.Lock()
		if r.ticks == nil {
			r.ticks = make(map[redis.Scripter]tickReading)
		}
		for c, t := range r.ticks {
			if now.Sub(t.at) >= tickLife {
				delete(r.ticks, c)
			}
		}
		r.ticks[client] = tickReading{tick, now}
		r.mu.Unlock()
	}
	return tick
}

// readTick reads the hz field of INFO server (the current one: Redis raises
// it above configured_hz under load with dynamic-hz). On a Cluster it comes
// from one node; they normally share a configuration.
func readTick(ctx context.Context, client redis.Scripter) time.Duration {
	c, ok := client.(interface {
		Info(ctx context.Context, section ...string) *redis.StringCmd
	})
	if !ok {
		return defaultTick
	}
	ictx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	info, err := c.Info(ictx, "server").Result()
	if err != nil {
		return defaultTick
	}
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "hz:"); ok {
			if hz, err := strconv.Atoi(v); err == nil && hz > 0 {
				return max(time.Second/time.Duration(hz), time.Millisecond)
			}
		}
	}
	return defaultTick
}

// clientLimits returns the ReadTimeout and PoolSize (per node) of a
// go-redis client, zero when unknown.
func clientLimits(client redis.Scripter) (readTimeout time.Duration, poolSize int) {
	switch c := client.(type) {
	case interface{ Options() *redis.Options }:
		o := c.Options()
		return o.ReadTimeout, o.PoolSize
	case interface{ Options() *redis.ClusterOptions }:
		o := c.Options()
		return o.ReadTimeout, o.PoolSize
	case interface{ Options() *redis.RingOptions }:
		o := c.Options()
		return o.ReadTimeout, o.PoolSize
	}
	return 0, 0
}

// Waits returns the number of waits in progress through r, and the number
// of groups and clients it keeps for them: all zero once every wait has
// ended.
func (r *Registry) Waits() (waits, groups, clients int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.clients {
		waits += s.members
	}
	return waits, len(r.groups), len(r.clients)
}
