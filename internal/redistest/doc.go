// Package redistest starts real Redis and Valkey servers for tests: standalone
// servers, a master with a replica, a 3-master/3-replica Cluster and a
// Sentinel setup (a master, a replica and three sentinels). Nothing is
// mocked; every server is a child process listening on a free port of
// 127.0.0.1 (never 6379), with persistence off and its own temporary
// directory.
//
// # Flavors
//
// Four server versions ([Flavor]): [Redis] 7.0 and [Valkey] 8.0 from PATH
// (Debian 12 packages), and [Redis8] 8.0 and [Valkey9] 9.1 from Debian
// sid, which scripts/install-sid-servers.sh unpacks into [ServersDir]
// without installing them (they run through sid's own dynamic loader).
// [ServerVersion] and [Topology.Version] tell a test which version it
// runs on, for features only newer servers have.
//
// # Helpers for tests on real servers
//
// [WaitFor] polls a condition on a server until it holds; [Info] reads one
// INFO field; [DeadAddr] is an address that refuses connections,
// [SilentAddr] one that accepts and never answers ([ServeTCP] for other
// stand-ins), [FreeAddr] one for a listener of the test's own (a proxy)
// that no server of the harness takes;
// [WaitSynced] and [CutReplication] control replication; [Topology.Options]
// makes clients with options of the test's own (a ClientName) on any
// topology.
//
// # Shared and own instances
//
// Ordinary tests share one instance per topology and flavor per test binary
// ([SharedServer], [SharedCluster], [SharedSentinel], [Standalone] and the
// [Topology] table). A shared instance starts when it is first asked for and
// is stopped by [Run] when the package's tests are done, so each package that
// uses it must have
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Run(m)) }
//
// Tests on a shared instance must not stop, kill, restart or reconfigure it,
// and must name their keys with [Key] so that parallel tests and reruns
// (-count=N) never collide.
//
// [SharedQuorumAddrs] starts n independent standalone servers, shared the
// same way, for the runnable examples and benchmarks of a quorum.
//
// Tests that kill servers or force failovers start their own instance with
// [NewServer], [NewReplicated], [NewCluster] or [NewSentinel], which stop it
// in t.Cleanup.
// [NewTLSServer] starts a server that also listens with TLS, with a CA and
// certificates made for the test.
//
// # Failures and cleanup
//
// A missing binary fails the test (never skips it) with a message naming the
// package to install or the script to run; scripts/install-deps.sh installs
// or fetches them all. When a test fails, the tail of the log of every
// server it used is printed.
//
// Every server runs in its own process group and, on Linux, gets SIGKILL from
// the kernel when the test binary exits, however it exits (a panic, a
// -timeout, Ctrl-C, or a forgotten TestMain), so no server outlives its test
// binary (elsewhere only [Run] and Cleanup stop them). Only the temporary
// directories of instances that [Run] did not stop are left behind; they are
// removed by the next test binary that uses this package.
//
// # Environment
//
// REDISLOCK_TOPOLOGIES, a comma-separated list of [Topology] names such as
// "redis,redis-cluster", restricts [Topologies] for quick local runs. Unset or
// empty means all of them.
//
// REDISLOCK_SERVERS names the folder of the flavors from sid ([ServersDir]).
package redistest
