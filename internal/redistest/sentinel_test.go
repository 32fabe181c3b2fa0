package redistest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestSentinelFailover forces a failover and checks that the failover client
// follows the master.
func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewSentinel(t, Redis)
	old := s.MasterAddr(t)
	if old != s.Servers()[0].Addr() {
		t.Fatalf("MasterAddr = %s, want the first server %s", old, s.Servers()[0])
	}
	client := s.Client(t)
	key := Key(t, "k")
	if err := client.Set(ctx, key, "before", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}

	addr := s.Failover(t)
	if want := s.Servers()[1].Addr(); addr != want {
		t.Fatalf("Failover moved the master to %s, want %s", addr, want)
	}
	if got := s.MasterAddr(t); got != addr {
		t.Errorf("MasterAddr after Failover = %s, want %s", got, addr)
	}
	newMaster := s.Master(t)
	expectWriteLandsOn(t, client, newMaster, key)
}

// TestSentinelKillMaster kills the master and waits for the sentinels to
// promote the replica. It runs on Valkey, as the shared sentinel topology
// covers Redis.
func TestSentinelKillMaster(t *testing.T) {
	t.Parallel()
	s := NewSentinel(t, Valkey)
	client := s.Client(t)
	killed := s.KillMaster(t)
	addr := s.WaitFailover(t, killed)
	if addr == killed || addr != s.Servers()[1].Addr() {
		t.Fatalf("WaitFailover = %s after killing %s, want %s", addr, killed, s.Servers()[1])
	}
	expectWriteLandsOn(t, client, s.Master(t), Key(t, "k"))
}

// expectWriteLandsOn writes through client until the value shows up on
// master, for at most 10 s: the failover client switches masters when the
// sentinels announce it.
func expectWriteLandsOn(t *testing.T, client *redis.Client, master *Server, key string) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		v := strconv.Itoa(i)
		err := client.Set(ctx, key, v, 0).Err()
		if err == nil {
			if got, _ := master.adminClient().Get(ctx, key).Result(); got == v {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("writes through the failover client do not reach %s after 10 s (last error %v)", master, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
