package quorum

import (
	"flag"
	"slices"
	"strings"
	"testing"
	"time"
)

// deep runs the model checker's larger configurations (minutes, about a
// gigabyte): go test ./internal/quorum/ -run TestModel -quorum.deep (the
// flag after the package)
var deep = flag.Bool("quorum.deep", false, "run the model checker's larger configurations")

const ms = time.Millisecond

// small is the base of the exhaustive configurations: 3 nodes, 2 clients,
// a TTL (and MaxTTL) of 2 ticks, so that validity ends at the tick where
// keys expire.
var small = config{
	design:       designQuorum,
	fenced:       true,
	nodes:        3,
	clients:      2,
	acquisitions: 1,
	kinds:        []nodeKind{durable, durable, durable},
	ttl:          20 * ms,
	tick:         10 * ms,
	ticks:        3,
}

func with(c config, f func(*config)) config {
	c.kinds = slices.Clone(c.kinds)
	f(&c)
	return c
}

// exhaustive are the configurations explored completely: every
// interleaving of every node's scripts, every tick and (within their
// budgets) every loss, duplicate, late arrival and restart. States are
// counted after the reductions (node symmetry, expiries past the horizon).
type named struct {
	name string
	c    config
	deep bool // only with -quorum.deep
}

var exhaustive = []named{
	{"fenced", with(small, func(c *config) { c.ticks = 4 }), false},
	{"unfenced", with(small, func(c *config) { c.ticks = 4; c.fenced = false }), false},
	{"a refresh each", with(small, func(c *config) { c.refreshes = 1 }), false},
	// docs/quorum.md: not sending a refresh once the lease has ended only
	// spares a round; safety holds without it.
	{"refreshes sent after the lease ended", with(small, func(c *config) { c.refreshes = 1; c.lateSend = true }), false},
	// One tick: the node restarts and refuses (its recovery lasts two);
	// the longer runs see the recovery end.
	{"a node without persistence restarts", with(small, func(c *config) { c.ticks = 1; c.kinds[0] = volatile; c.restarts = 1 }), false},
	{"a message lost, late or run twice", with(small, func(c *config) { c.ticks = 2; c.faults = 1 }), false},
	// The attempts of one call share its token: a late release of one must
	// not remove the keys of the next (TestCheckerFindsReleaseOfAnotherAttempt).
	{"two attempts with one token, a fault", with(small, func(c *config) { c.acquisitions = 2; c.reuseToken = true; c.ticks = 0; c.faults = 1 }), false},
	{"a message lost, late or run twice, longer", with(small, func(c *config) { c.faults = 1 }), true},
	{"two acquisitions each", with(small, func(c *config) { c.acquisitions = 2 }), true},
	{"two acquisitions each, one token per client", with(small, func(c *config) { c.acquisitions = 2; c.reuseToken = true; c.ticks = 2; c.faults = 1 }), true},
	{"a refresh each and a fault", with(small, func(c *config) { c.refreshes = 1; c.faults = 1 }), true},
	{"a node without persistence restarts, longer", with(small, func(c *config) { c.ticks = 2; c.kinds[0] = volatile; c.restarts = 1 }), true},
	{"every node without persistence, two restarts", with(small, func(c *config) {
		c.kinds = []nodeKind{volatile, volatile, volatile}
		c.restarts = 2
		c.ticks = 2
	}), true},
	{"three clients", with(small, func(c *config) { c.clients = 3; c.ticks = 2 }), true},
}

func TestModelExhaustive(t *testing.T) {
	for _, x := range exhaustive {
		t.Run(x.name, func(t *testing.T) {
			if x.deep && !*deep {
				t.Skip("with -quorum.deep")
			}
			c := x.c
			if raceBuild && !*deep && c.ticks > 1 {
				c.ticks--
			}
			start := time.Now()
			res, complete := newModel(c).explore(0, func(string) bool { return true })
			if res.first != nil {
				t.Fatalf("%d states: %v", res.states, res.first)
			}
			if !complete {
				t.Fatalf("stopped after %d states", res.states)
			}
			t.Logf("%d ticks: %d states, every one checked, in %v", c.ticks, res.states, time.Since(start).Round(time.Millisecond))
		})
	}
}

