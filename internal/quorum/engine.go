package quorum

import (
	"context"
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // G505: a tag naming a key in stored values, not a security measure
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/keyslot"
)

// Config configures an [Engine].
type Config struct {
	// MaxTTL is the longest TTL the engine sends, and the time a node
	// that lost its data takes nothing (docs/quorum.md, "Node restarts:
	// recovery"). Every client of the same nodes must use the same MaxTTL.
	// Required: at least 3 ms.
	MaxTTL time.Duration
}

// Engine runs the quorum protocol on N independent nodes. It is safe for
// concurrent use. Each call sends its rounds to the nodes in parallel, one
// goroutine per node, and returns only when every one of them has ended.
type Engine struct {
	nodes  []redis.Scripter
	maxTTL time.Duration
	// seen is the highest token or counter any call has seen: round 1
	// proposes above it. Only a hint: any proposal is safe.
	seen atomic.Int64
}

// New returns an engine over nodes, an odd number of at least 3 distinct
// clients, each of one standalone master. The engine keeps the slice's
// elements, not the slice. Bad input is an error matching [ErrInput].
func New(nodes []redis.Scripter, cfg Config) (*Engine, error) {
	if len(nodes) < 3 || len(nodes)%2 == 0 {
		return nil, fmt.Errorf("%w: %d nodes: a quorum needs an odd number of nodes, at least 3", ErrInput, len(nodes))
	}
	for i, c := range nodes {
		if c == nil {
			return nil, fmt.Errorf("%w: node %d is nil", ErrInput, i)
		}
		for j := range i {
			if sameClient(nodes[j], c) {
				return nil, fmt.Errorf("%w: nodes %d and %d are the same client", ErrInput, j, i)
			}
		}
	}
	if cfg.MaxTTL.Truncate(time.Millisecond) < 3*time.Millisecond {
		return nil, fmt.Errorf("%w: MaxTTL %v: at least 3ms", ErrInput, cfg.MaxTTL)
	}
	return &Engine{nodes: append([]redis.Scripter(nil), nodes...), maxTTL: cfg.MaxTTL.Truncate(time.Millisecond)}, nil
}

// Nodes returns the number of nodes.
func (e *Engine) Nodes() int { return len(e.nodes) }

// MaxTTL returns the engine's MaxTTL, in whole milliseconds.
func (e *Engine) MaxTTL() time.Duration { return e.maxTTL }

// Request is what [Engine.Obtain] takes.
type Request struct {
	Keys     []string      // the lock keys, at least one, distinct, none empty
	Token    string        // the holder's token, not empty
	Metadata string        // stored after the token
	TTL      time.Duration // whole milliseconds count; more than 2 ms, at most MaxTTL
	FenceKey string        // the fence counter's key; "" for no fence token
}

// Grant is an obtained lock.
type Grant struct {
	Fence      int64     // the fence token; 0 without FenceKey
	Tag        string    // the acquisition's tag, in its keys' values: Refresh, Release and TTL need it
	Sent       time.Time // when round 1 was sent: the validity starts here
	ValidUntil time.Time // Sent + Validity(TTL), on the monotonic clock
	Nodes      int       // nodes that hold the keys, as far as the last round knows
	Rounds     int       // rounds sent: 1, or 2 and more when the token needed confirming
}

