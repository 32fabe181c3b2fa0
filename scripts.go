package redislock

import (
	_ "embed"

	"github.com/redis/go-redis/v9"
)

// One Lua script per verb; each file's header lists its KEYS, ARGV and
// replies. go-redis runs them with EVALSHA and falls back to EVAL when the
// server answers NOSCRIPT (a restarted server, a new master after failover).
var (
	//go:embed lua/obtain.lua
	obtainSource string
	//go:embed lua/refresh.lua
	refreshSource string
	//go:embed lua/release.lua
	releaseSource string
	//go:embed lua/ttl.lua
	ttlSource string

	obtainScript  = redis.NewScript(obtainSource)
	refreshScript = redis.NewScript(refreshSource)
	releaseScript = redis.NewScript(releaseSource)
	ttlScript     = redis.NewScript(ttlSource)
)

// Pre-boxed script arguments, so that the hot path does not allocate them.
var (
	argFenced   any = "1"
	argUnfenced any = "0"
)
