package quorum

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/redistest"
	"github.com/redislock/redislock/internal/script"
)

// TestMirrorMatchesScripts runs random calls of every script, and random
// meddling with their keys, on a real server and on the Go mirror the
// model checker uses, and compares each reply and every key afterwards.
// Values that come from the server's clock (a counter set to TIME, a
// recovery's end) are compared within a tolerance and then copied into the
// mirror; the calls keep every comparison with them far from the edge.
func TestMirrorMatchesScripts(t *testing.T) {
	for _, f := range []redistest.Flavor{redistest.Redis, redistest.Valkey9} {
		for _, aofOn := range []bool{true, false} {
			name := string(f) + map[bool]string{true: " aof", false: " no persistence"}[aofOn]
			t.Run(name, func(t *testing.T) {
				var args []string
				if aofOn {
					args = []string{"--appendonly", "yes"}
				}
				s := redistest.NewServer(t, f, args...)
				d := &differ{t: t, c: newTestClient(t, s.Addr()), m: newMapStore(), aof: aofOn, rng: rand.New(rand.NewPCG(35, uint64(len(name))))}
				d.m.aof = aofOn
				for i := range 3000 {
					d.step(i)
				}
				want := []string{
					"obtain held", "obtain taken", "obtain confirmed", "obtain low", "obtain error",
					"confirm confirmed", "confirm low", "confirm lost", "confirm error",
					"refresh held", "refresh other", "refresh missing",
					"release 0", "release 1", "ttl 0", "ttl >0",
				}
				if !aofOn {
					want = append(want, "obtain recovering")
				}
				for _, w := range want {
					if d.seen[w] == 0 {
						t.Errorf("no call answered %q (seen: %v)", w, d.seen)
					}
				}
			})
		}
	}
}

// The keys of the differential test.
const (
	diffA     = "{d}:a"
	diffB     = "{d}:b"
	diffFence = "{d}:f"
)

var (
	diffMarker = Marker(diffA)
	diffKeys   = []string{diffA, diffB, diffFence, diffMarker}
	// diffTags are acquisitions' tags, two of them as fenced ones are (the
	// counter's tag first).
	diffTags   = []string{CounterTag(diffFence) + "0123456789abcdef", CounterTag(diffFence) + "fedcba9876543210", "00000000deadbeef"}
	diffTokens = []string{"t1", "t1", "t2"}
)

// tolerance bounds the difference between the server's clock in a script
// and the TIME read just before it.
const tolerance = 5 * time.Second

type differ struct {
	t    *testing.T
	c    *redis.Client
	m    *mapStore
	aof  bool
	rng  *rand.Rand
	seen map[string]int // replies seen, by script and kind
}

func (d *differ) pick(v ...string) string { return v[d.rng.IntN(len(v))] }

// sync sets the mirror's clock and INFO to the server's.
func (d *differ) sync() {
	ctx := context.Background()
	now, err := d.c.Time(ctx).Result()
	if err != nil {
		d.t.Fatal(err)
	}
	d.m.micros, d.m.nowMs = now.UnixMicro(), now.UnixMilli()
	up, err := strconv.ParseInt(redistest.Info(d.t, d.c, "server", "uptime_in_seconds"), 10, 64)
	if err != nil {
		d.t.Fatal(err)
	}
	d.m.uptime = up
}

// proposal returns a token to propose or confirm: near the counter when
// it exists (exact comparisons), far from the clock when it does not.
func (d *differ) proposal() int64 {
	if v, ok := d.m.get(diffFence); ok {
		if c, err := strconv.ParseInt(v, 10, 64); err == nil {
			return max(minToken, c+int64(d.rng.IntN(5))-2)
		}
	}
	if d.rng.IntN(2) == 0 {
		return minToken
	}
	return d.m.micros + int64(time.Minute/time.Microsecond)
}

