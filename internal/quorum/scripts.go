package quorum

import (
	_ "embed"

	"github.com/redislock/redislock/internal/script"
)

// The scripts each node runs; each file's header lists its KEYS, ARGV and
// replies. lib.lua (the exact-token ownership check), delete.lua (release)
// and ttl.lua are byte-for-byte copies of the root package's files of the
// same names (go:embed cannot reach them from here; a test keeps them
// identical). node.lua holds the quorum's own helpers: the recovery rule
// and reading a fence counter.
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
	//go:embed lua/delete.lua
	deleteSource string
	//go:embed lua/ttl.lua
	ttlSource string

	obtainScript  = script.New(libSource, nodeSource, obtainSource)
	confirmScript = script.New(libSource, nodeSource, confirmSource)
	refreshScript = script.New(libSource, nodeSource, refreshSource)
	deleteScript  = script.New(libSource, deleteSource)
	ttlScript     = script.New(libSource, ttlSource)
)
