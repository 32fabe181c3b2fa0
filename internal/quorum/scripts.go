package quorum

import (
	_ "embed"

	"github.com/redislock/redislock/internal/script"
)

// The scripts each node runs; each file's header lists its KEYS, ARGV and
// replies. lib.lua (the exact-token prefix of a lock's value) is a
// byte-for-byte copy of the root package's (go:embed cannot reach it from
// here; a test keeps them identical). node.lua holds the quorum's own
// helpers, prepended to every script: ownership by token and acquisition
// tag, the recovery rule, reading a fence counter.
var (
	//go:embed lua/lib.lua
	libSource string
	//go:embed lua/node.lua
	nodeSource string
	//go:embed lua/obtain.lua
	obtainSource string
	//go:embed lua/confirm.lua
	confirmSource string
	//go:embed lua/refresh.lua
	refreshSource string
	//go:embed lua/release.lua
	releaseSource string
	//go:embed lua/ttl.lua
	ttlSource string

	obtainScript  = script.New(libSource, nodeSource, obtainSource)
	confirmScript = script.New(libSource, nodeSource, confirmSource)
	refreshScript = script.New(libSource, nodeSource, refreshSource)
	releaseScript = script.New(libSource, nodeSource, releaseSource)
	ttlScript     = script.New(libSource, nodeSource, ttlSource)
)
