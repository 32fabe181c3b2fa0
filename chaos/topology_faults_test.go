package chaos_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// sentinelKinds are failovers of a Sentinel setup (a master, a replica,
// three sentinels) while the workers run through go-redis failover clients.
// Replication is asynchronous and the old master accepts writes until it is
// turned into a replica, so locks can be lost: overlaps are measured.
var sentinelKinds = []faultKind{
	{
		name:     "sentinel-failover",
		lossy:    true,
		schedule: sentinelFailovers,
	},
	{
		// The same failovers, every obtain confirmed on the replica
		// (Options.MinReplicas): compare with sentinel-failover.
		name:     "sentinel-failover+ack",
		lossy:    true,
		options:  func() redislock.Options { return redislock.Options{MinReplicas: 1} },
		schedule: sentinelFailovers,
	},
	{
		// The master is killed; the sentinels promote the replica. The old
		// master comes back empty and is made a replica.
		name:  "sentinel-kill",
		lossy: true,
		schedule: func(e *env) {
			for i := range e.sc.failovers {
				e.hold(e.sc.dur / 4)
				if i > 0 {
					// The restarted server must be a replica again first.
					waitReplicaInSync(e)
				}
				old := e.sentinel.Master(e.t)
				e.h.Fault("kill master %s", old.Addr())
				e.sentinel.KillMaster(e.t)
				addr := e.sentinel.WaitFailover(e.t, old.Addr())
				e.h.Fault("new master %s; restart %s without data", addr, old.Addr())
				old.Restart(e.t)
			}
			e.hold(e.sc.dur / 4)
		},
		effect: failedSome,
	},
}

// sentinelFailovers forces e.sc.failovers failovers (SENTINEL FAILOVER),
// the workers running throughout.
func sentinelFailovers(e *env) {
	for range e.sc.failovers {
		e.hold(e.sc.dur / 4)
		e.h.Fault("SENTINEL FAILOVER (master %s)", e.sentinel.MasterAddr(e.t))
		addr := e.sentinel.Failover(e.t)
		e.h.Fault("sentinels report new master %s", addr)
	}
	e.hold(e.sc.dur / 4)
}

// waitReplicaInSync blocks until the sentinels' master has the other
// server of the setup as a replica with its link up (a later failover
// needs one), for at most 30 s. The master is asked again at every poll:
// the sentinels may still be settling a failover.
func waitReplicaInSync(e *env) {
	e.t.Helper()
	clients := map[*redistest.Server]*redis.Client{}
	for _, s := range e.sentinel.Servers() {
		clients[s] = s.Client(e.t)
	}
	redistest.WaitFor(e.t, "a replica in sync with the sentinels' master", 30*time.Second, func() bool {
		master := e.sentinel.MasterAddr(e.t)
		_, port, _ := strings.Cut(master, ":")
		for s, c := range clients {
			if s.Addr() != master &&
				redistest.Info(e.t, c, "replication", "role") == "slave" &&
				redistest.Info(e.t, c, "replication", "master_port") == port &&
				redistest.Info(e.t, c, "replication", "master_link_status") == "up" {
				return true
			}
		}
		return false
	})
}

// TestFaultsSentinel runs each Sentinel fault kind on a Sentinel setup of
// its own, with the lock, semaphore, RW and election workloads at once
// (see topologyParts).
func TestFaultsSentinel(t *testing.T) {
	t.Parallel()
	newSentinel := func(t *testing.T) *redistest.Sentinel { return redistest.NewSentinel(t, redistest.Redis) }
	eachRun(t, sentinelKinds, newSentinel, func(t *testing.T, kind faultKind, sc scale, s *redistest.Sentinel, n int) {
		e := &env{t: t, sc: sc, sentinel: s, keys: lockKeys(t, sc.keys)}
		if n > 0 {
			waitReplicaInSync(e)
		}
		runParts(t, e, kind, topologyParts(t, e, kind, func(ttl time.Duration) redis.UniversalClient {
			o := s.Options()
			o.Protocol, o.DisableIdentity = 2, true
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout = ttl/2, ttl/2, ttl/2
			o.ContextTimeoutEnabled, o.MaxRetries, o.PoolSize = true, 1, 4
			return redis.NewFailoverClient(o)
		})...)
	})
}

