// Package script is the one way the library runs its Lua scripts: EVALSHA,
// EVAL when the server answers NOSCRIPT (a restarted server, a promoted
// replica, SCRIPT FLUSH), the read-only variants where the server has them,
// the same fallback for scripts sent in pipelines, and, on a Redis Cluster
// client, a reload of the slot map after a network failure.
//
// A script's source is the concatenation of parts: shared helper functions
// (the exact-token ownership check, the handover) first, then the body of
// one verb, whose header lists its KEYS, ARGV and replies. Lua compiles the
// whole text once per server and caches it by its SHA-1.
//
// On the go-redis client types whose EvalSha only builds the command and
// hands it to Process (*redis.Client, *redis.ClusterClient, *redis.Ring),
// [Script.Run] builds the same command itself, with the hash boxed once,
// and hands it to Process: the same command through the same hooks, with
// fewer allocations. Any other Scripter (a wrapper of the caller's own)
// has its EvalSha and Eval called.
//
// A Script is immutable after New and safe for concurrent use.
package script

import (
	"context"
	"encoding"
	"errors"
	"io/fs"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Script is one Lua script.
type Script struct {
	src string
	s   *redis.Script
	// hash and text are s's hash and src, boxed once (see run).
	hash, text any
}

// New returns the script whose source is the concatenation of parts, in
// order.
func New(parts ...string) *Script {
	src := strings.Join(parts, "\n")
	s := &Script{src: src, s: redis.NewScript(src)}
	s.hash, s.text = s.s.Hash(), src
	return s
}

// Files returns what makes a script of files of dir in fsys: of the files
// named names (each without its ".lua"), in order. It panics when a file
// is missing, which only a broken build can cause.
func Files(fsys fs.FS, dir string) func(names ...string) *Script {
	return func(names ...string) *Script {
		parts := make([]string, len(names))
		for i, name := range names {
			b, err := fs.ReadFile(fsys, dir+"/"+name+".lua")
			if err != nil {
				panic("redislock: " + err.Error())
			}
			parts[i] = string(b)
		}
		return New(parts...)
	}
}

// Hash returns the SHA-1 of the script's source, as EVALSHA takes it.
func (s *Script) Hash() string { return s.s.Hash() }

// Run runs the script through c with EVALSHA, and with EVAL when the server
// does not have it cached. After a network failure on a *redis.ClusterClient
// it asks the client to reload its slot map (see [ReloadAfter]). The reply
// or error is in the returned command, as go-redis gives it.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	cmd := s.run(ctx, c, false, keys, args)
	ReloadAfter(ctx, c, cmd.Err())
	return cmd
}

// Do runs the script as [Script.RunRO] does when ro, else as
// [Script.Run], and returns its reply or error.
func (s *Script) Do(ctx context.Context, c redis.Scripter, ro bool, keys []string, args ...any) (any, error) {
	if ro {
		return s.RunRO(ctx, c, keys, args...).Result()
	}
	return s.Run(ctx, c, keys, args...).Result()
}

// RunRO runs a script that writes nothing with EVALSHA_RO (EVAL_RO when not
// cached), which a server can refuse to let write and an ACL can allow
// where EVAL is not. A server that does not know these commands (Redis
// before 7.0), or an ACL that allows EVALSHA but not EVALSHA_RO, gets
// [Script.Run] instead, one round trip later.
func (s *Script) RunRO(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	cmd := s.run(ctx, c, true, keys, args)
	if err := cmd.Err(); unknownCommand(err) || redis.HasErrorPrefix(err, "NOPERM") {
		return s.Run(ctx, c, keys, args...)
	}
	ReloadAfter(ctx, c, cmd.Err())
	return cmd
}

// processor is what sends a go-redis command: a client's Process, which
// runs the client's hooks, its retries and, on a cluster, its routing.
type processor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
}

// direct returns c as a processor when [Script.Run] may build the command
// of EVALSHA itself: c is a go-redis client whose EvalSha builds that
// command and hands it to its Process, and go-redis would take args as
// they are (it spreads a single argument that is a slice, a map or a
// struct). Otherwise nil: c's own EvalSha and Eval run.
func direct(c redis.Scripter, args []any) processor {
	if len(args) == 1 {
		switch args[0].(type) {
		case string, int64, int, encoding.BinaryMarshaler:
		default:
			return nil
		}
	}
	switch c := c.(type) {
	case *redis.Client:
		return c
	case *redis.ClusterClient:
		return c
	case *redis.Ring:
		return c
	}
	return nil
}

