package session

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/lease"
	"github.com/redislock/redislock/internal/script"
)

// Call is one script call on one lease's keys.
type Call struct {
	Script *script.Script
	Keys   []string
	Args   []any
}

// Reply is what a call returned: an integer, or an error.
type Reply struct {
	N   int64
	Err error
}

// A Member is a lease in a session, as its holder describes it.
type Member interface {
	// RefreshCall returns the call that extends the lease to ms milliseconds,
	// whose replies are refresh.lua's: 1 extended, 0 gone, -1 held by
	// another (nothing changed unless 1). It is called just before the
	// call is sent; done, unless nil, is called with its outcome: nil on
	// success, an error matching [lease.ErrNotHeld] when it found the
	// lease gone or taken, the error otherwise.
	RefreshCall(ctx context.Context, ms int64) (c Call, done func(error))
	// Ended returns what to call once the lease's keeping has ended,
	// after its Done was closed, with how and with its Err
	// ([lease.Config.After]); nil: nothing.
	Ended() func(e lease.End, err error)
	// ReleaseCall stops the lease's keeping and returns the call that
	// releases it, and what reads that call's reply and returns the
	// error of the release (send false: nothing to send, settle is called
	// with a zero Reply).
	ReleaseCall(ctx context.Context) (c Call, send bool, settle func(Reply) error)
}

// Config is a session's settings.
type Config struct {
	// Lease is the keep-alive settings of every lease ([lease.Config]):
	// TTL, Interval, Margin, MaxHold (counted from each Add), Transient,
	// Ended, Jitter. After is unused: [Member.Ended] is each lease's.
	Lease lease.Config
	// One and Many: calls of One (refresh.lua: KEYS the keys, ARGV the
	// token and the TTL in ms) may be sent as part of a call of Many,
	// which refreshes many leases as One would each (KEYS every lease's
	// keys in order; ARGV the TTL, then each lease's number of keys and
	// token; reply an array of One's replies). Nil: none is merged.
	One, Many *script.Script
}

// Window is how much sooner than due a lease's refresh may be sent to join
// a batch, as a part of the interval: a tenth.
const Window = 10

// ManyLimit is the most leases that one call of [Config.Many] refreshes.
const ManyLimit = 128

// maxBatch is the most leases in one batch (one pipeline); the rest wait
// for the next, which goes as soon as this one's replies are in.
const maxBatch = 16384

// Session keeps many leases alive: see the package documentation. Its
// methods are safe for concurrent use.
type Session struct {
	cfg    lease.Config // resolved
	ms     int64        // cfg.TTL in milliseconds
	epoch  time.Time    // the origin of the loop's times
	window time.Duration
	tr     transport

	ctx     context.Context // ends with the session: the senders' sends
	cancel  context.CancelFunc
	poke    chan struct{} // the loop has something to do
	results chan *batch   // from the senders
	exited  chan struct{} // the loop has returned
	senders sync.WaitGroup
	sig     lease.Signal // the session's Done and Err

	mu      sync.Mutex // closing, closed, nodes
	closing bool       // lost or closed: no more leases or nodes
	closed  bool       // Close was called
	nodes   map[string]*node

	// qmu guards what other goroutines hand to the loop; nothing else is
	// locked while it is held.
	qmu              sync.Mutex
	adds, dirty, out []*Entry
	spare            [3][]*Entry

	// fly guards each entry's stopped and batch; nothing else is locked
	// while it is held.
	fly sync.Mutex

	// The loop's own: the leases due for a refresh, by when; every lease
	// being kept, by its deadline; the leases that ended but may still be
	// held (for Close); the ends whose Member.Ended is yet to be called.
	due, dead entryHeap
	kept      []*Entry
	after     []ended
	lost      lease.End        // once lost: how the other leases end
	failing   map[*Entry]error // the error of each lease's last refresh, while it fails
}

// ended is a lease's end whose [Member.Ended] the loop has yet to call.
type ended struct {
	e   *Entry
	end lease.End
	err error
}

// New starts a session that sends through client as cfg says (its Lease
// is checked as [lease.Config.Resolve] does). It sends nothing. Errors: a
// [*lease.ConfigError].
func New(client redis.Scripter, cfg Config) (*Session, error) {
	return start(newRedis(client, cfg), cfg)
}

// start starts a session that sends through tr.
func start(tr transport, cfg Config) (*Session, error) {
	lc, err := cfg.Lease.Resolve()
	if err != nil {
		return nil, err
	}
	lc.After = nil
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		cfg:     lc,
		ms:      int64(lc.TTL / time.Millisecond),
		epoch:   time.Now(),
		window:  lc.Interval / Window,
		tr:      tr,
		ctx:     ctx,
		cancel:  cancel,
		poke:    make(chan struct{}, 1),
		results: make(chan *batch),
		exited:  make(chan struct{}),
		nodes:   make(map[string]*node),
		failing: make(map[*Entry]error),
	}
	s.due.due = true
	go s.run()
	return s, nil
}

// TTL returns the TTL that the session's refreshes set.
func (s *Session) TTL() time.Duration { return s.cfg.TTL }

// Done returns a channel that is closed when the session has ended: closed,
// or lost (Err says which).
func (s *Session) Done() <-chan struct{} { return s.sig.Done() }

// Err returns nil while the session runs, then, for good, Config.Ended's
// error for [lease.Stopped] after Close, or for the end of the lease that
// made the session lost.
func (s *Session) Err() error { return s.sig.Err() }

