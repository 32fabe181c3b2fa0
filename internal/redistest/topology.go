package redistest

import (
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TopologiesEnv is the environment variable that restricts [Topologies]: a
// comma-separated list of topology names, such as "redis,redis-cluster".
// Unset or empty means every topology.
const TopologiesEnv = "REDISLOCK_TOPOLOGIES"

// Topology is one kind of deployment that behavioural tests run against,
// backed by the shared instance of that kind.
type Topology struct {
	// Name is one of "redis", "valkey", "redis8", "valkey9",
	// "redis-cluster", "valkey-cluster", "redis8-cluster",
	// "valkey9-cluster" and "redis-sentinel"; use it as the subtest name.
	Name string
	// Flavor is the server implementation the topology runs.
	Flavor Flavor
	// Cluster reports whether the topology is a Cluster: keys used together
	// in one command or script must share a hash slot (see [Key]).
	Cluster bool
	// NewClient returns a new go-redis client of the topology's shared
	// instance, starting the instance on first use (blocking until it is
	// ready, a few seconds for a Cluster or Sentinel). Cleanup closes the
	// client; the instance lives until [Run]. It fails the test if the
	// instance cannot be started.
	NewClient func(t testing.TB) redis.UniversalClient

	// options returns the options of a client like NewClient's.
	options func(t testing.TB) *redis.UniversalOptions
}

// Options returns new go-redis options for a client of the topology's
// shared instance, starting the instance on first use as
// [Topology.NewClient] does. The caller owns them and may change them (a
// ClientName, timeouts) before calling redis.NewUniversalClient, which
// then returns the same kind of client as NewClient: a *redis.Client, a
// *redis.ClusterClient or a failover *redis.Client. A Topology made
// outside [Topologies] gets the options of the table's topology of the
// same Name. It fails the test if the instance cannot be started, or if
// the name is not in the table.
func (tp Topology) Options(t testing.TB) *redis.UniversalOptions {
	t.Helper()
	if tp.options == nil {
		tp = unknownTopology(tp.Name)
		for _, known := range allTopologies {
			if known.Name == tp.Name {
				tp = known
			}
		}
	}
	return tp.options(t)
}

// Version returns the version of the topology's servers (INFO server),
// starting its shared instance on first use, as [Topology.NewClient] does.
// It fails the test if the instance cannot be started or asked.
func (tp Topology) Version(t testing.TB) Version {
	t.Helper()
	return ServerVersion(t, tp.NewClient(t))
}

// allTopologies is the full table, in the order tests run them.
var allTopologies = []Topology{
	standaloneTopology(Redis),
	standaloneTopology(Valkey),
	standaloneTopology(Redis8),
	standaloneTopology(Valkey9),
	clusterTopology(Redis),
	clusterTopology(Valkey),
	clusterTopology(Redis8),
	clusterTopology(Valkey9),
	sentinelTopology(Redis),
}

func standaloneTopology(f Flavor) Topology {
	return newTopology(string(f), f, false, func(t testing.TB) *redis.UniversalOptions {
		return &redis.UniversalOptions{Addrs: []string{SharedServer(t, f).Addr()}}
	})
}

func clusterTopology(f Flavor) Topology {
	return newTopology(string(f)+"-cluster", f, true, func(t testing.TB) *redis.UniversalOptions {
		return &redis.UniversalOptions{Addrs: SharedCluster(t, f).Addrs(), IsClusterMode: true}
	})
}

func sentinelTopology(f Flavor) Topology {
	return newTopology(string(f)+"-sentinel", f, false, func(t testing.TB) *redis.UniversalOptions {
		return &redis.UniversalOptions{Addrs: SharedSentinel(t, f).SentinelAddrs(), MasterName: MasterName}
	})
}

// newTopology returns a topology whose clients are made from options,
// which starts the shared instance (failing the test if it cannot).
func newTopology(name string, f Flavor, cluster bool, options func(t testing.TB) *redis.UniversalOptions) Topology {
	return Topology{
		Name: name, Flavor: f, Cluster: cluster,
		NewClient: func(t testing.TB) redis.UniversalClient {
			t.Helper()
			c := redis.NewUniversalClient(options(t))
			t.Cleanup(func() { _ = c.Close() })
			return c
		},
		options: options,
	}
}

// Topologies returns the topologies to run behavioural tests on: all of them,
// or those named in the environment variable [TopologiesEnv], in the table's
// order. It starts nothing. An unknown name yields a Topology whose NewClient
// fails the test with the list of known names, so a typo is not a silent
// pass. Typical use:
//
//	for _, tp := range redistest.Topologies() {
//		t.Run(tp.Name, func(t *testing.T) {
//			client := tp.NewClient(t)
//			key := redistest.Key(t, "lock")
//			...
//		})
//	}
func Topologies() []Topology {
	return selectTopologies(os.Getenv(TopologiesEnv))
}

func selectTopologies(list string) []Topology {
	var names []string
	for name := range strings.SplitSeq(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		out := make([]Topology, len(allTopologies))
		copy(out, allTopologies)
		return out
	}
	var out []Topology
	for _, tp := range allTopologies {
		for _, name := range names {
			if name == tp.Name {
				out = append(out, tp)
				break
			}
		}
	}
	for _, name := range names {
		if !knownTopology(name) {
			out = append(out, unknownTopology(name))
		}
	}
	return out
}

func knownTopology(name string) bool {
	for _, tp := range allTopologies {
		if tp.Name == name {
			return true
		}
	}
	return false
}

func unknownTopology(name string) Topology {
	fail := func(t testing.TB) {
		t.Helper()
		known := make([]string, len(allTopologies))
		for i, tp := range allTopologies {
			known[i] = tp.Name
		}
		t.Fatalf("redistest: unknown topology %q in %s; known: %s", name, TopologiesEnv, strings.Join(known, ","))
	}
	return Topology{
		Name:      name,
		NewClient: func(t testing.TB) redis.UniversalClient { fail(t); return nil },
		options:   func(t testing.TB) *redis.UniversalOptions { fail(t); return nil },
	}
}