// run runs the script as go-redis's Script.Run (ro: RunRO) does: EVALSHA,
// then EVAL when the server answers NOSCRIPT; built here when c is
// [direct].
func (s *Script) run(ctx context.Context, c redis.Scripter, ro bool, keys []string, args []any) *redis.Cmd {
	p := direct(c, args)
	switch {
	case p == nil && ro:
		return s.s.RunRO(ctx, c, keys, args...)
	case p == nil:
		return s.s.Run(ctx, c, keys, args...)
	}
	// Constants: boxed without an allocation.
	evalsha, eval := any("evalsha"), any("eval")
	if ro {
		evalsha, eval = "evalsha_ro", "eval_ro"
	}
	cmd := send(ctx, p, evalsha, s.hash, keys, args)
	if IsNoScript(cmd.Err()) {
		cmd = send(ctx, p, eval, s.text, keys, args)
	}
	return cmd
}

// send sends the command that go-redis's EvalSha (name "evalsha", head
// the hash) or Eval (name "eval", head the source) builds, through p,
// and returns it.
func send(ctx context.Context, p processor, name, head any, keys []string, args []any) *redis.Cmd {
	cmdArgs := make([]any, 3+len(keys)+len(args))
	cmdArgs[0], cmdArgs[1], cmdArgs[2] = name, head, len(keys)
	for i, key := range keys {
		cmdArgs[3+i] = key
	}
	copy(cmdArgs[3+len(keys):], args)
	cmd := redis.NewCmd(ctx, cmdArgs...)
	if len(keys) > 0 {
		cmd.SetFirstKeyPos(3)
	}
	_ = p.Process(ctx, cmd)
	return cmd
}

// Queue adds the script to pipeline p as EVALSHA. After the pipeline has
// run, pass the command to [Script.Settle], which runs the script again with
// EVAL if the server did not have it cached.
func (s *Script) Queue(ctx context.Context, p redis.Pipeliner, keys []string, args ...any) *redis.Cmd {
	return p.EvalSha(ctx, s.s.Hash(), keys, args...)
}

// QueueEval adds the script to pipeline p as EVAL, with its whole source:
// for a pipeline that must be sent again whole after NOSCRIPT, because a
// command queued after the script depends on its having run.
func (s *Script) QueueEval(ctx context.Context, p redis.Pipeliner, keys []string, args ...any) *redis.Cmd {
	return p.Eval(ctx, s.src, keys, args...)
}

// Settle returns the outcome of a script queued with [Script.Queue] once its
// pipeline has run: queued itself, or, when the server answered NOSCRIPT,
// the outcome of the same script sent with EVAL through c. keys and args
// must be those that were queued. The slot-map reload of [Script.Run]
// applies to either.
func (s *Script) Settle(ctx context.Context, c redis.Scripter, queued *redis.Cmd, keys []string, args ...any) *redis.Cmd {
	if IsNoScript(queued.Err()) {
		queued = s.s.Eval(ctx, c, keys, args...)
	}
	ReloadAfter(ctx, c, queued.Err())
	return queued
}

// IsNoScript reports whether err is the server's answer to EVALSHA for a
// script it does not have cached. go-redis gives it as [redis.ErrNoScript]
// or as the raw "NOSCRIPT …" reply; Redis and Valkey word the rest of the
// message differently.
func IsNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

// unknownCommand reports a server that does not know a command (EVALSHA_RO
// before Redis 7.0).
func unknownCommand(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "ERR unknown command")
}

// ReloadAfter asks a *redis.ClusterClient to reload its slot map after err,
// when err is transient ([Transient]): a master that was killed answers
// nothing, so no MOVED reply would tell go-redis about the replica promoted
// in its place, and it would keep dialling the dead address until its
// periodic reload (once a minute by default); a READONLY or CLUSTERDOWN
// reply also means the map is out of date. go-redis runs the reload in the
// background, at most once per 200 ms. For other clients and errors it does
// nothing.
func ReloadAfter(ctx context.Context, c redis.Scripter, err error) {
	if err == nil {
		return
	}
	if cluster, ok := c.(*redis.ClusterClient); ok && Transient(err) {
		cluster.ReloadState(ctx)
	}
}
