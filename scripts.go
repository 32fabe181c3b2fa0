package redislock

import (
	"context"
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// One Lua script per verb; each file's header lists its KEYS, ARGV and
// replies. go-redis runs them with EVALSHA and falls back to EVAL when the
// server answers NOSCRIPT (a restarted server, a new master after failover).
//
// handover.lua is not a script: it defines the function that hands a key
// over to its next waiter (see [WaitForRelease]), prepended to the scripts
// that call it. Lua compiles it with the script, once per server.
var (
	//go:embed lua/handover.lua
	handoverSource string
	//go:embed lua/obtain.lua
	obtainSource string
	//go:embed lua/refresh.lua
	refreshSource string
	//go:embed lua/release.lua
	releaseSource string
	//go:embed lua/ttl.lua
	ttlSource string
	//go:embed lua/leave.lua
	leaveSource string

	obtainScript  = redis.NewScript(handoverSource + obtainSource)
	refreshScript = redis.NewScript(refreshSource)
	releaseScript = redis.NewScript(handoverSource + releaseSource)
	ttlScript     = redis.NewScript(ttlSource)
	leaveScript   = redis.NewScript(handoverSource + leaveSource)
)

// Pre-boxed script arguments, so that the hot path does not allocate them.
var (
	argFenced   any = "1"
	argUnfenced any = "0"
	argNoGrant  any = ""

	// The durations of event-driven waiting (see waiter.go), in milliseconds.
	argRegistration any = int64(waitRegistration / 1e6)
	argReservation  any = int64(handoverReservation / 1e6)
)

// runScript runs s through client (EVALSHA, then EVAL on NOSCRIPT). After a
// network failure on a Cluster client it also asks the client to reload its
// slot map: a master that was killed answers nothing, so no MOVED reply
// would tell go-redis about the replica promoted in its place, and it would
// keep dialling the dead address until its periodic reload (once a minute
// by default). The reload runs in go-redis, in the background, at most once
// per 200 ms.
func runScript(ctx context.Context, s *redis.Script, client RedisClient, keys []string, args ...any) *redis.Cmd {
	cmd := s.Run(ctx, client, keys, args...)
	if err := cmd.Err(); err != nil {
		if cluster, ok := client.(*redis.ClusterClient); ok && transient(err) {
			cluster.ReloadState(ctx)
		}
	}
	return cmd
}
