package quorum

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"
)

// A model of the quorum protocol, for checking it over every interleaving
// of small configurations (explore) or over many random histories (walk).
//
// Nodes run the Go mirrors of the scripts (mirror_test.go) on a state of
// their own; clients run the engine's own decisions (decide.go: the
// acquisition state machine, refreshVerdict, continuous, Validity) and
// build their calls with the engine's own argument functions. Between
// them, each (client, node) pair has one message slot, which the checker
// may deliver; drop (the client sees an error, and the request may still
// run once at any later time, a ghost: delayed, or run with its reply
// lost); or run twice (go-redis resends a script after a broken
// connection: the first reply is lost, the second arrives). Time moves in
// ticks; a client may let any number pass between two steps (a pause).
// Nodes crash and come back as their kind says.
//
// Three properties are checked in every state:
//   - exclusion: at most one client holds a lease that is still valid by
//     its own clock (docs/quorum.md, "Exclusion");
//   - tokens: each token issued is greater than every token issued before
//     it (Theorem 2, which implies Theorem 1);
//   - a valid holder's token is the highest issued so far: the resource
//     accepts every write of the holder of a valid lease.

// design is the protocol a model runs.
type design uint8

const (
	designQuorum  design = iota // this package's
	designMaxIncr               // known wrong: INCR on every node, the token the maximum over the majority won
)

// nodeKind is what a node keeps when it comes back after a crash.
type nodeKind uint8

const (
	durable  nodeKind = iota // AOF, fsync always: everything
	volatile                 // no persistence: nothing; it recovers (node.lua)
	amnesiac                 // claims AOF (no recovery) but lost everything: assumption D broken
	rollback                 // claims AOF, back as of the last tick (everysec, a machine crash): D broken
)

func (k nodeKind) String() string {
	return [...]string{"durable", "volatile", "amnesiac", "rollback"}[k]
}

// config is one model.
type config struct {
	design       design
	fenced       bool
	nodes        int // at most maxN
	clients      int // at most maxC
	acquisitions int // per client
	refreshes    int // per acquisition
	kinds        []nodeKind
	ttl          time.Duration // also MaxTTL
	tick         time.Duration
	ticks        int             // time runs from 0 to ticks
	restarts     int             // crashes in a history, at most
	faults       int             // drops and duplicates in a history, at most
	reuseToken   bool            // a client's acquisitions share one token
	sharedTag    bool            // mutation: with reuseToken, one tag per client (ownership by token alone)
	lateSend     bool            // mutation: a refresh may be sent after the lease ended
	lateReply    bool            // mutation: a refresh's replies count after the lease ended
	clientSkew   []int64         // µs added to each client's wall clock
	nodeSkew     []int64         // µs added to each node's TIME
	early        []time.Duration // each node's keys expire this much early (a fast clock)
}

const (
	maxN = 5
	maxC = 3
)

// The keys of the model's one lock.
const (
	lockKey  = "{m}:lock"
	fenceKey = "{m}:fence"
)

var (
	markerKey = Marker(lockKey)
	// The KEYS of each script, as the engine builds them.
	fencedObtainKeys = []string{lockKey, fenceKey, markerKey}
	plainObtainKeys  = []string{lockKey, markerKey}
	confirmKeys      = []string{lockKey, fenceKey}
	refreshKeys      = []string{lockKey, markerKey}
	releaseKeys      = []string{lockKey}
	fenceTag         = CounterTag(fenceKey)
)

// entry is one key on a node: its value and absolute expiry (ms, 0 for
// none).
type entry struct {
	value string
	exp   int64
	ok    bool
}

// mnode is one node.
type mnode struct {
	up                  bool
	lock, fence, marker entry
	start               int64    // ms, its last start
	snap                [3]entry // rollback: as of the last tick
}

// op is a script a slot carries.
type op uint8

const (
	opNone op = iota
	opObtain
	opConfirm
	opRefresh
	opRelease
)

