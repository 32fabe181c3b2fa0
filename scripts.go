package redislock

import (
	"embed"

	"github.com/redislock/redislock/internal/script"
)

// luaFiles are the Lua scripts, one per verb, and the helpers they share
// (docs/ARCHITECTURE.md, "Scripts").
//
//go:embed lua/*.lua
var luaFiles embed.FS

// lua returns the script made of the named files of lua/, in order.
var lua = script.Files(luaFiles, "lua")

// The scripts of locks, elections and Inspect.
var (
	obtainScript  = lua("lib", "handover", "obtain")
	plainScript   = lua("obtain_plain")
	refreshScript = lua("lib", "refresh")
	refreshMany   = lua("lib", "refresh_many") // a session's batches of refreshScript
	releaseScript = lua("lib", "handover", "release")
	deleteScript  = lua("lib", "delete")
	deleteOne     = lua("delete_one")
	ttlScript     = lua("lib", "ttl")
	leaveScript   = lua("lib", "handover", "leave")
	inspectScript = lua("inspect")

	electionLeaderScript   = lua("lib", "election_leader")
	electionProclaimScript = lua("lib", "election_proclaim")
	electionResignedScript = lua("election_resigned")
)

// obtainHeld is obtain.lua's reply, without a waiter, when a key is held
// by another.
const obtainHeld = 1

// The scripts of [RWMutex]: rwmutex_lib.lua describes the keys of one
// RWMutex; the write lock's refresh and TTL are refresh.lua and ttl.lua,
// on the writer key, which holds a lock's value.
var (
	rwRLockScript     = rw("rlock")
	rwLockScript      = rw("lock")
	rwUnlockScript    = rw("unlock")
	rwRUnlockScript   = rw("runlock")
	rwRRefreshScript  = rw("rrefresh")
	rwRTTLScript      = rw("rttl")
	rwDowngradeScript = rw("downgrade")
	rwLeaveScript     = rw("leave")
	rwWithdrawScript  = rw("withdraw")
)

func rw(verb string) *script.Script {
	return lua("lib", "handover", "rwmutex_lib", "rwmutex_"+verb)
}

// The scripts of [Semaphore] and [Permit]: those that hand permit slots
// over get handover.lua's pass() and semaphore_lib.lua's handOn().
var (
	semAcquireScript = lua("lib", "handover", "semaphore_lib", "semaphore_acquire")
	semReleaseScript = lua("lib", "handover", "semaphore_lib", "semaphore_release")
	semLeaveScript   = lua("lib", "handover", "semaphore_lib", "semaphore_leave")
	semRefreshScript = lua("semaphore_refresh")
	semTTLScript     = lua("semaphore_ttl")
	semHoldersScript = lua("semaphore_holders")
)

// Pre-boxed script arguments, so that the hot path does not allocate them.
var (
	argFenced   any = "1"
	argUnfenced any = "0"
)
