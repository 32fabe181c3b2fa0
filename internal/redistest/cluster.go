package redistest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis or Valkey Cluster of three masters and three replicas,
// each node a [Server] with its own port and directory, created with
// "redis-cli --cluster create --cluster-replicas 1" (valkey-cli for Valkey).
// Nodes run with cluster-node-timeout 2000 ms, so a killed master's replica
// is promoted after about 4 s. Its methods are safe for concurrent use.
type Cluster struct {
	flavor Flavor
	nodes  []*Server
}

// NewCluster starts a Cluster of flavor f for the test alone, for tests that
// kill nodes or force failovers. It blocks until every node reports
// cluster_state:ok and knows all six nodes, every replica is in sync with its
// master, and a cluster client can SET and GET a key on each master; at most
// about 30 s after the nodes start. Cleanup kills all nodes and removes their
// directories; if the test failed, the tail of every node's log is printed
// first. A missing binary or a cluster that does not form fails the test.
func NewCluster(t testing.TB, f Flavor) *Cluster {
	t.Helper()
	c, err := startCluster(f)
	return own(t, c, err, 15)
}

func startCluster(f Flavor) (*Cluster, error) {
	cli, err := f.cli()
	if err != nil {
		return nil, err
	}
	spec := serverSpec{
		flavor: f,
		label:  string(f) + "-cluster-node",
		bus:    true,
		args: func(port int, dir string) ([]string, error) {
			return append(dataArgs(port, dir),
				"--cluster-enabled", "yes",
				"--cluster-config-file", "nodes.conf",
				"--cluster-node-timeout", "2000",
				// Always let a replica take over, however long ago it
				// last heard from its master.
				"--cluster-replica-validity-factor", "0",
				// Without this the first full sync of a replica waits 5 s.
				"--repl-diskless-sync-delay", "0",
			), nil
		},
	}
	nodes := make([]*Server, 6)
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() { nodes[i], errs[i] = launch(spec) })
	}
	wg.Wait()
	c := &Cluster{flavor: f}
	for _, n := range nodes {
		if n != nil {
			c.nodes = append(c.nodes, n)
		}
	}
	if err := errors.Join(errs...); err != nil {
		c.stop()
		return nil, err
	}

	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	args := append([]string{"--cluster", "create"}, c.Addrs()...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := runTool(ctx, cli, args...); err != nil {
		c.stop()
		return nil, fmt.Errorf("redistest: %s --cluster create: %w\n%s\n%s", f.cliBin(), err, out, c.report(15))
	}
	if err := c.waitReady(); err != nil {
		report := c.report(15)
		c.stop()
		return nil, fmt.Errorf("%w\n%s", err, report)
	}
	return c, nil
}

// waitReady blocks until the cluster is fully formed and serves keys on
// every master.
func (c *Cluster) waitReady() error {
	if err := waitFor("cluster formed", readyTimeout, pollInterval, c.checkFormed); err != nil {
		return err
	}
	cc := redis.NewClusterClient(c.Options())
	defer func() { _ = cc.Close() }()
	return waitFor("cluster client SET/GET on every master", readyTimeout, pollInterval, func(ctx context.Context) error {
		view, err := c.view(ctx)
		if err != nil {
			return err
		}
		for _, m := range view {
			if !m.has("master") || len(m.slots) == 0 {
				continue
			}
			key := probeKey(m.slots[0])
			if err := cc.Set(ctx, key, m.addr, 0).Err(); err != nil {
				return fmt.Errorf("SET %s: %w", key, err)
			}
			got, err := cc.Get(ctx, key).Result()
			if err != nil {
				return fmt.Errorf("GET %s: %w", key, err)
			}
			if got != m.addr {
				return fmt.Errorf("GET %s = %q, want %q", key, got, m.addr)
			}
			if err := cc.Del(ctx, key).Err(); err != nil {
				return fmt.Errorf("DEL %s: %w", key, err)
			}
		}
		return nil
	})
}

// probeKey returns a key whose slot lies in r.
func probeKey(r [2]int) string {
	for i := 0; ; i++ {
		key := "redistest:probe:" + strconv.Itoa(i)
		if s := Slot(key); s >= r[0] && s <= r[1] {
			return key
		}
	}
}