// Obtain takes r.Keys on a majority of the nodes and, with a fence key,
// settles a fence token that is greater than every token issued before
// this call (docs/quorum.md). It blocks until every node answered the
// rounds it sent or their contexts ended: a context whose deadline is
// the validity's end, inside ctx (go-redis bounds socket reads by it only
// with ContextTimeoutEnabled).
//
// On success the lock is held until Grant.ValidUntil. On failure it
// returns a *[Failure] matching [ErrNotObtained] (and, through it, the
// nodes' errors, ctx's error among them when ctx ended), after deleting
// the keys on every node where this call may have written them, whatever
// ctx says (a clean-up bounded by the TTL): nothing is left held by the
// token, except on nodes that did not answer, where the keys expire by
// themselves. A ctx already done sends nothing. Bad input is an error
// matching [ErrInput], before anything is sent.
func (e *Engine) Obtain(ctx context.Context, r Request) (Grant, error) {
	ttl, err := e.check(r.Keys, r.Token, r.TTL, r.FenceKey)
	if err != nil {
		return Grant{}, err
	}
	fenced := r.FenceKey != ""
	keys := make([]string, 0, len(r.Keys)+2)
	keys = append(keys, r.Keys...)
	tag := newTag(r.FenceKey)
	if fenced {
		keys = append(keys, r.FenceKey)
	}
	keys = append(keys, Marker(r.Keys[0]))
	confirmKeys := keys[:len(keys)-1]

	if err := ctx.Err(); err != nil {
		return Grant{}, &Failure{Op: "obtain", Kind: ErrNotObtained, Counts: Counts{Nodes: len(e.nodes)}, Errs: []error{err}}
	}
	sent := time.Now()
	a := newAcquisition(len(e.nodes), fenced, ttl, sent, sent.UnixMicro(), e.seen.Load())
	if a.token >= maxToken {
		return Grant{}, &Failure{Op: "obtain", Kind: ErrNotObtained, Counts: Counts{Nodes: len(e.nodes)}, Errs: []error{errExhausted}}
	}
	rctx, cancel := context.WithDeadline(ctx, sent.Add(Validity(ttl)))
	defer cancel()
	for {
		var replies []nodeReply
		token := a.token
		if a.round == 1 {
			args := obtainArgs(r.Token, r.Metadata, ttl, tag, token, e.maxTTL)
			replies = e.each(rctx, a.target, func(ctx context.Context, c redis.Scripter) nodeReply {
				v, err := obtainScript.Run(ctx, c, keys, args...).Result()
				return parseObtain(v, err, fenced, token)
			})
		} else {
			args := confirmArgs(r.Token, tag, token)
			replies = e.each(rctx, a.target, func(ctx context.Context, c redis.Scripter) nodeReply {
				v, err := confirmScript.Run(ctx, c, confirmKeys, args...).Result()
				return parseConfirm(v, err, token)
			})
		}
		v := a.settle(replies, time.Now())
		e.see(a.high)
		switch v {
		case issue:
			e.see(a.token)
			return Grant{
				Fence:      a.token,
				Tag:        tag,
				Sent:       sent,
				ValidUntil: sent.Add(Validity(ttl)),
				Nodes:      a.counts.Taken,
				Rounds:     a.round,
			}, nil
		case abandon:
			e.clean(ctx, r.Keys, r.Token, tag, a.touched, ttl)
			return Grant{}, &Failure{
				Op:      "obtain",
				Kind:    ErrNotObtained,
				Counts:  a.counts,
				Rounds:  a.round,
				Expired: a.expired,
				Errs:    nodeErrors(replies),
			}
		}
	}
}

// errExhausted: the counters have reached 2^53, the last token Lua's
// numbers hold exactly.
var errExhausted = errors.New("quorum: fence tokens exhausted (2^53)")

// Hold is a lock held through the engine, as [Engine.Refresh] needs it.
type Hold struct {
	Keys       []string
	Token      string
	Tag        string // Grant.Tag
	Metadata   string
	Fence      int64     // the fence token, 0 without a fence key
	ValidUntil time.Time // the end of the current validity (Grant.ValidUntil, Renewal.ValidUntil)
}

// Renewal is a refreshed lock.
type Renewal struct {
	Sent       time.Time // when the refresh was sent
	ValidUntil time.Time // Sent + Validity(ttl), on the monotonic clock
	Nodes      int       // nodes that hold the keys
}

// Refresh extends h's keys to ttl on every node, re-taking them where
// they are missing (expired, or lost in a restart) and free, and says
// whether a majority now holds them. A refresh only continues a lease that
// is still valid: it is not sent once h.ValidUntil has passed, and it
// fails if its last reply comes after h.ValidUntil. It blocks as
// [Engine.Obtain] does, with h.ValidUntil as the rounds' deadline.
//
// On success the lock is held until Renewal.ValidUntil. Otherwise it
// returns a *[Failure] matching [ErrNotHeld] when a majority can no longer
// hold the keys (held by another, missing) or the lease ended, and
// [ErrNoQuorum] when too few nodes answered to tell ([Failure.Transient]
// says whether to retry). It releases nothing. Bad input matches
// [ErrInput].
func (e *Engine) Refresh(ctx context.Context, h Hold, ttl time.Duration) (Renewal, error) {
	ttl, err := e.check(h.Keys, h.Token, ttl, "")
	if err == nil {
		err = checkTag(h.Tag)
	}
	if err != nil {
		return Renewal{}, err
	}
	sent := time.Now()
	if !continuous(sent, h.ValidUntil) {
		return Renewal{}, &Failure{Op: "refresh", Kind: ErrNotHeld, Counts: Counts{Nodes: len(e.nodes)}, Expired: true}
	}
	keys := append(append(make([]string, 0, len(h.Keys)+1), h.Keys...), Marker(h.Keys[0]))
	args := refreshArgs(h.Token, h.Tag, ttl, strconv.FormatInt(h.Fence, 10)+"/"+h.Tag+":"+h.Metadata, e.maxTTL)
	rctx, cancel := context.WithDeadline(ctx, h.ValidUntil)
	defer cancel()
	replies := e.each(rctx, nil, func(ctx context.Context, c redis.Scripter) nodeReply {
		return parseRefresh(refreshScript.Run(ctx, c, keys, args...).Result())
	})
	counts, renewed, lost := refreshVerdict(replies)
	f := &Failure{Op: "refresh", Kind: ErrNoQuorum, Counts: counts, Errs: nodeErrors(replies)}
	switch {
	case !continuous(time.Now(), h.ValidUntil):
		f.Kind, f.Expired = ErrNotHeld, true
	case renewed:
		return Renewal{Sent: sent, ValidUntil: sent.Add(Validity(ttl)), Nodes: counts.Taken}, nil
	case lost:
		f.Kind = ErrNotHeld
	}
	return Renewal{}, f
}

