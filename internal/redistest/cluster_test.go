package redistest

import (
	"context"
	"strconv"
	"testing"
)

// TestClusterFailover forms an own cluster, moves a key's slot to the replica
// with CLUSTER FAILOVER, then kills that new master and waits for the old one
// to be promoted back.
func TestClusterFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := NewCluster(t, Redis)
	client := c.Client(t)
	key := Key(t, "k")
	if err := client.Set(ctx, key, "1", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}

	master := c.MasterForKey(t, key)
	replica := c.ReplicaOf(t, master)
	if replica == master {
		t.Fatalf("ReplicaOf(%s) = itself", master)
	}
	c.Failover(t, replica)
	if got := c.MasterForKey(t, key); got != replica {
		t.Fatalf("after Failover, master of %s = %s, want %s", key, got, replica)
	}
	if err := client.Set(ctx, key, "2", 0).Err(); err != nil {
		t.Fatalf("SET after failover: %v", err)
	}
	if got, err := replica.adminClient().Get(ctx, key).Result(); err != nil || got != "2" {
		t.Fatalf("GET on the new master = %q, %v; want \"2\"", got, err)
	}

	// The old master is now the replica; kill the new master and wait for
	// the automatic failover.
	if got := c.ReplicaOf(t, replica); got != master {
		t.Fatalf("ReplicaOf(new master) = %s, want the old master %s", got, master)
	}
	replica.Kill()
	c.WaitMaster(t, master)
	if got := c.MasterForKey(t, key); got != master {
		t.Fatalf("after killing %s, master of %s = %s, want %s", replica, key, got, master)
	}
}

// TestClusterSlot checks Slot and MasterForSlot against the servers.
func TestClusterSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := SharedCluster(t, Redis)
	admin := c.nodes[0].adminClient()
	for i := range 200 {
		key := Key(t, strconv.Itoa(i))
		if i%2 == 1 {
			key = "plain-key-" + strconv.Itoa(i) // no hash tag
		}
		want, err := admin.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got := Slot(key); got != int(want) {
			t.Errorf("Slot(%q) = %d, CLUSTER KEYSLOT = %d", key, got, want)
		}
	}
	masters := map[*Server]bool{}
	for _, slot := range []int{0, 8000, 16383} {
		masters[c.MasterForSlot(t, slot)] = true
	}
	if len(masters) != 3 {
		t.Errorf("slots 0, 8000, 16383 have %d distinct masters, want 3", len(masters))
	}
}

func TestParseClusterNodes(t *testing.T) {
	text := `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host1 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460 16000 [5461->-67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1]
6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 slave,fail 67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 0 1426238316232 5 disconnected
`
	view := parseClusterNodes(text)
	if len(view) != 4 {
		t.Fatalf("parsed %d nodes, want 4", len(view))
	}
	if e := view[0]; e.addr != "127.0.0.1:30004" || !e.has("slave") || e.masterID != "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca" || len(e.slots) != 0 {
		t.Errorf("node 0 = %+v", e)
	}
	if e := view[2]; !e.has("myself") || !e.has("master") || !e.serves(0) || !e.serves(5460) || !e.serves(16000) || e.serves(5461) || len(e.slots) != 2 {
		t.Errorf("node 2 = %+v", e)
	}
	if e := view[3]; !e.failing() {
		t.Errorf("node 3 = %+v, want failing", e)
	}
}
