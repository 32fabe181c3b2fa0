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
	// Name is one of "redis", "valkey", "redis-cluster", "valkey-cluster"
	// and "redis-sentinel"; use it as the subtest name.
	Name string
	// Cluster reports whether the topology is a Cluster: keys used together
	// in one command or script must share a hash slot (see [Key]).
	Cluster bool
	// NewClient returns a new go-redis client of the topology's shared
	// instance, starting the instance on first use (blocking until it is
	// ready, a few seconds for a Cluster or Sentinel). Cleanup closes the
	// client; the instance lives until [Run]. It fails the test if the
	// instance cannot be started.
	NewClient func(t testing.TB) redis.UniversalClient
}

// allTopologies is the full table, in the order tests run them.
var allTopologies = []Topology{
	{Name: "redis", NewClient: func(t testing.TB) redis.UniversalClient {
		t.Helper()
		return SharedServer(t, Redis).Client(t)
	}},
	{Name: "valkey", NewClient: func(t testing.TB) redis.UniversalClient {
		t.Helper()
		return SharedServer(t, Valkey).Client(t)
	}},
	{Name: "redis-cluster", Cluster: true, NewClient: func(t testing.TB) redis.UniversalClient {
		t.Helper()
		return SharedCluster(t, Redis).Client(t)
	}},
	{Name: "valkey-cluster", Cluster: true, NewClient: func(t testing.TB) redis.UniversalClient {
		t.Helper()
		return SharedCluster(t, Valkey).Client(t)
	}},
	{Name: "redis-sentinel", NewClient: func(t testing.TB) redis.UniversalClient {
		t.Helper()
		return SharedSentinel(t, Redis).Client(t)
	}},
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
	return Topology{Name: name, NewClient: func(t testing.TB) redis.UniversalClient {
		t.Helper()
		known := make([]string, len(allTopologies))
		for i, tp := range allTopologies {
			known[i] = tp.Name
		}
		t.Fatalf("redistest: unknown topology %q in %s; known: %s", name, TopologiesEnv, strings.Join(known, ","))
		return nil
	}}
}