// slot is the message between one client and one node. It carries all the
// script needs, so that a request the client gave up on can still run
// later (a ghost).
type slot struct {
	op    op
	acq   int8  // the acquisition it belongs to (its token string)
	token int64 // the round's token (obtain, confirm)
	fence int64 // refresh: the issued token
	ran   bool  // the node ran it (or it failed): the reply is in
	fail  bool  // the reply is an error
	reply int64
	err   string // a script error's text
}

// phase is what a client is doing.
type phase uint8

const (
	idle phase = iota
	obtaining
	holding
	refreshing
	releasing
	done
)

// mclient is one client: its acquisition's state in fixed-size form (see
// acquisitionOf and keep).
type mclient struct {
	phase      phase
	acq        int8 // acquisitions started
	refreshes  int8 // refreshes of the current acquisition
	round      int8
	token      int64
	target     [maxN]bool
	touched    [maxN]bool
	high       int64
	sent       int64 // ms
	fence      int64 // the issued token
	validUntil int64 // ms
	refreshAt  int64 // ms: the refresh's send time
	seen       int64 // the engine's hint
}

// state is the whole model at one moment; it is comparable and hashed as
// a value.
type state struct {
	now     int16 // ticks
	nodes   [maxN]mnode
	clients [maxC]mclient
	net     [maxC][maxN]slot
	// ghost holds a request the client saw fail (dropped) but that is
	// still on its way: the node may run it once, at any later time.
	ghost    [maxC][maxN]slot
	restarts int8
	faults   int8
	issued   int64 // the highest token issued
	// regressed: the last issue gave a token not above issued; check
	// reports it and clears it.
	regressed bool
}

// event is one step of the model.
type event struct {
	kind   eventKind
	c, n   int
	detail string
}

type eventKind uint8

const (
	evTick eventKind = iota
	evStart
	evRefresh
	evRelease
	evDeliver
	evDrop
	evDup
	evCollect
	evCrash
	evRecover
	evGhost
)

func (e event) String() string {
	name := [...]string{"tick", "start", "refresh", "release", "deliver", "drop", "dup", "collect", "crash", "recover", "ghost"}[e.kind]
	s := fmt.Sprintf("%s c%d n%d", name, e.c, e.n)
	if e.detail != "" {
		s += " (" + e.detail + ")"
	}
	return s
}

// violation is a property that failed in a state.
type violation struct {
	what  string
	trace []event
}

// model is a config with its derived constants.
type model struct {
	config
	base time.Time
}

func newModel(c config) *model {
	if c.nodes > maxN || c.clients > maxC {
		panic("model too large")
	}
	return &model{config: c, base: time.Unix(1_800_000_000, 0)}
}

func (m *model) ms(s *state) int64     { return int64(s.now) * m.tick.Milliseconds() }
func (m *model) at(ms int64) time.Time { return m.base.Add(time.Duration(ms) * time.Millisecond) }
func (m *model) baseMicros() int64     { return m.base.UnixMicro() }

// token returns the token string of client c's acquisition acq: one per
// acquisition, or one per client with reuseToken (the root package's
// retries reuse a call's token across attempts).
func (m *model) token(c int, acq int8) string {
	if m.reuseToken {
		acq = 0
	}
	return "c" + strconv.Itoa(c) + "a" + strconv.Itoa(int(acq))
}

// tag returns the tag of client c's acquisition acq, as newTag makes
// them: its own even when the token is shared.
func (m *model) tag(c int, acq int8) string {
	if m.sharedTag {
		acq = 0
	}
	nonce := fmt.Sprintf("%016x", c<<8|int(acq))
	if m.fenced {
		return fenceTag + nonce
	}
	return nonce
}

// wall returns client c's wall clock in µs.
func (m *model) wall(s *state, c int) int64 {
	return m.baseMicros() + m.ms(s)*1000 + index(m.clientSkew, c)
}

// earlyMs returns how early node n's keys expire, in ms.
func (m *model) earlyMs(n int) int64 {
	if n < len(m.early) {
		return m.early[n].Milliseconds()
	}
	return 0
}

// index returns v[i], 0 past its end.
func index(v []int64, i int) int64 {
	if i < len(v) {
		return v[i]
	}
	return 0
}

