package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// badMasterAuth is the password CutReplication gives a replica: the
// harness's servers have none, so AUTH with it always fails.
const badMasterAuth = "redistest-cut-replication"

// CutReplication stops replica from replicating master while both keep
// running, so that what is written to master from then on exists on master
// alone: a failover that promotes replica loses it, deterministically. It
// gives replica a masterauth that master refuses (every reconnection then
// fails with "Unable to AUTH to MASTER" in replica's log) and closes
// master's replica connections (CLIENT KILL TYPE replica; every replica of
// master loses its link). It blocks until master reports no connected
// replica and replica reports its link down, for at most 30 s.
//
// The returned function restores replication: it clears replica's
// masterauth, so that replica's next attempt, within about a second,
// succeeds; it does nothing if replica is not running, and Cleanup calls it
// too. Replica stays a healthy, answering server meanwhile: Sentinel and
// Cluster still promote it. It fails the test if a command fails.
func CutReplication(t testing.TB, master, replica *Server) (restore func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	if err := replica.adminClient().ConfigSet(ctx, "masterauth", badMasterAuth).Err(); err != nil {
		t.Fatalf("redistest: CONFIG SET masterauth on %s: %v", replica, err)
	}
	var once sync.Once
	restore = func() {
		once.Do(func() { restoreAuth(t, replica) })
	}
	t.Cleanup(restore)
	if err := master.adminClient().Do(ctx, "CLIENT", "KILL", "TYPE", "replica").Err(); err != nil {
		t.Fatalf("redistest: CLIENT KILL TYPE replica on %s: %v", master, err)
	}
	err := waitFor("replication from "+master.String()+" to "+replica.String()+" cut", readyTimeout, pollInterval, func(ctx context.Context) error {
		info, err := master.adminClient().Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("%s: INFO replication: %w", master, err)
		}
		if n, _ := infoField(info, "connected_slaves"); n != "0" {
			return fmt.Errorf("%s: connected_slaves:%s: %w", master, n, errNotYet)
		}
		info, err = replica.adminClient().Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("%s: INFO replication: %w", replica, err)
		}
		if st, _ := infoField(info, "master_link_status"); st != "down" {
			return fmt.Errorf("%s: master_link_status:%s: %w", replica, st, errNotYet)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s%s", err, master.report(15), replica.report(15))
	}
	return restore
}

// restoreAuth clears the masterauth that CutReplication set on replica,
// unless replica is no longer running.
func restoreAuth(t testing.TB, replica *Server) {
	if !replica.running() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	if err := replica.adminClient().ConfigSet(ctx, "masterauth", "").Err(); err != nil {
		t.Errorf("redistest: CONFIG SET masterauth \"\" on %s: %v", replica, err)
	}
}

// WaitSynced blocks until replica has applied everything master had
// written when WaitSynced was called (replica's link to master is up and
// its slave_repl_offset reaches master's master_repl_offset), for at most
// 30 s. A master just demoted to a replica has then had its full resync:
// what it alone had is gone. After it returns, a
// failover that promotes replica keeps those writes. It fails the test if
// replica does not catch up.
func WaitSynced(t testing.TB, master, replica *Server) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	info, err := master.adminClient().Info(ctx, "replication").Result()
	if err != nil {
		t.Fatalf("redistest: %s: INFO replication: %v", master, err)
	}
	v, _ := infoField(info, "master_repl_offset")
	want, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		t.Fatalf("redistest: %s: master_repl_offset:%q", master, v)
	}
	err = waitFor(replica.String()+" at offset "+v+" of "+master.String(), readyTimeout, pollInterval, func(ctx context.Context) error {
		info, err := replica.adminClient().Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("%s: INFO replication: %w", replica, err)
		}
		host, _ := infoField(info, "master_host")
		port, _ := infoField(info, "master_port")
		if host+":"+port != master.Addr() {
			return fmt.Errorf("%s replicates %s:%s, not %s", replica, host, port, master)
		}
		// Until its link is up, a replica reports the offset it would
		// resume from: a demoted master's own, which can be past its new
		// master's although its data set is still its own.
		if st, _ := infoField(info, "master_link_status"); st != "up" {
			return fmt.Errorf("%s: master_link_status:%s: %w", replica, st, errNotYet)
		}
		v, _ := infoField(info, "slave_repl_offset")
		got, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: slave_repl_offset:%q: %w", replica, v, errNotYet)
		}
		if got < want {
			return fmt.Errorf("%s: slave_repl_offset:%d, want %d: %w", replica, got, want, errNotYet)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s%s", err, master.report(15), replica.report(15))
	}
}

// NewReplicated starts a master of flavor f and one replica of it for the
// test alone, each a standalone server as [NewServer] starts it with args
// appended (the master with diskless sync and no delay, so the first sync
// takes milliseconds). It blocks until the replica's link is up and the
// master counts it online (after its first acknowledgement, so WAIT
// counts it), for at most 30 s. Cleanup stops both; if the test failed,
// the tail of both logs is printed. A missing binary or a pair that does
// not sync fails the test.
func NewReplicated(t testing.TB, f Flavor, args ...string) (master, replica *Server) {
	t.Helper()
	master, replica, err := startReplicated(f, string(f), args)
	for _, s := range []*Server{master, replica} {
		if s != nil {
			t.Cleanup(s.stop)
			reportOnFailure(t, s, func() string { return s.report(40) })
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return master, replica
}

// startReplicated starts a master and a replica of it, labelled
// label+"-master" and label+"-replica", with extra args each, and waits
// until they are in sync. On error the servers started so far are
// returned with it, for the caller to stop and report.
func startReplicated(f Flavor, label string, extra []string) (master, replica *Server, err error) {
	master, err = launch(serverSpec{
		flavor: f,
		label:  label + "-master",
		args: func(port int, dir string) ([]string, error) {
			return append(append(dataArgs(port, dir), "--repl-diskless-sync-delay", "0"), extra...), nil
		},
	})
	if err != nil {
		return nil, nil, err
	}
	replica, err = launch(serverSpec{
		flavor: f,
		label:  label + "-replica",
		args: func(port int, dir string) ([]string, error) {
			return append(append(dataArgs(port, dir),
				"--repl-diskless-sync-delay", "0",
				"--replicaof", "127.0.0.1", strconv.Itoa(master.Port()),
			), extra...), nil
		},
	})
	if err != nil {
		return master, nil, err
	}
	err = waitFor(replica.String()+" in sync with "+master.String(), readyTimeout, pollInterval, func(ctx context.Context) error {
		if st, err := infoMap(ctx, replica.adminClient(), "replication", "master_link_status"); err != nil || st != "up" {
			return fmt.Errorf("%s: master_link_status:%s (%w): %w", replica, st, err, errNotYet)
		}
		// slave0:ip=…,port=…,state=online,offset=…,lag=…
		st, err := infoMap(ctx, master.adminClient(), "replication", "slave0")
		if err != nil || !strings.Contains(st, "port="+strconv.Itoa(replica.Port())+",state=online") {
			return fmt.Errorf("%s: slave0:%s (%w): %w", master, st, err, errNotYet)
		}
		return nil
	})
	return master, replica, err
}
