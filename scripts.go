package redislock

import (
	_ "embed"

	"github.com/redislock/redislock/internal/script"
)

// One Lua script per verb; each file's header lists its KEYS, ARGV and
// replies. internal/script runs them (EVALSHA, EVAL on NOSCRIPT, the Cluster
// slot-map reload).
//
// lib.lua and handover.lua are not scripts: they define the functions that
// the scripts share (the exact-token ownership check; handing a key over to
// its next waiter, see [WaitForRelease] and internal/handoff), prepended to the scripts that call
// them. Lua compiles them with the script, once per server.
var (
	//go:embed lua/lib.lua
	libSource string
	//go:embed lua/handover.lua
	handoverSource string
	//go:embed lua/obtain.lua
	obtainSource string
	//go:embed lua/refresh.lua
	refreshSource string
	//go:embed lua/release.lua
	releaseSource string
	//go:embed lua/delete.lua
	deleteSource string
	//go:embed lua/ttl.lua
	ttlSource string
	//go:embed lua/leave.lua
	leaveSource string
	//go:embed lua/inspect.lua
	inspectSource string
	//go:embed lua/election_leader.lua
	electionLeaderSource string
	//go:embed lua/election_proclaim.lua
	electionProclaimSource string
	//go:embed lua/election_resigned.lua
	electionResignedSource string

	obtainScript  = script.New(libSource, handoverSource, obtainSource)
	refreshScript = script.New(libSource, refreshSource)
	releaseScript = script.New(libSource, handoverSource, releaseSource)
	deleteScript  = script.New(libSource, deleteSource)
	ttlScript     = script.New(libSource, ttlSource)
	leaveScript   = script.New(libSource, handoverSource, leaveSource)
	inspectScript = script.New(inspectSource)

	electionLeaderScript   = script.New(libSource, electionLeaderSource)
	electionProclaimScript = script.New(libSource, electionProclaimSource)
	electionResignedScript = script.New(electionResignedSource)
)

// obtainHeld is obtain.lua's reply, without a waiter, when a key is held
// by another.
const obtainHeld = 1

// The scripts of [RWMutex]: rwmutex_lib.lua holds their shared helpers and
// describes the keys of one RWMutex; it hands the write lock over with
// handover.lua. The write lock's refresh and TTL are refresh.lua and
// ttl.lua, on the writer key, which holds a lock's value.
var (
	//go:embed lua/rwmutex_lib.lua
	rwLibSource string
	//go:embed lua/rwmutex_rlock.lua
	rwRLockSource string
	//go:embed lua/rwmutex_lock.lua
	rwLockSource string
	//go:embed lua/rwmutex_unlock.lua
	rwUnlockSource string
	//go:embed lua/rwmutex_runlock.lua
	rwRUnlockSource string
	//go:embed lua/rwmutex_rrefresh.lua
	rwRRefreshSource string
	//go:embed lua/rwmutex_rttl.lua
	rwRTTLSource string
	//go:embed lua/rwmutex_downgrade.lua
	rwDowngradeSource string
	//go:embed lua/rwmutex_leave.lua
	rwLeaveSource string
	//go:embed lua/rwmutex_withdraw.lua
	rwWithdrawSource string

	rwRLockScript     = script.New(libSource, handoverSource, rwLibSource, rwRLockSource)
	rwLockScript      = script.New(libSource, handoverSource, rwLibSource, rwLockSource)
	rwUnlockScript    = script.New(libSource, handoverSource, rwLibSource, rwUnlockSource)
	rwRUnlockScript   = script.New(libSource, handoverSource, rwLibSource, rwRUnlockSource)
	rwRRefreshScript  = script.New(libSource, handoverSource, rwLibSource, rwRRefreshSource)
	rwRTTLScript      = script.New(libSource, handoverSource, rwLibSource, rwRTTLSource)
	rwDowngradeScript = script.New(libSource, handoverSource, rwLibSource, rwDowngradeSource)
	rwLeaveScript     = script.New(libSource, handoverSource, rwLibSource, rwLeaveSource)
	rwWithdrawScript  = script.New(libSource, handoverSource, rwLibSource, rwWithdrawSource)
)

// Pre-boxed script arguments, so that the hot path does not allocate them.
var (
	argFenced   any = "1"
	argUnfenced any = "0"
)

// The scripts of [Semaphore] and [Permit] (semaphore.go): one per verb, each
// on the semaphore's sorted set and its permit hash.
var (
	//go:embed lua/semaphore_acquire.lua
	semAcquireSource string
	//go:embed lua/semaphore_refresh.lua
	semRefreshSource string
	//go:embed lua/semaphore_release.lua
	semReleaseSource string
	//go:embed lua/semaphore_ttl.lua
	semTTLSource string
	//go:embed lua/semaphore_holders.lua
	semHoldersSource string
	//go:embed lua/semaphore_lib.lua
	semLibSource string
	//go:embed lua/semaphore_leave.lua
	semLeaveSource string

	// The scripts that hand permit slots over (see [WaitForRelease]) get
	// handover.lua's pass() and semaphore_lib.lua's handOn().
	semAcquireScript = script.New(libSource, handoverSource, semLibSource, semAcquireSource)
	semReleaseScript = script.New(libSource, handoverSource, semLibSource, semReleaseSource)
	semLeaveScript   = script.New(libSource, handoverSource, semLibSource, semLeaveSource)
	semRefreshScript = script.New(semRefreshSource)
	semTTLScript     = script.New(semTTLSource)
	semHoldersScript = script.New(semHoldersSource)
)