// nodeStore is the store of node n at time nowMs (ms). It points to a copy
// of the node, not into the state, so that states stay off the heap.
type nodeStore struct {
	m     *model
	n     int
	nowMs int64
	nd    *mnode
}

func (st nodeStore) now() int64 { return st.nowMs }

func (st nodeStore) entry(key string) *entry {
	switch key {
	case lockKey:
		return &st.nd.lock
	case fenceKey:
		return &st.nd.fence
	case markerKey:
		return &st.nd.marker
	}
	panic("model: unknown key " + key)
}

func (st nodeStore) live(e *entry) bool {
	if e.ok && e.exp != 0 && e.exp <= st.now() {
		*e = entry{}
	}
	return e.ok
}

func (st nodeStore) get(key string) (string, bool) {
	e := st.entry(key)
	if !st.live(e) {
		return "", false
	}
	return e.value, true
}

func (st nodeStore) set(key, value string, px int64) {
	e := st.entry(key)
	st.live(e)
	ne := entry{value: value, ok: true}
	switch {
	case px > 0:
		ne.exp = st.now() + px - st.m.earlyMs(st.n)
	case px == keepTTL && e.ok:
		ne.exp = e.exp
	}
	*e = ne
}

func (st nodeStore) pexpire(key string, ms int64) {
	if e := st.entry(key); st.live(e) {
		e.exp = st.now() + ms - st.m.earlyMs(st.n)
	}
}

func (st nodeStore) del(key string) int64 {
	e := st.entry(key)
	if !st.live(e) {
		return 0
	}
	*e = entry{}
	return 1
}

func (st nodeStore) pttl(key string) int64 {
	e := st.entry(key)
	switch {
	case !st.live(e):
		return -2
	case e.exp == 0:
		return -1
	}
	return e.exp - st.now()
}

func (st nodeStore) timeMicros() int64 {
	return st.m.baseMicros() + st.now()*1000 + index(st.m.nodeSkew, st.n)
}

func (st nodeStore) info() (bool, int64) {
	aof := st.m.kinds[st.n] != volatile
	return aof, (st.m.baseMicros()/1000+st.now())/1000 - (st.m.baseMicros()/1000+st.nd.start)/1000
}

// initial returns the state before anything happened: every node up, and
// up for two seconds already, so that a node without persistence has
// finished the recovery of its start (it recovers again after a restart
// in the history).
func (m *model) initial() state {
	var s state
	for n := range m.nodes {
		s.nodes[n].up = true
		s.nodes[n].start = -2000
	}
	return s
}

// events returns the steps possible in s, in a fixed order.
func (m *model) events(s *state) []event {
	var evs []event
	if int(s.now) < m.ticks {
		evs = append(evs, event{kind: evTick})
	}
	for c := range m.clients {
		cl := &s.clients[c]
		switch cl.phase {
		case idle:
			if int(cl.acq) < m.acquisitions {
				evs = append(evs, event{kind: evStart, c: c})
			}
		case holding:
			if int(cl.refreshes) < m.refreshes && (m.lateSend || continuous(m.at(m.ms(s)), m.at(cl.validUntil))) {
				evs = append(evs, event{kind: evRefresh, c: c})
			}
			evs = append(evs, event{kind: evRelease, c: c})
		}
		pending := false
		for n := range m.nodes {
			sl := &s.net[c][n]
			if sl.op == opNone {
				continue
			}
			if !sl.ran {
				pending = true
				evs = append(evs, event{kind: evDeliver, c: c, n: n})
				if int(s.faults) < m.faults {
					evs = append(evs, event{kind: evDrop, c: c, n: n})
				}
			} else if !sl.fail && int(s.faults) < m.faults && s.nodes[n].up {
				evs = append(evs, event{kind: evDup, c: c, n: n})
			}
		}
		for n := range m.nodes {
			if s.ghost[c][n].op != opNone {
				evs = append(evs, event{kind: evGhost, c: c, n: n})
			}
		}
		if !pending && (cl.phase == obtaining || cl.phase == refreshing || cl.phase == releasing) {
			evs = append(evs, event{kind: evCollect, c: c})
		}
	}
	for n := range m.nodes {
		if s.nodes[n].up && int(s.restarts) < m.restarts {
			evs = append(evs, event{kind: evCrash, n: n})
		}
		if !s.nodes[n].up {
			evs = append(evs, event{kind: evRecover, n: n})
		}
	}
	return evs
}