// checkFormed returns nil when every node reports cluster_state:ok, sees six
// healthy nodes (three masters with slots, three replicas) and, if it is a
// replica, has its replication link up.
func (c *Cluster) checkFormed(ctx context.Context) error {
	for _, n := range c.nodes {
		admin := n.adminClient()
		info, err := clusterStateOK(ctx, n)
		if err != nil {
			return err
		}
		if k, _ := infoField(info, "cluster_known_nodes"); k != strconv.Itoa(len(c.nodes)) {
			return fmt.Errorf("%s: cluster_known_nodes:%s: %w", n, k, errNotYet)
		}
		text, err := admin.ClusterNodes(ctx).Result()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER NODES: %w", n, err)
		}
		view := parseClusterNodes(text)
		masters, replicas := 0, 0
		var self clusterNode
		for _, e := range view {
			if e.has("fail") || e.has("fail?") || e.has("handshake") || e.has("noaddr") {
				return fmt.Errorf("%s sees %s with flags %s: %w", n, e.addr, strings.Join(e.flags, ","), errNotYet)
			}
			switch {
			case e.has("master") && len(e.slots) > 0:
				masters++
			case e.has("slave") && e.masterID != "-":
				replicas++
			}
			if e.has("myself") {
				self = e
			}
		}
		if masters != 3 || replicas != 3 {
			return fmt.Errorf("%s sees %d masters with slots and %d replicas: %w", n, masters, replicas, errNotYet)
		}
		if self.has("slave") {
			repl, err := admin.Info(ctx, "replication").Result()
			if err != nil {
				return fmt.Errorf("%s: INFO replication: %w", n, err)
			}
			if st, _ := infoField(repl, "master_link_status"); st != "up" {
				return fmt.Errorf("%s: master_link_status:%s: %w", n, st, errNotYet)
			}
		}
	}
	return nil
}

// clusterStateOK returns n's CLUSTER INFO, or an error (wrapping errNotYet
// when it only has to wait) unless n reports cluster_state:ok.
func clusterStateOK(ctx context.Context, n *Server) (string, error) {
	info, err := n.adminClient().ClusterInfo(ctx).Result()
	if err != nil {
		return "", fmt.Errorf("%s: CLUSTER INFO: %w", n, err)
	}
	if st, _ := infoField(info, "cluster_state"); st != "ok" {
		return "", fmt.Errorf("%s: cluster_state:%s: %w", n, st, errNotYet)
	}
	return info, nil
}

// Nodes returns the six nodes in the order they were started. Which are
// masters changes with failovers: ask [Cluster.MasterForSlot].
func (c *Cluster) Nodes() []*Server { return slices.Clone(c.nodes) }

// Addrs returns the addresses of the six nodes.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		addrs[i] = n.Addr()
	}
	return addrs
}

// Flavor returns the cluster's flavor.
func (c *Cluster) Flavor() Flavor { return c.flavor }

// Options returns new go-redis cluster options listing every node, with
// go-redis's defaults otherwise. The caller owns them.
func (c *Cluster) Options() *redis.ClusterOptions {
	return &redis.ClusterOptions{Addrs: c.Addrs()}
}

// Client returns a new go-redis cluster client with [Cluster.Options]. It does
// not block. Cleanup closes it.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(c.Options())
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}

// Node returns the node listening on addr, or nil.
func (c *Cluster) Node(addr string) *Server { return serverAt(c.nodes, addr) }

// MasterForKey returns the running node that is master of key's slot; see
// [Cluster.MasterForSlot].
func (c *Cluster) MasterForKey(t testing.TB, key string) *Server {
	t.Helper()
	return c.MasterForSlot(t, Slot(key))
}

// MasterForSlot returns the running node that is master of slot, as seen by
// the first running node that answers. While no running, healthy master
// serves the slot (during a failover) it waits, for at most 30 s, then fails
// the test.
func (c *Cluster) MasterForSlot(t testing.TB, slot int) *Server {
	t.Helper()
	return c.find(t, fmt.Sprintf("a running master of slot %d", slot), func(ctx context.Context, view []clusterNode) (*Server, error) {
		for _, e := range view {
			if e.has("master") && !e.failing() && e.serves(slot) {
				if n := c.Node(e.addr); n != nil && n.running() {
					return n, nil
				}
			}
		}
		return nil, errNotYet
	})
}

// ReplicaOf returns a running replica of master whose replication link is
// up, as seen by the first running node that answers. It waits for one (for
// example while a demoted master resyncs) for at most 30 s, then fails the
// test.
func (c *Cluster) ReplicaOf(t testing.TB, master *Server) *Server {
	t.Helper()
	return c.find(t, "an in-sync replica of "+master.String(), func(ctx context.Context, view []clusterNode) (*Server, error) {
		id := ""
		for _, e := range view {
			if e.addr == master.Addr() {
				id = e.id
			}
		}
		if id == "" {
			return nil, fmt.Errorf("%s is not in the cluster", master)
		}
		for _, e := range view {
			if !e.has("slave") || e.masterID != id || e.failing() {
				continue
			}
			n := c.Node(e.addr)
			if n == nil || !n.running() {
				continue
			}
			info, err := n.adminClient().Info(ctx, "replication").Result()
			if err != nil {
				return nil, fmt.Errorf("%s: INFO replication: %w", n, err)
			}
			port, _ := infoField(info, "master_port")
			link, _ := infoField(info, "master_link_status")
			if port == strconv.Itoa(master.Port()) && link == "up" {
				return n, nil
			}
		}
		return nil, errNotYet
	})
}