func (d *differ) step(i int) {
	t := d.t
	ctx := context.Background()
	d.sync()
	lockKeys := [][]string{{diffA}, {diffA, diffB}, {diffB, diffA}}[d.rng.IntN(3)]
	// Three acquisitions: two with one token (as the attempts of one call),
	// one with another.
	id := d.rng.IntN(3)
	if d.rng.IntN(3) != 0 {
		// Mostly the acquisition that holds the first key, if any, so
		// that calls get past the ownership check.
		v, ok := d.m.get(diffA)
		for i := range diffTags {
			if mine(v, ok, owner(diffTokens[i]), diffTags[i]) {
				id = i
			}
		}
	}
	token, tag := diffTokens[id], diffTags[id]
	const window = 100 * time.Second // recovery: far from now
	var desc string
	var sc *script.Script
	var keys []string
	var args []any
	var mirror func(store, []string, []string) (int64, error)
	switch op := d.rng.IntN(9); op {
	case 0, 1, 2:
		fenced := d.rng.IntN(4) != 0
		keys = append(append([]string(nil), lockKeys...), diffMarker)
		var p int64
		if fenced {
			keys = append(append(append([]string(nil), lockKeys...), diffFence), diffMarker)
			p = d.proposal()
		}
		args = obtainArgs(token, d.pick("", "m", "x:y"), 100*time.Second, tag, p, window)
		sc, mirror, desc = obtainScript, mirrorObtain, "obtain"
	case 3:
		keys = append(append([]string(nil), lockKeys...), diffFence)
		args = confirmArgs(token, tag, d.proposal())
		sc, mirror, desc = confirmScript, mirrorConfirm, "confirm"
	case 4:
		keys = append(append([]string(nil), lockKeys...), diffMarker)
		args = refreshArgs(token, tag, 90*time.Second, d.pick("", "0/"+tag+":", "12/"+tag+":meta", "12/abcd0123:meta"), window)
		sc, mirror, desc = refreshScript, mirrorRefresh, "refresh"
	case 5:
		keys, args = lockKeys, []any{token, tag}
		sc, mirror, desc = releaseScript, mirrorRelease, "release"
	case 6:
		keys, args = lockKeys, []any{token, tag}
		sc, mirror, desc = ttlScript, mirrorTTL, "ttl"
	default:
		d.meddle()
		d.compare(i, "meddle")
		return
	}
	got, gotErr := sc.Run(ctx, d.c, keys, args...).Int64()
	want, wantErr := mirror(d.m, keys, argv(args))
	opName := desc
	desc += " " + strings.Join(keys, ",") + " " + strings.Join(argv(args), ",")
	if d.seen == nil {
		d.seen = map[string]int{}
	}
	d.seen[opName+" "+kindOf(opName, got, gotErr, args)]++
	switch {
	case (gotErr == nil) != (wantErr == nil):
		t.Fatalf("step %d, %s: server %d, %v; mirror %d, %v", i, desc, got, gotErr, want, wantErr)
	case gotErr != nil:
		if gotErr.Error() != wantErr.Error() {
			t.Fatalf("step %d, %s: server error %q, mirror error %q", i, desc, gotErr, wantErr)
		}
	case opName == "ttl" && got > 0 && want > 0:
		// A remaining time: by two clocks.
		if max(got-want, want-got) > tolerance.Milliseconds() {
			t.Fatalf("step %d, %s: server %d ms, mirror %d ms", i, desc, got, want)
		}
	case !near(got, want):
		t.Fatalf("step %d, %s: server %d, mirror %d", i, desc, got, want)
	}
	d.compare(i, desc)
}

