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
	for _, f := range []Flavor{Redis, Valkey} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			// Without the delay the replica's first full sync waits 5 s.
			master := NewServer(t, f, "--repl-diskless-sync-delay", "0")
			replica := NewServer(t, f, "--replicaof", "127.0.0.1", strconv.Itoa(master.Port()))
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
