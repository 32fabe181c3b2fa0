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
// A Script is immutable after New and safe for concurrent use.
package script

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Script is one Lua script.
type Script struct {
	src string
	s   *redis.Script
}

// New returns the script whose source is the concatenation of parts, in
// order.
func New(parts ...string) *Script {
	src := strings.Join(parts, "\n")
	return &Script{src: src, s: redis.NewScript(src)}
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
	cmd := s.s.Run(ctx, c, keys, args...)
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
	cmd := s.s.RunRO(ctx, c, keys, args...)
	if err := cmd.Err(); unknownCommand(err) || redis.HasErrorPrefix(err, "NOPERM") {
		return s.Run(ctx, c, keys, args...)
	}
	ReloadAfter(ctx, c, cmd.Err())
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