// kindOf names a script's reply, for the coverage check.
func kindOf(op string, v int64, err error, args []any) string {
	if err != nil {
		return "error"
	}
	switch op {
	case "obtain":
		switch {
		case v == 1:
			return "held"
		case v == 2:
			return "recovering"
		case v == 0:
			return "taken"
		case v < 0:
			return "low"
		}
		return "confirmed"
	case "confirm":
		switch {
		case v == 0:
			return "lost"
		case v < 0:
			return "low"
		}
		return "confirmed"
	case "refresh":
		return map[int64]string{1: "held", 0: "missing", -1: "other"}[v]
	case "ttl":
		if v > 0 {
			return ">0"
		}
	}
	return strconv.FormatInt(v, 10)
}

// near reports whether a and b are equal, or both times in µs or ms
// within the tolerance of each other (a counter or a recovery's end, set
// from the server's clock).
func near(a, b int64) bool {
	if a == b {
		return true
	}
	const ms = int64(1e12) // a time in ms since 1970 is above
	if a < 0 && b < 0 {
		a, b = -a, -b
	}
	if a < ms || b < ms {
		return false
	}
	diff := max(a-b, b-a)
	return diff <= tolerance.Microseconds()
}

// meddle changes a key on both sides as another client, an expiry or an
// operator would.
func (d *differ) meddle() {
	ctx := context.Background()
	k := diffKeys[d.rng.IntN(len(diffKeys))]
	var value string
	switch k {
	case diffFence:
		value = d.pick("", "12", "x1", "-5", strconv.FormatInt(d.m.micros-1, 10), strconv.FormatInt(maxToken, 10))
	case diffMarker:
		value = d.pick("", "0", strconv.FormatInt(d.m.nowMs-int64(time.Hour/time.Millisecond), 10), strconv.FormatInt(d.m.nowMs+int64(time.Hour/time.Millisecond), 10))
	default:
		value = d.pick("", "2:t3:0:", "2:t1:99/abcd0123:old", "2:t1:0/"+diffTags[0]+":", "2:t2:7/"+diffTags[1]+":", "2:t1:7/"+diffTags[2]+":x")
	}
	if value == "" {
		if err := d.c.Del(ctx, k).Err(); err != nil {
			d.t.Fatal(err)
		}
		d.m.del(k)
		return
	}
	if err := d.c.Set(ctx, k, value, 80*time.Second).Err(); err != nil {
		d.t.Fatal(err)
	}
	d.m.set(k, value, 80_000)
}

// compare checks every key on both sides, and copies into the mirror the
// server's clock values that it accepted as near.
func (d *differ) compare(i int, desc string) {
	ctx := context.Background()
	for _, k := range diffKeys {
		v, err := d.c.Get(ctx, k).Result()
		ok := err == nil
		if err != nil && err != redis.Nil {
			d.t.Fatal(err)
		}
		mv, mok := d.m.get(k)
		if ok != mok || v != mv && !nearText(v, mv) {
			d.t.Fatalf("step %d, %s: %s is %q (%v) on the server, %q (%v) in the mirror", i, desc, k, v, ok, mv, mok)
		}
		pttl, err := d.c.PTTL(ctx, k).Result()
		if err != nil {
			d.t.Fatal(err)
		}
		ms := pttl.Milliseconds()
		if pttl < 0 {
			ms = int64(pttl / time.Nanosecond) // go-redis gives -1 and -2 as they are
		}
		mms := d.m.pttl(k)
		if (ms < 0 || mms < 0) && ms != mms || ms >= 0 && max(ms-mms, mms-ms) > tolerance.Milliseconds() {
			d.t.Fatalf("step %d, %s: %s has PTTL %d on the server, %d in the mirror", i, desc, k, ms, mms)
		}
		if ok {
			e := d.m.keys[k]
			e.value = v
			if ms > 0 {
				e.exp = d.m.nowMs + ms
			}
			d.m.keys[k] = e
		}
	}
}

// nearText reports whether two values are numbers that near accepts.
func nearText(a, b string) bool {
	x, err1 := strconv.ParseInt(a, 10, 64)
	y, err2 := strconv.ParseInt(b, 10, 64)
	return err1 == nil && err2 == nil && near(x, y)
}