// Add puts l, held by m, under the session, which keeps it alive from now
// on; key is one of its keys, whose node its refreshes go to. It returns
// the lease's keeper (its Done, Err, Context). It does not wait for Redis,
// except on a Cluster client that has never loaded its slot map, and
// except as [lease.Lease.Keep] waits for a previous keeper still
// finishing. Errors, with nothing kept: those of [lease.Lease.Keep];
// once the session has ended, its Err (or, while it ends, Config.Lease.Ended's error for
// [lease.Stopped]).
func (s *Session) Add(l *lease.Lease, m Member, key string) (*Entry, error) {
	if s.sig.Begun() {
		return nil, s.endedErr()
	}
	name := s.tr.route(s.ctx, key)
	e := &Entry{s: s, lease: l, m: m}
	e.due.i, e.dead.i = -1, -1
	sent, validUntil, err := l.Keep(e, s.cfg.Margin)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closing || s.sig.Begun() {
		s.mu.Unlock()
		e.end(lease.End{Reason: lease.Stopped}) // it is no keeper: the next Keep replaces it
		return nil, s.endedErr()
	}
	e.node = s.node(name)
	e.sent, e.validUntil = s.at(sent), s.at(validUntil)
	e.dueAt = s.at(s.cfg.NextRefresh(sent, validUntil))
	if s.cfg.MaxHold > 0 {
		e.maxHold = s.at(time.Now().Add(s.cfg.MaxHold))
	}
	s.qmu.Lock()
	s.adds = append(s.adds, e)
	s.qmu.Unlock()
	s.mu.Unlock()
	s.wake()
	return e, nil
}

// endedErr is Add's error once the session has ended: Err, or, while the
// session is ending, Config.Lease.Ended's for lease.Stopped.
func (s *Session) endedErr() error {
	if err := s.Err(); err != nil {
		return err
	}
	return s.ended(lease.End{Reason: lease.Stopped})
}

// node returns the node called name, started on first use. s.mu is held.
func (s *Session) node(name string) *node {
	n := s.nodes[name]
	if n == nil {
		n = &node{name: name, send: make(chan *batch, 1)}
		s.nodes[name] = n
		s.senders.Add(1)
		go s.sender(n)
	}
	return n
}

// Close stops the session: no refresh starts after it returns, every
// lease still kept ends as stopped (its lease stays held until its
// ValidUntil), and Done is closed. It waits for the session's goroutines
// to return, which a sender does once its batch in flight, if any, has
// returned: at once when go-redis honours the cancelled context, at the
// client's timeouts when it waits for a reply that does not come. It
// returns the members whose leases the session kept and that may still be
// held (not released, nor found gone or taken), for the caller to release;
// a second Close returns nil.
func (s *Session) Close() []Member {
	s.mu.Lock()
	first := !s.closed
	s.closed, s.closing = true, true
	s.mu.Unlock()
	s.cancel()
	<-s.exited
	var members []Member
	if first {
		// The loop has returned: its state is Close's now.
		s.intake(false)
		var live []*Entry
		for _, e := range s.dead.list {
			if !e.sig.Begun() {
				live = append(live, e)
				members = append(members, e.m)
			}
		}
		for _, e := range s.kept {
			if e.mayBeHeld() {
				members = append(members, e.m)
			}
		}
		stop := lease.End{Reason: lease.Stopped}
		for _, e := range live {
			if err := e.signal(stop); err != nil {
				s.after = append(s.after, ended{e: e, end: stop, err: err})
			}
		}
		s.callAfters()
		if s.sig.Begin() {
			s.sig.Cancel(s.ended(stop))
		}
		s.sig.Close()
	}
	s.senders.Wait()
	return members
}

// Release closes the session and releases the members that Close returns
// ([Member.ReleaseCall]), in one pipeline through the client (a Cluster
// client sends one to each node); when ctx has ended, under a context of
// its own without ctx's cancellation, ending after timeout. It returns nil
// when every release returned nil, else the first error, wrapped with how
// many failed.
func (s *Session) Release(ctx context.Context, timeout time.Duration) error {
	members := s.Close()
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), timeout)
		defer cancel()
	}
	calls := make([]Call, 0, len(members))
	settle := make([]func(Reply) error, len(members))
	sent := make([]bool, len(members))
	for i, m := range members {
		var c Call
		c, sent[i], settle[i] = m.ReleaseCall(ctx)
		if sent[i] {
			calls = append(calls, c)
		}
	}
	replies := s.tr.run(ctx, calls, false)
	var first error
	failed := 0
	for i := range members {
		var r Reply
		if sent[i] {
			r, replies = replies[0], replies[1:]
		}
		if err := settle[i](r); err != nil {
			failed++
			if first == nil {
				first = err
			}
		}
	}
	if first != nil {
		return fmt.Errorf("%d of %d leases: %w", failed, len(members), first)
	}
	return nil
}

// at returns t as the loop counts time: nanoseconds since the epoch, on
// the monotonic clock.
func (s *Session) at(t time.Time) int64 { return int64(t.Sub(s.epoch)) }

// now returns the loop's time now.
func (s *Session) now() int64 { return s.at(time.Now()) }

// wake tells the loop it has something to do.
func (s *Session) wake() {
	select {
	case s.poke <- struct{}{}:
	default:
	}
}
