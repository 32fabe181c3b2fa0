package session

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock/internal/keyslot"
	"github.com/redislock/redislock/internal/script"
)

// transport is how a session's calls reach Redis: the go-redis client
// (redisTransport), or a fake in the timing tests.
type transport interface {
	// route returns the name of the node that serves key ("" for a
	// client of one node, or when it cannot tell). It may block while a
	// Cluster client loads its slot map for the first time.
	route(ctx context.Context, key string) string
	// run sends calls in one round trip (per node) and returns their
	// replies in order. With merge, calls of Config.One may go as calls
	// of Config.Many.
	run(ctx context.Context, calls []Call, merge bool) []Reply
	// moved returns the entries of b, just sent, whose keys another node
	// serves now.
	moved(ctx context.Context, b *batch) []moved
}

// redisTransport sends through a go-redis client.
type redisTransport struct {
	client    redis.Scripter
	pipeline  func() redis.Pipeliner // nil: the client has no pipelines
	cluster   *redis.ClusterClient   // nil: not a Cluster
	merge     bool                   // Many may be used: a client whose deployment runs a script's keys together
	one, many *script.Script
}

// newRedis returns the transport of client.
func newRedis(client redis.Scripter, cfg Config) *redisTransport {
	t := &redisTransport{client: client, one: cfg.One, many: cfg.Many}
	if p, ok := client.(interface{ Pipeline() redis.Pipeliner }); ok {
		t.pipeline = p.Pipeline
	}
	switch c := client.(type) {
	case *redis.ClusterClient:
		t.cluster, t.merge = c, true
	case *redis.Client:
		t.merge = true
	}
	t.merge = t.merge && t.one != nil && t.many != nil
	return t
}

func (t *redisTransport) route(ctx context.Context, key string) string {
	if t.cluster == nil {
		return ""
	}
	n, err := t.cluster.MasterForKey(ctx, key)
	if err != nil {
		return ""
	}
	return n.Options().Addr
}

func (t *redisTransport) moved(ctx context.Context, b *batch) []moved {
	if t.cluster == nil {
		return nil
	}
	var out []moved
	served := map[int]string{}
	j := 0
	for i := range b.entries {
		if b.out[i].skipped {
			continue
		}
		key := b.calls[j].Keys[0]
		j++
		slot := keyslot.Slot(key)
		name, ok := served[slot]
		if !ok {
			name = t.route(ctx, key)
			served[slot] = name
		}
		if name != b.node.name && name != "" {
			out = append(out, moved{i: i, node: name})
		}
	}
	return out
}

// part is one script call on the wire: one call, or a call of Many for
// several calls of One (idx).
type part struct {
	script *script.Script
	keys   []string
	args   []any
	idx    []int // the calls it answers, in order; one for a call of its own
	cmd    *redis.Cmd
}

func (t *redisTransport) run(ctx context.Context, calls []Call, merge bool) []Reply {
	out := make([]Reply, len(calls))
	if t.pipeline == nil {
		for i, c := range calls {
			out[i] = reply(c.Script.Run(ctx, t.client, c.Keys, c.Args...).Result())
		}
		return out
	}
	parts := t.parts(calls, merge && t.merge)
	t.exec(ctx, parts, false)
	// Scripts the server did not have cached: again, with their source.
	var again []*part
	for _, p := range parts {
		if script.IsNoScript(p.cmd.Err()) {
			again = append(again, p)
		}
	}
	t.exec(ctx, again, true)
	// A call of Many that failed with an error reply that is not transient
	// (a key of one lease holding another type): each of its leases alone,
	// so that the error is that lease's only.
	var split []*part
	for _, p := range parts {
		if err := p.cmd.Err(); len(p.idx) > 1 && err != nil && isReply(err) && !script.Transient(err) {
			for _, i := range p.idx {
				c := calls[i]
				split = append(split, &part{script: c.Script, keys: c.Keys, args: c.Args, idx: []int{i}})
			}
		}
	}
	t.exec(ctx, split, true)
	for _, p := range parts {
		t.answer(out, p)
	}
	for _, p := range split {
		t.answer(out, p)
	}
	return out
}

// parts makes the script calls of calls: with merge, the calls of One of
// each hash slot (or all of them, off a Cluster) with the same TTL go by
// ManyLimit as calls of Many.
func (t *redisTransport) parts(calls []Call, merge bool) []*part {
	parts := make([]*part, 0, len(calls))
	type group struct {
		slot int
		ms   any
	}
	var groups map[group][]int
	for i, c := range calls {
		if merge && c.Script == t.one && len(c.Args) == 2 {
			g := group{ms: c.Args[1]}
			if t.cluster != nil {
				g.slot = keyslot.Slot(c.Keys[0])
			}
			if groups == nil {
				groups = make(map[group][]int)
			}
			groups[g] = append(groups[g], i)
			continue
		}
		parts = append(parts, &part{script: c.Script, keys: c.Keys, args: c.Args, idx: []int{i}})
	}
	for g, idx := range groups {
		for len(idx) > 0 {
			n := min(len(idx), ManyLimit)
			if n == 1 {
				c := calls[idx[0]]
				parts = append(parts, &part{script: c.Script, keys: c.Keys, args: c.Args, idx: idx[:1]})
				break
			}
			p := &part{script: t.many, idx: idx[:n:n], args: make([]any, 1, 1+2*n)}
			p.args[0] = g.ms
			for _, i := range p.idx {
				c := calls[i]
				p.keys = append(p.keys, c.Keys...)
				p.args = append(p.args, int64(len(c.Keys)), c.Args[0])
			}
			parts = append(parts, p)
			idx = idx[n:]
		}
	}
	return parts
}

// exec sends parts in one pipeline, with EVAL (source) or EVALSHA.
func (t *redisTransport) exec(ctx context.Context, parts []*part, source bool) {
	if len(parts) == 0 {
		return
	}
	pipe := t.pipeline()
	for _, p := range parts {
		if source {
			p.cmd = p.script.QueueEval(ctx, pipe, p.keys, p.args...)
		} else {
			p.cmd = p.script.Queue(ctx, pipe, p.keys, p.args...)
		}
	}
	_, err := pipe.Exec(ctx)
	script.ReloadAfter(ctx, t.client, err)
}

// answer writes the replies of p into out.
func (t *redisTransport) answer(out []Reply, p *part) {
	v, err := p.cmd.Result()
	if len(p.idx) == 1 {
		out[p.idx[0]] = reply(v, err)
		return
	}
	if err != nil {
		if isReply(err) && !script.Transient(err) {
			return // split: each call's reply is its own part's
		}
		for _, i := range p.idx {
			out[i] = Reply{Err: err}
		}
		return
	}
	list, ok := v.([]any)
	if !ok || len(list) != len(p.idx) {
		for _, i := range p.idx {
			out[i] = Reply{Err: fmt.Errorf("unexpected reply to a batch of %d refreshes: %#v", len(p.idx), v)}
		}
		return
	}
	for k, i := range p.idx {
		out[i] = reply(list[k], nil)
	}
}

// reply is the Reply of a script call that returned v, err.
func reply(v any, err error) Reply {
	if err != nil {
		return Reply{Err: err}
	}
	n, ok := v.(int64)
	if !ok {
		return Reply{Err: fmt.Errorf("unexpected reply %#v", v)}
	}
	return Reply{N: n}
}