// topologyParts returns the workloads of one run of a Sentinel or Cluster
// fault kind, which run at once under its schedule, each on clients of its
// own made by newClient (with timeouts of half the workload's TTL) and on
// keys of its own, all in the hash slot of e.keys (the slot whose master
// the Cluster kinds fail over): the lock workload on e.keys (row
// "<kind>"), and, unless the kind sets Options (MinReplicas, which only
// locks take), the semaphore, RW, election and session workloads (rows
// "semaphore/<kind>", "rw/<kind>", "election/<kind>", "session/<kind>"),
// and the lock,
// semaphore and RW workloads again with every worker waiting with
// WaitForRelease, and the election workload again, at the TTL of waitScale
// (rows "wait/<kind>", "semaphore-wait/<kind>", "rw-wait/<kind>",
// "election-wait/<kind>"; see TestFaultsWaitForRelease).
func topologyParts(t *testing.T, e *env, kind faultKind, newClient func(ttl time.Duration) redis.UniversalClient) []*part {
	n := e.sc.keys
	parts := []*part{{row: kind.name, kind: kind, keys: e.keys, start: lockWorkload(e, kind)}}
	var waiting []*part
	if kind.options == nil {
		sem, rw, el := semKeys(t, n), rwKeys(t, n), electionKeys(t, n)
		se := *e
		se.keys = namedKeys(t, "session", n)
		parts = append(parts,
			&part{row: "semaphore/" + kind.name, kind: kind, keys: sem, start: semaphoreWorkload(e, kind, sem)},
			&part{row: "rw/" + kind.name, kind: kind, keys: rw, start: rwMutexWorkload(e, kind, rw)},
			&part{row: "election/" + kind.name, kind: kind, keys: el, start: electionWorkloadStart(e, kind, el, nil)},
			&part{row: "session/" + kind.name, kind: kind, keys: se.keys, start: sessionWorkload(&se, kind)},
		)
		we := *e
		we.wait, we.keys = true, namedKeys(t, "wait", n)
		waitScale(&we.sc)
		wsem, wrw, wel := namedKeys(t, "semwait", n), namedKeys(t, "rwwait", n), namedKeys(t, "electionwait", n)
		waiting = []*part{
			{row: "wait/" + kind.name, kind: kind, keys: we.keys, start: lockWorkload(&we, kind)},
			{row: "semaphore-wait/" + kind.name, kind: kind, keys: wsem, start: semaphoreWorkload(&we, kind, wsem)},
			{row: "rw-wait/" + kind.name, kind: kind, keys: wrw, start: rwMutexWorkload(&we, kind, wrw)},
			{row: "election-wait/" + kind.name, kind: kind, keys: wel, start: electionWorkloadStart(&we, kind, wel, nil)},
		}
	}
	for _, p := range parts {
		p.clients = e.newClients(&p.netErrs, func() redis.UniversalClient { return newClient(e.sc.ttl) })
	}
	for _, p := range waiting {
		p.clients = e.newClients(&p.netErrs, func() redis.UniversalClient { return newClient(time.Second) })
	}
	return append(parts, waiting...)
}

// clusterKinds are failovers of the master of the locks' hash slot in a
// Cluster of three masters and three replicas, the workers running through
// go-redis cluster clients.
var clusterKinds = []faultKind{
	{
		// CLUSTER FAILOVER: a manual failover coordinated with the master,
		// which stops writes until the replica has caught up. No lock is
		// lost: none may overlap.
		name: "cluster-failover",
		schedule: func(e *env) {
			clusterFailovers(e, "")
		},
	},
	{
		// CLUSTER FAILOVER TAKEOVER: the replica takes over without asking
		// the master, as after a partition; writes not yet replicated are
		// lost.
		name:  "cluster-takeover",
		lossy: true,
		schedule: func(e *env) {
			clusterFailovers(e, "TAKEOVER")
		},
	},
}

// clusterFailovers promotes the replica of the locks' master e.sc.failovers
// times with CLUSTER FAILOVER [mode].
func clusterFailovers(e *env, mode string) {
	for range e.sc.failovers {
		e.hold(e.sc.dur / 4)
		master := e.cluster.MasterForKey(e.t, e.keys[0])
		replica := e.cluster.ReplicaOf(e.t, master)
		e.h.Fault("CLUSTER FAILOVER %s on %s (master %s)", mode, replica.Addr(), master.Addr())
		if mode == "" {
			e.cluster.Failover(e.t, replica)
		} else {
			ctx, cancel := ctxTimeout(5 * time.Second)
			err := replica.Client(e.t).Do(ctx, "CLUSTER", "FAILOVER", mode).Err()
			cancel()
			if err != nil {
				e.t.Fatalf("CLUSTER FAILOVER %s on %s: %v", mode, replica, err)
			}
			e.cluster.WaitMaster(e.t, replica)
		}
		e.h.Fault("%s is master", replica.Addr())
	}
	e.hold(e.sc.dur / 4)
}

// TestFaultsCluster runs each Cluster fault kind on a Cluster of its own,
// with the lock, semaphore, RW and election workloads at once (see
// topologyParts).
func TestFaultsCluster(t *testing.T) {
	t.Parallel()
	newCluster := func(t *testing.T) *redistest.Cluster { return redistest.NewCluster(t, redistest.Redis) }
	eachRun(t, clusterKinds, newCluster, func(t *testing.T, kind faultKind, sc scale, c *redistest.Cluster, _ int) {
		e := &env{t: t, sc: sc, cluster: c, keys: lockKeys(t, sc.keys)}
		runParts(t, e, kind, topologyParts(t, e, kind, func(ttl time.Duration) redis.UniversalClient {
			o := c.Options()
			o.Protocol, o.DisableIdentity = 2, true
			o.DialTimeout, o.ReadTimeout, o.WriteTimeout = ttl/2, ttl/2, ttl/2
			o.ContextTimeoutEnabled, o.PoolSize = true, 4
			return redis.NewClusterClient(o)
		})...)
	})
}
