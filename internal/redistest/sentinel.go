package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name under which the sentinels of a [Sentinel] monitor
// its master.
const MasterName = "mymaster"

// Sentinel is a master, one replica and three sentinels monitoring them as
// [MasterName] with quorum 2, down-after-milliseconds 1000 and
// failover-timeout 3000: a killed master is replaced in about 2 s, and
// SENTINEL FAILOVER takes about 1 s. Its methods are safe for concurrent use.
//
// After a failover the old master, if still running, keeps accepting writes
// for up to about 10 s before the sentinels turn it into a replica; a client
// pinned to its address can still write there.
type Sentinel struct {
	flavor    Flavor
	data      []*Server // [0] started as master, [1] as its replica
	sentinels []*Server

	mu     sync.Mutex
	admins map[*Server]*redis.SentinelClient
}

// NewSentinel starts a Sentinel setup of flavor f for the test alone, for
// tests that kill the master or force failovers. It blocks until the replica
// is in sync and every sentinel sees the master as up, the replica, and the
// two other sentinels; about 3 s, at most about 60 s. Cleanup kills every
// process and removes their directories; if the test failed, the tail of
// every log is printed first. A missing binary or a setup that does not
// become ready fails the test.
func NewSentinel(t testing.TB, f Flavor) *Sentinel {
	t.Helper()
	s, err := startSentinel(f)
	return own(t, s, err, 15)
}