// Release deletes, on every node, the keys that are still the
// acquisition's (token and tag, Grant.Tag) and returns how many nodes
// released them all. The error is a *[Failure] with the nodes' errors
// (each a *[NodeError]); nil when every node answered. Bad input matches
// [ErrInput].
func (e *Engine) Release(ctx context.Context, keys []string, token, tag string) (int, error) {
	if err := checkKeys(keys, token); err != nil {
		return 0, err
	}
	if err := checkTag(tag); err != nil {
		return 0, err
	}
	replies := e.release(ctx, keys, token, tag, nil)
	n := 0
	for _, r := range replies {
		if r.kind == rKept {
			n++
		}
	}
	errs := nodeErrors(replies)
	if len(errs) == 0 {
		return n, nil
	}
	return n, &Failure{Op: "release", Kind: ErrNoQuorum, Counts: tally(replies), Errs: errs}
}

// TTL returns how long a majority of the nodes still holds the
// acquisition's keys (token and tag, Grant.Tag): the Majority-th longest
// of the nodes' remaining times, 0 when fewer than a majority hold them.
// When nodes failed and their answers could have made it longer, it
// returns that lower bound and a *[Failure] matching [ErrNoQuorum]. Bad
// input matches [ErrInput].
func (e *Engine) TTL(ctx context.Context, keys []string, token, tag string) (time.Duration, error) {
	if err := checkKeys(keys, token); err != nil {
		return 0, err
	}
	if err := checkTag(tag); err != nil {
		return 0, err
	}
	replies := e.each(ctx, nil, func(ctx context.Context, c redis.Scripter) nodeReply {
		return parseTTL(ttlScript.Run(ctx, c, keys, token, tag).Result())
	})
	ms, exact := quorumTTL(replies)
	d := time.Duration(ms) * time.Millisecond
	if exact {
		return d, nil
	}
	return d, &Failure{Op: "ttl", Kind: ErrNoQuorum, Counts: tally(replies), Errs: nodeErrors(replies)}
}

// each runs call on every node for which target is true (every node for
// a nil target), each in a goroutine of its own, and returns their
// replies by node (rSkipped for the others) once all have returned.
func (e *Engine) each(ctx context.Context, target []bool, call func(context.Context, redis.Scripter) nodeReply) []nodeReply {
	replies := make([]nodeReply, len(e.nodes))
	var wg sync.WaitGroup
	for i, c := range e.nodes {
		if target != nil && !target[i] {
			continue
		}
		wg.Go(func() { replies[i] = call(ctx, c) })
	}
	wg.Wait()
	return replies
}

// release runs release.lua on the nodes of target (all for nil); a node's
// reply is rKept when it deleted every key.
func (e *Engine) release(ctx context.Context, keys []string, token, tag string, target []bool) []nodeReply {
	return e.each(ctx, target, func(ctx context.Context, c redis.Scripter) nodeReply {
		v, err := releaseScript.Run(ctx, c, keys, token, tag).Result()
		if err != nil {
			return failedReply(err)
		}
		n, ok := v.(int64)
		switch {
		case !ok || n < 0 || n > int64(len(keys)):
			return unexpected("release.lua", v)
		case n == int64(len(keys)):
			return nodeReply{kind: rKept}
		}
		return nodeReply{kind: rLost}
	})
}

// clean releases a failed attempt's keys on the nodes of target, even when
// ctx is done: for at most ttl, after which they have expired.
func (e *Engine) clean(ctx context.Context, keys []string, token, tag string, target []bool, ttl time.Duration) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ttl)
	defer cancel()
	e.release(ctx, keys, token, tag, target)
}

// see raises the highest token seen to v.
func (e *Engine) see(v int64) {
	for {
		cur := e.seen.Load()
		if v <= cur || e.seen.CompareAndSwap(cur, v) {
			return
		}
	}
}