// apply performs e on s. It returns a description of what a collect
// decided, for traces.
func (m *model) apply(s *state, e event) string {
	switch e.kind {
	case evTick:
		for n := range m.nodes {
			nd := &s.nodes[n]
			if nd.up && m.kinds[n] == rollback {
				nd.snap = [3]entry{nd.lock, nd.fence, nd.marker}
			}
		}
		s.now++
		m.expire(s)
	case evStart:
		m.start(s, e.c)
	case evRefresh:
		m.refresh(s, e.c)
	case evRelease:
		m.release(s, e.c, nil)
	case evDeliver:
		m.run(s, e.c, e.n)
	case evDrop:
		s.faults++
		sl := &s.net[e.c][e.n]
		s.ghost[e.c][e.n] = *sl
		sl.ran, sl.fail = true, true
	case evGhost:
		g := &s.ghost[e.c][e.n]
		if s.nodes[e.n].up {
			_, _ = m.exec(s, e.c, e.n, g) // nobody reads a ghost's reply
		}
		*g = slot{}
	case evDup:
		s.faults++
		m.run(s, e.c, e.n)
	case evCollect:
		return m.collect(s, e.c)
	case evCrash:
		s.restarts++
		s.nodes[e.n].up = false
	case evRecover:
		nd := &s.nodes[e.n]
		nd.up, nd.start = true, m.ms(s)
		switch m.kinds[e.n] {
		case volatile, amnesiac:
			nd.lock, nd.fence, nd.marker = entry{}, entry{}, entry{}
		case rollback:
			nd.lock, nd.fence, nd.marker = nd.snap[0], nd.snap[1], nd.snap[2]
		}
		m.expire(s)
	}
	return ""
}

// expire drops the keys whose time has come, so that equal states hash
// equal.
func (m *model) expire(s *state) {
	for n := range m.nodes {
		nd := &s.nodes[n]
		now := m.ms(s)
		for _, e := range [...]*entry{&nd.lock, &nd.fence, &nd.marker} {
			if e.ok && e.exp != 0 && e.exp <= now {
				*e = entry{}
			}
		}
	}
}

// start begins client c's next acquisition: round 1 to every node.
func (m *model) start(s *state, c int) {
	cl := &s.clients[c]
	now := m.ms(s)
	a := newAcquisition(m.nodes, m.fenced, m.ttl, m.at(now), m.wall(s, c), cl.seen)
	*cl = mclient{phase: obtaining, acq: cl.acq + 1, seen: cl.seen, sent: now}
	m.keep(cl, a)
	for n := range m.nodes {
		s.net[c][n] = slot{op: opObtain, acq: cl.acq, token: a.token}
	}
}

// acquisitionOf rebuilds client c's acquisition, for the engine's
// decisions.
func (m *model) acquisitionOf(cl *mclient) *acquisition {
	a := &acquisition{
		fenced:  m.fenced,
		ttl:     m.ttl,
		sent:    m.at(cl.sent),
		round:   int(cl.round),
		token:   cl.token,
		target:  make([]bool, m.nodes),
		touched: make([]bool, m.nodes),
		high:    cl.high,
	}
	copy(a.target, cl.target[:m.nodes])
	copy(a.touched, cl.touched[:m.nodes])
	return a
}

// keep stores a's state in cl.
func (m *model) keep(cl *mclient, a *acquisition) {
	cl.round, cl.token, cl.high = int8(a.round), a.token, a.high
	copy(cl.target[:], a.target)
	copy(cl.touched[:], a.touched)
}

func (m *model) refresh(s *state, c int) {
	cl := &s.clients[c]
	cl.phase = refreshing
	cl.refreshes++
	cl.refreshAt = m.ms(s)
	for n := range m.nodes {
		s.net[c][n] = slot{op: opRefresh, acq: cl.acq, fence: cl.fence}
	}
}

