package redistest

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestCutReplication checks that a write made while replication is cut
// stays on the master, although the replica has tried (and failed) to
// reconnect, and that restoring replication brings it over.
func TestCutReplication(t *testing.T) {
	t.Parallel()
	for _, f := range allFlavors {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			master, replica := NewReplicated(t, f)
			m, r := master.Client(t), replica.Client(t)
			before, after := Key(t, "before"), Key(t, "after")

			if err := m.Set(ctx, before, "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			WaitSynced(t, master, replica)
			if n := r.Exists(ctx, before).Val(); n != 1 {
				t.Fatalf("after WaitSynced, %s is not on the replica", before)
			}

			restore := CutReplication(t, master, replica)
			if err := m.Set(ctx, after, "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			// Wait for a failed reconnection: the write must still be missing.
			err := waitFor("a refused reconnection", readyTimeout, pollInterval, func(context.Context) error {
				if !strings.Contains(readFrom(replica.logPath(), 0), "Unable to AUTH to") {
					return errNotYet
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n := r.Exists(ctx, after).Val(); n != 0 {
				t.Fatalf("%s reached the replica while replication was cut", after)
			}

			restore()
			WaitSynced(t, master, replica)
			if n := r.Exists(ctx, after).Val(); n != 1 {
				t.Fatalf("%s not on the replica after restore and WaitSynced", after)
			}
		})
	}
}

// NewReplicated returns a pair already in sync: the master counts its
// replica online at once (WAIT 1 needs no wait), and a write reaches the
// replica.
func TestNewReplicated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	master, replica := NewReplicated(t, Redis, "--maxmemory", "2mb")
	m, r := master.Client(t), replica.Client(t)
	if got := Info(t, m, "replication", "connected_slaves"); got != "1" {
		t.Errorf("master: connected_slaves:%s, want 1", got)
	}
	if got := Info(t, r, "replication", "master_port"); got != strconv.Itoa(master.Port()) {
		t.Errorf("replica: master_port:%s, want %d", got, master.Port())
	}
	for _, s := range []*Server{master, replica} {
		if got := s.adminClient().ConfigGet(ctx, "maxmemory").Val()["maxmemory"]; got != "2097152" {
			t.Errorf("%s: maxmemory %q, want the extra argument 2097152", s, got)
		}
	}
	key := Key(t, "k")
	if err := m.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n, err := m.Wait(ctx, 1, 0).Result(); err != nil || n != 1 {
		t.Fatalf("WAIT 1 0 = %d, %v; want 1", n, err)
	}
	if got, err := r.Get(ctx, key).Result(); err != nil || got != "v" {
		t.Errorf("GET on the replica = %q, %v; want \"v\"", got, err)
	}
}

// A master demoted to a replica of its former replica (as after a
// failover) still reports its own, higher offset until its full resync:
// WaitSynced must wait for the resync, which wipes what only the old master
// had. The new master delays the sync by a second, so returning early
// would show.
func TestWaitSyncedAfterDemotion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	oldMaster, newMaster := NewReplicated(t, Redis)
	o, n := oldMaster.Client(t), newMaster.Client(t)
	if err := n.ReplicaOf(ctx, "NO", "ONE").Err(); err != nil {
		t.Fatal(err)
	}
	if err := n.ConfigSet(ctx, "repl-diskless-sync-delay", "1").Err(); err != nil {
		t.Fatal(err)
	}
	stray := Key(t, "stray")
	if err := o.Set(ctx, stray, "only on the old master", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := o.ReplicaOf(ctx, "127.0.0.1", strconv.Itoa(newMaster.Port())).Err(); err != nil {
		t.Fatal(err)
	}
	WaitSynced(t, newMaster, oldMaster)
	if got := o.Exists(ctx, stray).Val(); got != 0 {
		t.Errorf("after WaitSynced, %s is still on the demoted master (EXISTS %d): it returned before the resync", stray, got)
	}
}