// walks are the configurations checked over random histories: 5 nodes, 3
// clients, nodes restarting with and without persistence.
var fiveNodes = config{
	design:       designQuorum,
	fenced:       true,
	nodes:        5,
	clients:      3,
	acquisitions: 4,
	refreshes:    2,
	kinds:        []nodeKind{durable, volatile, durable, volatile, volatile},
	ttl:          50 * ms,
	tick:         10 * ms,
	ticks:        30,
	restarts:     4,
	faults:       6,
}

func TestModelRandomHistories(t *testing.T) {
	histories := 4000
	switch {
	case *deep:
		histories = 200_000
	case raceBuild:
		histories = 1000
	}
	for _, x := range []named{
		{"fenced", fiveNodes, false},
		{"unfenced", with(fiveNodes, func(c *config) { c.fenced = false }), false},
		{"clocks 5ms apart", with(fiveNodes, func(c *config) {
			c.clientSkew = []int64{5000, -3000, 0}
			c.nodeSkew = []int64{-5000, 2000, 0, 4000, -1000}
		}), false},
		{"one token per client", with(fiveNodes, func(c *config) { c.reuseToken = true }), false},
		{"three nodes", with(fiveNodes, func(c *config) { c.nodes = 3; c.kinds = c.kinds[:3] }), false},
	} {
		t.Run(x.name, func(t *testing.T) {
			res := newModel(x.c).walk(35, histories, 400)
			if res.first != nil {
				t.Fatalf("%v", res.first)
			}
			if res.issued < histories {
				t.Fatalf("%d histories issued %d leases: too few to check anything", histories, res.issued)
			}
			t.Logf("%d histories, %d steps, %d leases issued, every state checked", histories, res.states, res.issued)
		})
	}
}

// TestModelCountsOverlapsWhenDataIsLost: nodes that lose data they claim
// to keep (AOF with everysec and a machine crash, a deleted AOF) are
// outside the assumptions. The checker counts what it costs, in states
// where two clients hold valid leases, or a token is out of order.
func TestModelCountsOverlapsWhenDataIsLost(t *testing.T) {
	three := with(fiveNodes, func(c *config) { c.nodes = 3; c.kinds = []nodeKind{durable, durable, durable} })
	for _, x := range []named{
		{"3 nodes, one amnesiac", with(three, func(c *config) { c.kinds[0] = amnesiac }), false},
		{"3 nodes, one rolled back", with(three, func(c *config) { c.kinds[0] = rollback }), false},
	} {
		t.Run(x.name, func(t *testing.T) {
			histories := 4000
			if raceBuild {
				histories = 2000
			}
			res := newModel(x.c).walk(35, histories, 400)
			if len(res.violations) == 0 {
				t.Fatalf("no violation in %d steps: the checker does not see lost data", res.states)
			}
			t.Logf("of %d states: %v", res.states, res.violations)
		})
	}
}

// The designs and rules the checker must find broken, each the smallest
// counterexample it finds.
func TestCheckerFindsMaxOfIncr(t *testing.T) {
	c := with(small, func(c *config) { c.design = designMaxIncr; c.acquisitions = 2; c.ticks = 1; c.faults = 2 })
	expectViolation(t, c, "a token issued that is not above one issued before")
}

func TestCheckerFindsKeysExpiringBeyondTheDrift(t *testing.T) {
	// Nodes whose clocks run 50% fast: keys expire a tick early.
	c := with(small, func(c *config) { c.early = []time.Duration{10 * ms, 10 * ms, 10 * ms} })
	expectViolation(t, c, "two clients hold valid leases")
}

func TestCheckerFindsRedlockWithoutRecovery(t *testing.T) {
	// One node loses its data and takes keys at once: Redlock without a
	// delayed restart.
	c := with(small, func(c *config) { c.kinds[0] = amnesiac; c.restarts = 1; c.ticks = 1 })
	expectViolation(t, c, "two clients hold valid leases")
}