// release sends the release to the nodes of target (all for nil).
func (m *model) release(s *state, c int, target []bool) {
	s.clients[c].phase = releasing
	for n := range m.nodes {
		if target == nil || target[n] {
			s.net[c][n] = slot{op: opRelease, acq: s.clients[c].acq}
		} else {
			s.net[c][n] = slot{}
		}
	}
}

// run makes node n run the script of slot (c, n).
func (m *model) run(s *state, c, n int) {
	sl := &s.net[c][n]
	sl.ran = true
	if !s.nodes[n].up {
		sl.fail = true
		return
	}
	v, err := m.exec(s, c, n, sl)
	sl.fail, sl.reply, sl.err = false, v, ""
	if err != nil {
		sl.fail, sl.err = true, err.Error()
	}
}

// exec runs sl's script on node n, for client c, and returns its reply.
func (m *model) exec(s *state, c, n int, sl *slot) (int64, error) {
	nd := new(mnode)
	*nd = s.nodes[n]
	defer func() { s.nodes[n] = *nd }()
	return m.script(nodeStore{m: m, n: n, nowMs: m.ms(s), nd: nd}, c, sl)
}

// script runs sl's script on st, for client c.
func (m *model) script(st nodeStore, c int, sl *slot) (int64, error) {
	token, tag := m.token(c, sl.acq), m.tag(c, sl.acq)
	switch sl.op {
	case opObtain:
		if m.design == designMaxIncr {
			return maxIncrObtain(st, token, m.ttl)
		}
		keys := fencedObtainKeys
		if !m.fenced {
			keys = plainObtainKeys
		}
		return mirrorObtain(st, keys, argv(obtainArgs(token, "", m.ttl, tag, sl.token, m.ttl)))
	case opConfirm:
		return mirrorConfirm(st, confirmKeys, argv(confirmArgs(token, tag, sl.token)))
	case opRefresh:
		rest := strconv.FormatInt(sl.fence, 10) + "/" + tag + ":"
		return mirrorRefresh(st, refreshKeys, argv(refreshArgs(token, tag, m.ttl, rest, m.ttl)))
	case opRelease:
		if m.design == designMaxIncr {
			return maxIncrRelease(st, token)
		}
		return mirrorRelease(st, releaseKeys, []string{token, tag})
	}
	panic("model: no script")
}

// errModel stands for a node's error (a dropped or lost message, a dead
// node) in the engine's replies.
var errModel = errors.New("model: no reply")

// collect hands client c's replies to the engine's decisions.
func (m *model) collect(s *state, c int) string {
	cl := &s.clients[c]
	now := m.ms(s)
	raw := s.net[c]
	s.net[c] = [maxN]slot{}
	if m.design == designMaxIncr && cl.phase == obtaining {
		return m.collectMaxIncr(s, c, raw)
	}
	replies := make([]nodeReply, m.nodes)
	for n := range m.nodes {
		sl := raw[n]
		switch {
		case sl.op == opNone:
			replies[n] = nodeReply{kind: rSkipped}
		case sl.fail:
			replies[n] = failedReply(errModel)
		case sl.op == opObtain:
			replies[n] = parseObtain(sl.reply, nil, m.fenced, sl.token)
		case sl.op == opConfirm:
			replies[n] = parseConfirm(sl.reply, nil, sl.token)
		case sl.op == opRefresh:
			replies[n] = parseRefresh(sl.reply, nil)
		default:
			replies[n] = nodeReply{kind: rKept}
		}
	}
	switch cl.phase {
	case releasing:
		// Nothing of the acquisition matters any more: forget it, so that
		// states that differ only by it hash equal.
		*cl = mclient{phase: idle, acq: cl.acq, seen: cl.seen}
		if int(cl.acq) >= m.acquisitions {
			*cl = mclient{phase: done}
		}
		return "released"
	case refreshing:
		_, renewed, lost := refreshVerdict(replies)
		switch {
		case (!m.lateReply && !continuous(m.at(now), m.at(cl.validUntil))) || lost:
			m.release(s, c, nil)
			return "refresh: lost"
		case renewed:
			cl.validUntil = cl.refreshAt + Validity(m.ttl).Milliseconds()
			cl.phase = holding
			return "refresh: renewed"
		}
		cl.phase = holding
		return "refresh: no quorum"
	}
	a := m.acquisitionOf(cl)
	v := a.settle(replies, m.at(now))
	m.keep(cl, a)
	cl.seen = max(cl.seen, a.high)
	switch v {
	case again:
		for n := range m.nodes {
			if a.target[n] {
				s.net[c][n] = slot{op: opConfirm, acq: cl.acq, token: a.token}
			}
		}
		return fmt.Sprintf("round %d, token +%d", a.round, a.token-m.baseMicros())
	case issue:
		m.issue(s, c, a.token)
		return fmt.Sprintf("issued +%d", a.token-m.baseMicros())
	}
	m.release(s, c, a.touched)
	return fmt.Sprintf("abandoned: %+v, expired %v", a.counts, a.expired)
}