// find polls the cluster's view until match returns a node, for at most
// failoverTimeout; it fails the test (showing the last view) if none comes.
func (c *Cluster) find(t testing.TB, what string, match func(context.Context, []clusterNode) (*Server, error)) *Server {
	t.Helper()
	var (
		found *Server
		view  []clusterNode
	)
	err := waitFor(what, failoverTimeout, pollInterval, func(ctx context.Context) error {
		var err error
		if view, err = c.view(ctx); err != nil {
			return err
		}
		found, err = match(ctx, view)
		return err
	})
	if err != nil {
		t.Fatalf("%v; cluster view:\n%s", err, formatView(view))
	}
	return found
}

// Failover runs CLUSTER FAILOVER on replica, a manual failover coordinated
// with its master (which must be running; after killing a master, use
// [Cluster.WaitMaster] instead), then blocks like [Cluster.WaitMaster] until
// replica is master everywhere. It fails the test if the command is refused
// or the promotion is not seen within 30 s.
func (c *Cluster) Failover(t testing.TB, replica *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	if err := replica.adminClient().ClusterFailover(ctx).Err(); err != nil {
		t.Fatalf("redistest: CLUSTER FAILOVER on %s: %v", replica, err)
	}
	c.WaitMaster(t, replica)
}

// WaitMaster blocks until every running node reports cluster_state:ok, sees
// node as a healthy master owning slots, and sees no other running node as a
// master without slots (a demoted master has become a replica), for at most
// 30 s, and fails the test (printing every node's log tail) otherwise. Use it after killing a
// master, with the replica that [Cluster.ReplicaOf] returned before the kill.
func (c *Cluster) WaitMaster(t testing.TB, node *Server) {
	t.Helper()
	err := waitFor(node.String()+" master everywhere", failoverTimeout, pollInterval, func(ctx context.Context) error {
		if !node.running() {
			return fmt.Errorf("%s is not running", node)
		}
		for _, n := range c.nodes {
			if !n.running() {
				continue
			}
			if _, err := clusterStateOK(ctx, n); err != nil {
				return err
			}
			admin := n.adminClient()
			text, err := admin.ClusterNodes(ctx).Result()
			if err != nil {
				return fmt.Errorf("%s: CLUSTER NODES: %w", n, err)
			}
			ok := false
			for _, e := range parseClusterNodes(text) {
				if e.addr == node.Addr() {
					ok = e.has("master") && !e.failing() && len(e.slots) > 0
				} else if o := c.Node(e.addr); o != nil && o.running() && e.has("master") && len(e.slots) == 0 {
					return fmt.Errorf("%s sees %s as a master without slots: %w", n, o, errNotYet)
				}
			}
			if !ok {
				return fmt.Errorf("%s does not see %s as a master with slots: %w", n, node, errNotYet)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, c.report(15))
	}
}

// view returns CLUSTER NODES parsed, from the first running node that
// answers.
func (c *Cluster) view(ctx context.Context) ([]clusterNode, error) {
	var errs []error
	for _, n := range c.nodes {
		if !n.running() {
			continue
		}
		text, err := n.adminClient().ClusterNodes(ctx).Result()
		if err == nil {
			return parseClusterNodes(text), nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", n, err))
	}
	return nil, fmt.Errorf("redistest: no cluster node answers CLUSTER NODES: %w", errors.Join(errs...))
}

// stop kills every node and removes their directories.
func (c *Cluster) stop() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(n.stop)
	}
	wg.Wait()
}

// report returns the last n lines of every node's log.
func (c *Cluster) report(n int) string {
	var b strings.Builder
	for _, node := range c.nodes {
		b.WriteString(node.report(n))
	}
	return b.String()
}

// clusterNode is one line of CLUSTER NODES.
type clusterNode struct {
	id       string
	addr     string // "127.0.0.1:PORT", without the bus port
	flags    []string
	masterID string // "-" for a master
	slots    [][2]int
}

func (e clusterNode) has(flag string) bool { return slices.Contains(e.flags, flag) }

func (e clusterNode) failing() bool { return e.has("fail") || e.has("fail?") }

func (e clusterNode) serves(slot int) bool {
	for _, r := range e.slots {
		if slot >= r[0] && slot <= r[1] {
			return true
		}
	}
	return false
}

// parseClusterNodes parses the reply of CLUSTER NODES:
//
//	<id> <ip:port@cport[,hostname]> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> <slot> ...
//
// Slots being imported or migrated ("[slot->-id]") are skipped.
func parseClusterNodes(text string) []clusterNode {
	var view []clusterNode
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		e := clusterNode{id: f[0], addr: addr, flags: strings.Split(f[2], ","), masterID: f[3]}
		for _, s := range f[8:] {
			if strings.HasPrefix(s, "[") {
				continue
			}
			lo, hi, isRange := strings.Cut(s, "-")
			if !isRange {
				hi = lo
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 == nil && err2 == nil {
				e.slots = append(e.slots, [2]int{a, b})
			}
		}
		view = append(view, e)
	}
	return view
}

func formatView(view []clusterNode) string {
	var b strings.Builder
	for _, e := range view {
		fmt.Fprintf(&b, "  %s %s master=%s slots=%v\n", e.addr, strings.Join(e.flags, ","), e.masterID, e.slots)
	}
	return b.String()
}