// TestCheckerFindsReleaseOfAnotherAttempt: with ownership by token alone
// (every acquisition of a client one tag), the late release of an
// earlier attempt removes a key the next attempt counts, and another
// client is issued a token in between.
func TestCheckerFindsReleaseOfAnotherAttempt(t *testing.T) {
	expectViolation(t, with(small, func(c *config) {
		c.acquisitions = 2
		c.reuseToken = true
		c.sharedTag = true
		c.ticks = 0
		c.faults = 1
	}), "a token issued that is not above one issued before")
}

// TestCheckerFindsRefreshWithoutContinuity: a refresh whose replies count
// after the lease ended revives it after another holder came and went. (Not
// sending a refresh once the lease has ended is not needed for safety, its
// replies would come too late anyway: it saves a round that cannot count.)
func TestCheckerFindsRefreshWithoutContinuity(t *testing.T) {
	expectViolation(t, with(small, func(c *config) { c.refreshes = 1; c.lateReply = true }), "a valid holder's token is below one issued")
}

func expectViolation(t *testing.T, c config, want string) {
	t.Helper()
	res, _ := newModel(c).explore(0, func(what string) bool { return what == want })
	if res.first == nil {
		t.Fatalf("no %q in %d states (found %v)", want, res.states, res.violations)
	}
	t.Logf("after %d states:\n%v", res.states, res.first)
}

// TestLostCounterNeedsClocksWithinMaxTTL replays one history: node 0 (no
// persistence) is the only node two acquisitions share, and restarts in
// between. Client 0's clock is skew ahead. The later token is greater
// when the skew is under the time node 0 takes nothing after it lost its
// counter (here MaxTTL, 20 ms), and smaller when it is over: docs/quorum.md's
// assumption C.
func TestLostCounterNeedsClocksWithinMaxTTL(t *testing.T) {
	for _, tc := range []struct {
		skew time.Duration
		bad  bool
	}{{0, false}, {15 * ms, false}, {25 * ms, true}, {time.Second, true}} {
		c := with(small, func(c *config) {
			c.kinds[0] = volatile
			c.acquisitions = 3
			c.ticks = 6
			c.restarts = 2
			c.faults = 1
			c.clientSkew = []int64{tc.skew.Microseconds()}
		})
		d := newModel(c).driver()
		// Client 1 first: node 0 starts its recovery, the others take a
		// token; then client 1 lets go, and the recovery ends.
		d.do(evStart, 1, 0)
		d.finish(1)
		d.do(evRelease, 1, 0)
		d.finish(1)
		d.do(evTick, 0, 0)
		d.do(evTick, 0, 0)
		// Client 0, its clock ahead, wins nodes 0 and 1 (its request to
		// node 2 is lost), and lets go.
		d.do(evStart, 0, 0)
		d.finish(0, 2)
		tA := d.last()
		d.do(evRelease, 0, 0)
		d.finish(0)
		// Node 0 restarts without its data; node 1 dies.
		d.do(evCrash, 0, 0)
		d.do(evRecover, 0, 0)
		d.do(evCrash, 0, 1)
		// Client 1 finds node 0 recovering, and tries again once it is
		// over: nodes 0 and 2 are a majority.
		d.do(evStart, 1, 0)
		d.finish(1)
		d.do(evTick, 0, 0)
		d.do(evTick, 0, 0)
		d.do(evStart, 1, 0)
		d.finish(1)
		tB := d.last()
		trace := (&violation{what: "trace", trace: d.trace}).String()
		if d.err != nil {
			t.Fatalf("skew %v: %v\n%s", tc.skew, d.err, trace)
		}
		if !strings.HasPrefix(tA, "issued") || !strings.HasPrefix(tB, "issued") {
			t.Fatalf("skew %v: the acquisitions ended %q and %q, want both issued\n%s", tc.skew, tA, tB, trace)
		}
		t.Logf("client 0's clock %v ahead: %s, then %s (µs past the model's epoch)", tc.skew, tA, tB)
		regressed := slices.Contains(d.bad, "a token issued that is not above one issued before")
		if regressed != tc.bad {
			t.Errorf("skew %v: %s then %s; tokens out of order %v, want %v\n%s", tc.skew, tA, tB, regressed, tc.bad, trace)
		}
	}
}