// issue records that client c holds the lock with token.
func (m *model) issue(s *state, c int, token int64) {
	cl := &s.clients[c]
	cl.phase, cl.fence = holding, token
	cl.validUntil = cl.sent + Validity(m.ttl).Milliseconds()
	cl.seen = max(cl.seen, token)
	if m.fenced && token <= s.issued {
		s.regressed = true
		return
	}
	s.issued = token
}

// check returns the properties that fail in s.
func (m *model) check(s *state) []string {
	var bad []string
	if s.regressed {
		bad = append(bad, "a token issued that is not above one issued before")
		s.regressed = false
	}
	valid := 0
	for c := range m.clients {
		cl := &s.clients[c]
		if (cl.phase == holding || cl.phase == refreshing) && continuous(m.at(m.ms(s)), m.at(cl.validUntil)) {
			valid++
			if m.fenced && cl.fence < s.issued {
				bad = append(bad, "a valid holder's token is below one issued")
			}
		}
	}
	if valid > 1 {
		bad = append(bad, "two clients hold valid leases")
	}
	return bad
}

// maxIncrObtain is the node side of the known-wrong design: take the key
// when free, INCR the counter, reply its value (-1 when held).
func maxIncrObtain(st nodeStore, token string, ttl time.Duration) (int64, error) {
	prefix := owner(token)
	if v, ok := st.get(lockKey); ok && !owns(v, ok, prefix) {
		return -1, nil
	}
	st.set(lockKey, prefix+"0:", ttl.Milliseconds())
	c := int64(0)
	if v, ok := st.get(fenceKey); ok {
		c = num(v)
	}
	c++
	st.set(fenceKey, strconv.FormatInt(c, 10), 0)
	return c, nil
}

// maxIncrRelease deletes the key when it holds token.
func maxIncrRelease(st nodeStore, token string) (int64, error) {
	if v, ok := st.get(lockKey); owns(v, ok, owner(token)) {
		return st.del(lockKey), nil
	}
	return 0, nil
}

// collectMaxIncr is the client side of the known-wrong design: held on a
// majority in time, the token is the largest counter of the nodes won.
func (m *model) collectMaxIncr(s *state, c int, raw [maxN]slot) string {
	cl := &s.clients[c]
	won, token := 0, int64(0)
	touched := make([]bool, m.nodes)
	for n := range m.nodes {
		switch sl := raw[n]; {
		case sl.fail:
			touched[n] = true
		case sl.reply > 0:
			won++
			touched[n] = true
			token = max(token, sl.reply)
		}
	}
	if won >= Majority(m.nodes) && inTime(m.at(cl.sent), m.at(m.ms(s)), m.ttl) {
		m.issue(s, c, token)
		return fmt.Sprintf("issued %d", token)
	}
	m.release(s, c, touched)
	return "abandoned"
}