// check checks an obtain's or refresh's input and returns the TTL in whole
// milliseconds.
func (e *Engine) check(keys []string, token string, ttl time.Duration, fenceKey string) (time.Duration, error) {
	if err := checkKeys(keys, token); err != nil {
		return 0, err
	}
	ttl = ttl.Truncate(time.Millisecond)
	if Validity(ttl) <= 0 || ttl > e.maxTTL {
		return 0, fmt.Errorf("%w: TTL %v: more than 2ms and at most MaxTTL (%v)", ErrInput, ttl, e.maxTTL)
	}
	for _, k := range keys {
		if fenceKey != "" && k == fenceKey {
			return 0, fmt.Errorf("%w: fence key %q is also a lock key", ErrInput, fenceKey)
		}
	}
	return ttl, nil
}

// checkKeys checks lock keys and a token.
func checkKeys(keys []string, token string) error {
	if len(keys) == 0 {
		return fmt.Errorf("%w: no lock key", ErrInput)
	}
	if token == "" {
		return fmt.Errorf("%w: empty token", ErrInput)
	}
	for i, k := range keys {
		if k == "" {
			return fmt.Errorf("%w: lock key %d is empty", ErrInput, i)
		}
		for _, other := range keys[:i] {
			if k == other {
				return fmt.Errorf("%w: lock key %q given twice", ErrInput, k)
			}
		}
	}
	return nil
}

// CounterTag returns the tag of fence counter fenceKey: the first 8 hex
// digits of the SHA-1 of the key's name, as the single-node library writes
// it after a lock's fence token ("<token>/<tag>").
func CounterTag(fenceKey string) string {
	sum := sha1.Sum([]byte(fenceKey)) //nolint:gosec // G401: see the import
	return hex.EncodeToString(sum[:4])
}

// nonceLen is the length of an acquisition's nonce, in hex digits.
const nonceLen = 16

// newTag returns the tag of a new acquisition with fenceKey ("" for
// none): CounterTag(fenceKey), then a random nonce of 16 hex digits, so
// that no two acquisitions with one token share a tag (docs/quorum.md).
func newTag(fenceKey string) string {
	var b [nonceLen / 2]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	nonce := hex.EncodeToString(b[:])
	if fenceKey == "" {
		return nonce
	}
	return CounterTag(fenceKey) + nonce
}

// checkTag checks the tag of an acquisition: lower-case hex digits, one
// of newTag's lengths.
func checkTag(tag string) error {
	if len(tag) != nonceLen && len(tag) != nonceLen+8 || strings.Trim(tag, "0123456789abcdef") != "" {
		return fmt.Errorf("%w: tag %q is not an acquisition's (Grant.Tag)", ErrInput, tag)
	}
	return nil
}

// Marker returns the name of the recovery marker of a lock whose first key
// is key: "<key>:redislock:up" for a key with a hash tag (same slot, same
// prefix), "{<key>}:redislock:up:untagged" for one without.
func Marker(key string) string {
	if keyslot.HasTag(key) {
		return key + ":redislock:up"
	}
	if strings.IndexByte(key, '}') < 0 {
		return "{" + key + "}:redislock:up:untagged"
	}
	// Braces would not keep the slot: standalone nodes do not care.
	return key + ":redislock:up:untagged"
}

// sameClient reports whether a and b are the same client value (never
// panicking on a value of a type that == cannot compare).
func sameClient(a, b redis.Scripter) bool {
	ta := reflect.TypeOf(a)
	return ta == reflect.TypeOf(b) && ta.Comparable() && a == b
}

// obtainArgs returns obtain.lua's ARGV; p is 0 unfenced.
func obtainArgs(token, metadata string, ttl time.Duration, tag string, p int64, maxTTL time.Duration) []any {
	return []any{token, metadata, ttl.Milliseconds(), tag, p, maxTTL.Milliseconds(), markerLife(maxTTL)}
}

// confirmArgs returns confirm.lua's ARGV.
func confirmArgs(token, tag string, q int64) []any { return []any{token, tag, q} }

// refreshArgs returns refresh.lua's ARGV; rest is what follows the token
// in the lock's value ("<fence>/<tag>:<metadata>"), "" to re-take nothing.
func refreshArgs(token, tag string, ttl time.Duration, rest string, maxTTL time.Duration) []any {
	return []any{token, tag, ttl.Milliseconds(), rest, maxTTL.Milliseconds(), markerLife(maxTTL)}
}

// markerLife returns how long (ms) a recovery marker lives once its node is
// out of recovery: ten times MaxTTL. Any length is safe (a lost marker is
// found missing); a longer one spares INFO calls.
func markerLife(maxTTL time.Duration) int64 { return 10 * maxTTL.Milliseconds() }