func startSentinel(f Flavor) (_ *Sentinel, err error) {
	s := &Sentinel{flavor: f, admins: make(map[*Server]*redis.SentinelClient)}
	defer func() {
		if err != nil {
			report := s.report(15)
			s.stop()
			err = fmt.Errorf("%w\n%s", err, report)
		}
	}()

	master, replica, err := startReplicated(f, string(f)+"-sentinel", nil)
	for _, d := range []*Server{master, replica} {
		if d != nil {
			s.data = append(s.data, d)
		}
	}
	if err != nil {
		return nil, err
	}

	spec := serverSpec{
		flavor: f,
		label:  string(f) + "-sentinel",
		args: func(port int, dir string) ([]string, error) {
			// The sentinel rewrites this file: it must be its own and
			// writable.
			conf := filepath.Join(dir, "sentinel.conf")
			text := fmt.Sprintf(`port %d
bind 127.0.0.1
dir %q
logfile %q
sentinel monitor %s 127.0.0.1 %d 2
sentinel down-after-milliseconds %s 1000
sentinel failover-timeout %s 3000
`, port, dir, filepath.Join(dir, "log"), MasterName, master.Port(), MasterName, MasterName)
			if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
				return nil, fmt.Errorf("redistest: %w", err)
			}
			return []string{conf, "--sentinel"}, nil
		},
	}
	sentinels := make([]*Server, 3)
	errs := make([]error, len(sentinels))
	var wg sync.WaitGroup
	for i := range sentinels {
		wg.Go(func() { sentinels[i], errs[i] = launch(spec) })
	}
	wg.Wait()
	for _, sn := range sentinels {
		if sn != nil {
			s.sentinels = append(s.sentinels, sn)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := waitFor("sentinels ready", readyTimeout, pollInterval, s.checkReady); err != nil {
		return nil, err
	}
	return s, nil
}

// checkReady returns nil when every sentinel sees the master up at its
// starting address, one replica with its link up, and the two other
// sentinels.
func (s *Sentinel) checkReady(ctx context.Context) error {
	for _, sn := range s.sentinels {
		admin := s.admin(sn)
		m, err := admin.Master(ctx, MasterName).Result()
		if err != nil {
			return fmt.Errorf("%s: SENTINEL MASTER: %w", sn, err)
		}
		if addr := m["ip"] + ":" + m["port"]; addr != s.data[0].Addr() {
			return fmt.Errorf("%s: master at %s, want %s", sn, addr, s.data[0].Addr())
		}
		if m["flags"] != "master" || m["num-slaves"] != "1" || m["num-other-sentinels"] != strconv.Itoa(len(s.sentinels)-1) {
			return fmt.Errorf("%s: master flags=%s num-slaves=%s num-other-sentinels=%s: %w",
				sn, m["flags"], m["num-slaves"], m["num-other-sentinels"], errNotYet)
		}
		replicas, err := admin.Replicas(ctx, MasterName).Result()
		if err != nil {
			return fmt.Errorf("%s: SENTINEL REPLICAS: %w", sn, err)
		}
		if len(replicas) != 1 || replicas[0]["flags"] != "slave" || replicas[0]["master-link-status"] != "ok" {
			return fmt.Errorf("%s: replicas %v: %w", sn, replicas, errNotYet)
		}
		others, err := admin.Sentinels(ctx, MasterName).Result()
		if err != nil {
			return fmt.Errorf("%s: SENTINEL SENTINELS: %w", sn, err)
		}
		if len(others) != len(s.sentinels)-1 {
			return fmt.Errorf("%s: knows %d other sentinels: %w", sn, len(others), errNotYet)
		}
	}
	return nil
}

// admin returns the harness's sentinel client of sn.
func (s *Sentinel) admin(sn *Server) *redis.SentinelClient {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.admins[sn]
	if c == nil {
		c = redis.NewSentinelClient(adminOptions(sn.Addr()))
		s.admins[sn] = c
	}
	return c
}

// Flavor returns the setup's flavor.
func (s *Sentinel) Flavor() Flavor { return s.flavor }

// SentinelAddrs returns the addresses of the three sentinels.
func (s *Sentinel) SentinelAddrs() []string {
	addrs := make([]string, len(s.sentinels))
	for i, sn := range s.sentinels {
		addrs[i] = sn.Addr()
	}
	return addrs
}

// Sentinels returns the three sentinel processes.
func (s *Sentinel) Sentinels() []*Server { return slices.Clone(s.sentinels) }

// Servers returns the two data servers: the one started as master, then the
// one started as its replica. Their roles change with failovers: ask
// [Sentinel.Master].
func (s *Sentinel) Servers() []*Server { return slices.Clone(s.data) }

// MasterAddr returns the master's address as reported by the first running
// sentinel that answers SENTINEL GET-MASTER-ADDR-BY-NAME. It fails the test
// if none answers.
func (s *Sentinel) MasterAddr(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	addr, err := s.masterAddr(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func (s *Sentinel) masterAddr(ctx context.Context) (string, error) {
	var errs []error
	for _, sn := range s.sentinels {
		if !sn.running() {
			continue
		}
		hp, err := s.admin(sn).GetMasterAddrByName(ctx, MasterName).Result()
		if err == nil && len(hp) == 2 {
			return hp[0] + ":" + hp[1], nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", sn, err))
	}
	return "", fmt.Errorf("redistest: no sentinel reports the master: %w", errors.Join(errs...))
}

// Master returns the data server that the sentinels report as master (see
// [Sentinel.MasterAddr]).
func (s *Sentinel) Master(t testing.TB) *Server {
	t.Helper()
	addr := s.MasterAddr(t)
	if d := s.dataServer(addr); d != nil {
		return d
	}
	t.Fatalf("redistest: sentinels report master %s, which is none of %v", addr, s.data)
	return nil
}

func (s *Sentinel) dataServer(addr string) *Server { return serverAt(s.data, addr) }

// KillMaster kills the current master (see [Sentinel.Master]), blocks until
// it is reaped, and returns its address. The sentinels notice after about
// 1 s and promote the replica about 1 s later; [Sentinel.WaitFailover]
// waits for that.
func (s *Sentinel) KillMaster(t testing.TB) string {
	t.Helper()
	m := s.Master(t)
	m.Kill()
	return m.Addr()
}

// Failover sends SENTINEL FAILOVER for [MasterName] and blocks until every
// running sentinel reports a new master that answers as master (about 1 s),
// then returns its address. While an earlier failover is still settling
// (the sentinels answer INPROG or NOGOODSLAVE, for example because the old
// master is not yet a replica again) it retries. It fails the test after
// 30 s.
func (s *Sentinel) Failover(t testing.TB) string {
	t.Helper()
	old := s.MasterAddr(t)
	err := waitFor("SENTINEL FAILOVER accepted", failoverTimeout, pollInterval, func(ctx context.Context) error {
		// A failover whose reply was lost counts as accepted.
		if addr, err := s.masterAddr(ctx); err == nil && addr != old {
			return nil
		}
		var errs []error
		for _, sn := range s.sentinels {
			if !sn.running() {
				continue
			}
			err := s.admin(sn).Failover(ctx, MasterName).Err()
			if err == nil {
				return nil
			}
			errs = append(errs, fmt.Errorf("%s: %w", sn, err))
		}
		return errors.Join(errs...)
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, s.report(15))
	}
	return s.WaitFailover(t, old)
}

// WaitFailover blocks until every running sentinel reports the same master,
// other than old, and that server is running with role:master; then it
// returns the new master's address. It fails the test after 30 s.
func (s *Sentinel) WaitFailover(t testing.TB, old string) string {
	t.Helper()
	var addr string
	err := waitFor("sentinels report a master other than "+old, failoverTimeout, pollInterval, func(ctx context.Context) error {
		addr = ""
		for _, sn := range s.sentinels {
			if !sn.running() {
				continue
			}
			hp, err := s.admin(sn).GetMasterAddrByName(ctx, MasterName).Result()
			if err != nil || len(hp) != 2 {
				return fmt.Errorf("%s: SENTINEL GET-MASTER-ADDR-BY-NAME: %v %w", sn, hp, err)
			}
			a := hp[0] + ":" + hp[1]
			switch {
			case a == old:
				return fmt.Errorf("%s still reports %s: %w", sn, old, errNotYet)
			case addr != "" && a != addr:
				return fmt.Errorf("sentinels disagree: %s and %s: %w", addr, a, errNotYet)
			}
			addr = a
		}
		d := s.dataServer(addr)
		if d == nil || !d.running() {
			return fmt.Errorf("new master %s is not a running server of this setup", addr)
		}
		info, err := d.adminClient().Info(ctx, "replication").Result()
		if err != nil {
			return fmt.Errorf("%s: INFO replication: %w", d, err)
		}
		if role, _ := infoField(info, "role"); role != "master" {
			return fmt.Errorf("%s: role:%s: %w", d, role, errNotYet)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, s.report(15))
	}
	return addr
}

// Options returns new go-redis failover options naming [MasterName] and the
// three sentinels, with go-redis's defaults otherwise. The caller owns them.
func (s *Sentinel) Options() *redis.FailoverOptions {
	return &redis.FailoverOptions{MasterName: MasterName, SentinelAddrs: s.SentinelAddrs()}
}

// Client returns a new go-redis failover client (redis.NewFailoverClient)
// with [Sentinel.Options]; it follows the master across failovers. It does
// not block. Cleanup closes it.
func (s *Sentinel) Client(t testing.TB) *redis.Client {
	t.Helper()
	c := redis.NewFailoverClient(s.Options())
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// stop kills every process and removes their directories.
func (s *Sentinel) stop() {
	s.mu.Lock()
	for sn, c := range s.admins {
		_ = c.Close()
		delete(s.admins, sn)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, srv := range slices.Concat(s.sentinels, s.data) {
		wg.Go(srv.stop)
	}
	wg.Wait()
}

// report returns the last n lines of every log.
func (s *Sentinel) report(n int) string {
	var b strings.Builder
	for _, srv := range slices.Concat(s.data, s.sentinels) {
		b.WriteString(srv.report(n))
	}
	return b.String()
}