// hash returns a hash of s's value. Nodes of the same kind, skew and
// early expiry are interchangeable: their encodings (each with the
// messages to and from it) are sorted, so that states that differ only by
// a permutation of such nodes hash equal.
func (m *model) hash(seed maphash.Seed, h *hasher, s *state) uint64 {
	b := h.buf[:0]
	b = binary.AppendVarint(b, int64(s.now))
	b = append(b, byte(s.restarts), byte(s.faults), boolByte(s.regressed))
	b = binary.AppendVarint(b, s.issued)
	for c := range m.clients {
		cl := &s.clients[c]
		b = append(b, byte(cl.phase), byte(cl.acq), byte(cl.refreshes), byte(cl.round))
		for _, v := range [...]int64{cl.token, cl.high, cl.sent, cl.fence, cl.validUntil, cl.refreshAt, cl.seen} {
			b = binary.AppendVarint(b, v)
		}
	}
	// Expiries past the horizon cannot be observed within it (no script
	// of the model reads a PTTL), nor can the start of a node beyond its
	// uptime in whole seconds.
	horizon := int64(m.ticks)*m.tick.Milliseconds() + 1
	for n := range m.nodes {
		e := h.node[n][:0]
		e = append(e, byte(m.kinds[n]))
		e = binary.AppendVarint(e, index(m.nodeSkew, n))
		e = binary.AppendVarint(e, m.earlyMs(n))
		nd := &s.nodes[n]
		e = append(e, boolByte(nd.up))
		for _, en := range [...]*entry{&nd.lock, &nd.fence, &nd.marker, &nd.snap[0], &nd.snap[1], &nd.snap[2]} {
			e = append(e, boolByte(en.ok))
			e = binary.AppendVarint(e, min(en.exp, horizon))
			e = append(e, en.value...)
			e = append(e, 0)
		}
		e = binary.AppendVarint(e, (m.baseMicros()/1000+nd.start)/1000)
		for c := range m.clients {
			cl := &s.clients[c]
			e = append(e, boolByte(cl.target[n])|boolByte(cl.touched[n])<<1)
			for _, sl := range [...]*slot{&s.net[c][n], &s.ghost[c][n]} {
				e = append(e, byte(sl.op), byte(sl.acq), boolByte(sl.ran)|boolByte(sl.fail)<<1)
				e = binary.AppendVarint(e, sl.token)
				e = binary.AppendVarint(e, sl.fence)
				e = binary.AppendVarint(e, sl.reply)
				e = append(e, sl.err...)
				e = append(e, 0)
			}
		}
		h.node[n] = e
	}
	nodes := h.order[:m.nodes]
	for n := range nodes {
		nodes[n] = h.node[n]
	}
	slices.SortFunc(nodes, func(x, y []byte) int { return bytes.Compare(x, y) })
	for _, e := range nodes {
		b = binary.AppendUvarint(b, uint64(len(e)))
		b = append(b, e...)
	}
	h.buf = b
	return maphash.Bytes(seed, b)
}

// hasher holds hash's buffers.
type hasher struct {
	buf   []byte
	node  [maxN][]byte
	order [maxN][]byte
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// result is what a run of the checker found.
type result struct {
	states     int
	issued     int            // tokens (or unfenced leases) issued
	violations map[string]int // by property: how many states broke it
	first      *violation
}

// explore visits every state reachable from the initial one (states
// reached again are not explored again, by a 64-bit hash of their value:
// a collision could only hide a state, never report a violation that is
// not there) and checks the properties in each. It stops after limit
// states (0: no limit), or at the first violation for which stop (when
// not nil) returns true, and reports whether it visited them all. The
// first violation it records is that one.
func (m *model) explore(limit int, stop func(what string) bool) (result, bool) {
	seed := maphash.MakeSeed()
	seen := map[uint64]struct{}{}
	res := result{violations: map[string]int{}}
	var h hasher
	var path []event
	complete := true
	var visit func(s state)
	visit = func(s state) {
		key := m.hash(seed, &h, &s)
		if _, ok := seen[key]; ok {
			return
		}
		if limit > 0 && len(seen) >= limit || stop != nil && res.first != nil {
			complete = false
			return
		}
		seen[key] = struct{}{}
		for _, bad := range m.check(&s) {
			res.violations[bad]++
			if res.first == nil && (stop == nil || stop(bad)) {
				res.first = &violation{what: bad, trace: append([]event(nil), path...)}
			}
		}
		for _, e := range m.events(&s) {
			next := s
			e.detail = m.apply(&next, e)
			path = append(path, e)
			visit(next)
			path = path[:len(path)-1]
		}
	}
	visit(m.initial())
	res.states = len(seen)
	return res, complete
}

// walk runs histories random histories of at most steps steps each, from a
// fixed seed, and checks the properties in every state. Its states count
// the steps taken.
func (m *model) walk(seed uint64, histories, steps int) result {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	res := result{violations: map[string]int{}}
	for range histories {
		s := m.initial()
		var path []event
		for range steps {
			evs := m.events(&s)
			if len(evs) == 0 {
				break
			}
			e := pickEvent(rng, evs)
			e.detail = m.apply(&s, e)
			if strings.HasPrefix(e.detail, "issued") {
				res.issued++
			}
			path = append(path, e)
			res.states++
			for _, bad := range m.check(&s) {
				res.violations[bad]++
				if res.first == nil {
					res.first = &violation{what: bad, trace: append([]event(nil), path...)}
				}
			}
		}
	}
	return res
}

// driver applies chosen events to a model's state and keeps the trace and
// the properties that failed, for histories written by hand.
type driver struct {
	m     *model
	s     state
	trace []event
	bad   []string
	err   error
}

func (m *model) driver() *driver { return &driver{m: m, s: m.initial()} }

// do applies e, which must be possible.
func (d *driver) do(k eventKind, c, n int) {
	if d.err != nil {
		return
	}
	e := event{kind: k, c: c, n: n}
	if !slices.ContainsFunc(d.m.events(&d.s), func(x event) bool { return x.kind == k && x.c == c && x.n == n }) {
		d.err = fmt.Errorf("event %d (%v) is not possible", len(d.trace)+1, e)
		return
	}
	e.detail = d.m.apply(&d.s, e)
	d.trace = append(d.trace, e)
	d.bad = append(d.bad, d.m.check(&d.s)...)
}

// finish delivers client c's messages (dropping those to the nodes of
// drop) and collects, round after round, until c no longer waits for
// replies.
func (d *driver) finish(c int, drop ...int) {
	for d.err == nil {
		ph := d.s.clients[c].phase
		if ph != obtaining && ph != refreshing && ph != releasing {
			return
		}
		for n := range d.m.nodes {
			if sl := d.s.net[c][n]; sl.op != opNone && !sl.ran {
				if slices.Contains(drop, n) {
					d.do(evDrop, c, n)
				} else {
					d.do(evDeliver, c, n)
				}
			}
		}
		d.do(evCollect, c, 0)
	}
}

// last returns what the last collect decided.
func (d *driver) last() string {
	for i := len(d.trace) - 1; i >= 0; i-- {
		if d.trace[i].kind == evCollect {
			return d.trace[i].detail
		}
	}
	return ""
}

// pickEvent chooses the next step of a random history. Time moves one
// step in 16 (when it can), so that a round usually ends within its
// validity and leases, recoveries and pauses still run out; a holder
// releases one time in 8 that its release is drawn, so that it holds long
// enough for restarts and rivals to happen meanwhile; the other steps are
// chosen uniformly.
func pickEvent(rng *rand.Rand, evs []event) event {
	if evs[0].kind == evTick && (len(evs) == 1 || rng.IntN(16) == 0) {
		return evs[0]
	}
	if evs[0].kind == evTick {
		evs = evs[1:]
	}
	for {
		e := evs[rng.IntN(len(evs))]
		if e.kind != evRelease || rng.IntN(8) == 0 {
			return e
		}
	}
}

// String prints a violation's trace.
func (v *violation) String() string {
	if v == nil {
		return "none"
	}
	var b strings.Builder
	b.WriteString(v.what)
	for i, e := range v.trace {
		fmt.Fprintf(&b, "\n  %3d %v", i+1, e)
	}
	return b.String()
}
