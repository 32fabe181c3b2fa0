package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// lockACL is the least privilege a lock client needs, as README.md
// documents it: the two script commands, the commands the scripts call, and
// the keys of the locks and their fence keys.
var lockACL = []string{"~locks:*", "+evalsha", "+eval", "+get", "+set", "+del", "+pexpire", "+pttl", "+time"}

// waitACL is lockACL plus what WaitForRelease uses: its scripts' line
// commands and the blocking BLPOP.
var waitACL = append(slices.Clone(lockACL), "+zadd", "+zrangebyscore", "+zscore", "+zrem", "+rpush", "+blpop")

// setUser creates (or resets) an ACL user named and authenticated by name,
// with rules.
func setUser(t *testing.T, admin *redis.Client, name string, rules []string) {
	t.Helper()
	args := []any{"ACL", "SETUSER", name, "reset", "on", ">" + name, "resetchannels", "-@all"}
	for _, r := range rules {
		args = append(args, r)
	}
	if err := admin.Do(context.Background(), args...).Err(); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
}

// useEveryFeature exercises the whole lock API on keys under prefix and
// returns the first unexpected error.
func useEveryFeature(ctx context.Context, rdb redislock.RedisClient, prefix string) error {
	key, fence := prefix+":lock", prefix+":fence"
	lock, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{FenceKey: fence, Metadata: "host:1"})
	if err != nil {
		return fmt.Errorf("Obtain: %w", err)
	}
	if _, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{
		RetryStrategy: redislock.LimitRetry(redislock.LinearBackoff(time.Millisecond), 2),
	}); !errors.Is(err, redislock.ErrNotObtained) {
		return fmt.Errorf("Obtain of a held lock: %w", err)
	}
	again, err := redislock.Obtain(ctx, rdb, key, time.Minute, &redislock.Options{Token: lock.Token(), FenceKey: fence})
	if err != nil || again.FenceToken() != lock.FenceToken() {
		return fmt.Errorf("re-entrant Obtain: token %d, %w", again.FenceToken(), err)
	}
	if d, err := lock.TTL(ctx); err != nil || d <= 0 {
		return fmt.Errorf("TTL = %v: %w", d, err)
	}
	if err := lock.Refresh(ctx, 2*time.Minute, nil); err != nil {
		return fmt.Errorf("Refresh: %w", err)
	}
	multi, err := redislock.ObtainMulti(ctx, rdb, []string{prefix + ":a", prefix + ":b"}, time.Minute, &redislock.Options{FenceKey: fence})
	if err != nil {
		return fmt.Errorf("ObtainMulti: %w", err)
	}
	if err := multi.Release(ctx); err != nil {
		return fmt.Errorf("Release of ObtainMulti: %w", err)
	}
	if err := lock.Release(ctx); err != nil {
		return fmt.Errorf("Release: %w", err)
	}
	if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
		return fmt.Errorf("second Release: %w", err)
	}
	if err := lock.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
		return fmt.Errorf("Refresh of a released lock: %w", err)
	}
	return nil
}

// permissionDenied reports whether err is Redis refusing a command or a key
// to the user: NOPERM for EVAL, EVALSHA and the script's declared keys, and
// for a command called inside a script, the error that wraps it.
func permissionDenied(err error) bool {
	var reply redis.Error
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	// Redis 7: "NOPERM …" or "ERR The user executing the script can't run
	// this command …"; Valkey 8: "ERR ACL failure in script: User … has no
	// permissions to run the 'get' command".
	return errors.As(err, &reply) &&
		(strings.Contains(msg, "NOPERM") || strings.Contains(msg, "can't run this command") || strings.Contains(msg, "no permissions"))
}

func TestACLLeastPrivilege(t *testing.T) {
	t.Parallel()
	for _, f := range []redistest.Flavor{redistest.Redis, redistest.Valkey} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv := redistest.NewServer(t, f)
			admin := srv.Client(t)
			ctx := context.Background()
			connect := func(user string) *redis.Client {
				o := srv.Options()
				o.Username, o.Password = user, user
				c := redis.NewClient(o)
				t.Cleanup(func() { _ = c.Close() })
				return c
			}

			setUser(t, admin, "locker", lockACL)
			if err := useEveryFeature(ctx, connect("locker"), "locks:"+t.Name()); err != nil {
				t.Fatalf("with the documented ACL %v: %v", lockACL, err)
			}

			// Without any one of its rules, the user gets a clear refusal
			// and nothing is left half-written: whatever a call left is a
			// whole lock, with its expiry, or a fence counter. The script
			// cache is flushed first, as after a restart or a failover, so
			// that EVAL is needed again.
			for i, rule := range lockACL {
				if err := admin.ScriptFlush(ctx).Err(); err != nil {
					t.Fatalf("SCRIPT FLUSH: %v", err)
				}
				rules := slices.Delete(slices.Clone(lockACL), i, i+1)
				if rule == "~locks:*" {
					rules = append(rules, "~other:*")
				}
				user := "without-" + strings.TrimLeft(rule, "+~:*")
				setUser(t, admin, user, rules)
				prefix := "locks:" + user
				err := useEveryFeature(ctx, connect(user), prefix)
				if !permissionDenied(err) {
					t.Errorf("without %q: got %v, want NOPERM or \"can't run this command\"", rule, err)
				}
				keys, _ := admin.Keys(ctx, prefix+":*").Result()
				for _, k := range keys {
					v := mustGet(t, admin, k)
					if k == prefix+":fence" {
						if _, err := strconv.ParseInt(v, 10, 64); err != nil {
							t.Errorf("without %q: fence counter %q", rule, v)
						}
						continue
					}
					if _, _, _, ok := refParse(v); !ok || admin.PTTL(ctx, k).Val() <= 0 {
						t.Errorf("without %q: %s left as %q with PTTL %v", rule, k, v, admin.PTTL(ctx, k).Val())
					}
				}
			}

			// Options.MinReplicas also needs WAIT: without it, a refusal;
			// with it, WAIT runs and finds no replica on this server.
			setUser(t, admin, "waiter", append(slices.Clone(lockACL), "+wait"))
			for user, want := range map[string]func(error) bool{
				"locker": permissionDenied,
				"waiter": func(err error) bool { return errors.Is(err, redislock.ErrNotReplicated) },
			} {
				_, err := redislock.Obtain(ctx, connect(user), "locks:"+user+":min-replicas", time.Minute, &redislock.Options{MinReplicas: 1, ReplicaTimeout: 10 * time.Millisecond})
				if !want(err) {
					t.Errorf("Obtain with MinReplicas as %s: got %v", user, err)
				}
				if n := admin.Exists(ctx, "locks:"+user+":min-replicas").Val(); n != 0 {
					t.Errorf("Obtain with MinReplicas as %s left the lock", user)
				}
			}

			// WaitForRelease also needs the commands of its queue, on keys
			// derived from the lock key: with a hash tag inside the prefix
			// ("locks:{job}") they stay under it.
			setUser(t, admin, "queue", waitACL)
			queue := connect("queue")
			key := "locks:{queue}:job"
			opt := &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)}
			holder, err := redislock.Obtain(ctx, queue, key, time.Minute, opt)
			if err != nil {
				t.Fatalf("Obtain with WaitForRelease and the documented ACL %v: %v", waitACL, err)
			}
			before := commandCalls(t, admin, "blpop")
			got := make(chan error, 1)
			go func() {
				waitCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				lock, err := redislock.Obtain(waitCtx, queue, key, time.Minute, opt)
				if err == nil {
					err = lock.Release(ctx)
				}
				got <- err
			}()
			for commandCalls(t, admin, "blpop") == before {
				// The waiter has not blocked yet.
			}
			if err := holder.Release(ctx); err != nil {
				t.Fatalf("Release to a waiter: %v", err)
			}
			if err := <-got; err != nil {
				t.Errorf("waiter with the documented ACL: %v", err)
			}
		})
	}
}

// commandCalls returns how many times the server ran cmd (INFO commandstats).
func commandCalls(t *testing.T, admin *redis.Client, cmd string) int64 {
	t.Helper()
	rest, _ := strings.CutPrefix(redistest.Info(t, admin, "commandstats", "cmdstat_"+cmd), "calls=")
	n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest+",", ',')], 10, 64)
	return n
}

// README.md documents exactly the ACL that the test grants.
func TestACLDocumented(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, acl := range [][]string{lockACL, waitACL[len(lockACL):]} {
		if rule := strings.Join(acl, " "); !strings.Contains(string(readme), rule) {
			t.Errorf("README.md does not contain the tested ACL rules:\n%s", rule)
		}
	}
}

// noScriptACL is what a user needs to obtain (unfenced), refresh and
// release single-key locks on a server with SET … IFEQ and DELIFEQ (Valkey 9; DELEX on Redis 8.4):
// no EVAL, EVALSHA or FCALL. HELLO, which the Client sends once to learn
// the server's version, needs no permission. On a Cluster, go-redis also
// reads the slot map.
var noScriptACL = []string{"~locks:*", "+get", "+set", "+delifeq"}

// On Valkey 9, a user who may run no script at all can obtain and release
// an unfenced lock of one key, and refresh and release a lock that another
// obtained, through Client.Attach, with the same ownership check by exact
// value.
func TestACLWithoutScripts(t *testing.T) {
	for _, tp := range redistest.Topologies() {
		if tp.Flavor != redistest.Valkey9 {
			continue
		}
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			admin := tp.NewClient(t)
			rules := noScriptACL
			if tp.Cluster {
				rules = append(slices.Clone(noScriptACL), "+cluster|slots", "+cluster|shards", "+cluster|nodes")
			}
			user := "noscript"
			if c, ok := admin.(*redis.ClusterClient); ok {
				if err := c.ForEachShard(ctx, func(ctx context.Context, node *redis.Client) error {
					setUser(t, node, user, rules)
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			} else {
				setUser(t, admin.(*redis.Client), user, rules)
			}
			o := tp.Options(t)
			o.Username, o.Password = user, user
			rdb := redis.NewUniversalClient(o)
			t.Cleanup(func() { _ = rdb.Close() })
			locker := redislock.New(rdb)

			key := "locks:{" + t.Name() + "}:job"
			fence := "locks:{" + t.Name() + "}:fence"
			if err := rdb.Eval(ctx, "return 1", []string{key}).Err(); !permissionDenied(err) {
				t.Fatalf("EVAL as %s: %v, want NOPERM (the test's premise)", user, err)
			}
			// One key, unfenced: a plain SET NX, which needs no script.
			plain, err := locker.Obtain(ctx, key, time.Minute, nil)
			if err != nil {
				t.Fatalf("Obtain as %s: %v", user, err)
			}
			if err := plain.Release(ctx); err != nil {
				t.Fatalf("Release as %s: %v", user, err)
			}
			if _, err := locker.Obtain(ctx, key, time.Minute, &redislock.Options{FenceKey: fence}); !permissionDenied(err) {
				t.Errorf("fenced Obtain as %s: %v, want NOPERM: a fenced obtain needs a script", user, err)
			}
			if n := admin.Exists(ctx, key).Val(); n != 0 {
				t.Errorf("key left after the Release and the refused Obtain as %s", user)
			}

			held, err := redislock.New(admin).Obtain(ctx, key, time.Minute, &redislock.Options{FenceKey: fence, Metadata: "by admin"})
			if err != nil {
				t.Fatalf("Obtain as admin: %v", err)
			}
			wrong, err := locker.Attach([]string{key}, "not-"+held.Token(), 0)
			if err != nil {
				t.Fatal(err)
			}
			if err := wrong.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Errorf("Refresh with a wrong token as %s: %v, want ErrNotObtained", user, err)
			}
			if err := wrong.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
				t.Errorf("Release with a wrong token as %s: %v, want ErrLockNotHeld", user, err)
			}
			lock, err := locker.Attach([]string{key}, held.Token(), held.FenceToken())
			if err != nil {
				t.Fatal(err)
			}
			if err := lock.Refresh(ctx, 3*time.Minute, nil); err != nil {
				t.Fatalf("Refresh as %s: %v", user, err)
			}
			if d := admin.PTTL(ctx, key).Val(); d <= 2*time.Minute {
				t.Errorf("PTTL after a Refresh to 3 min = %v", d)
			}
			ka, err := lock.KeepAlive(time.Minute, nil)
			if err != nil {
				t.Fatalf("KeepAlive as %s: %v", user, err)
			}
			if err := lock.Release(ctx); err != nil {
				t.Fatalf("Release as %s: %v", user, err)
			}
			<-ka.Done()
			if n := admin.Exists(ctx, key).Val(); n != 0 {
				t.Errorf("key left after Release as %s", user)
			}
			if err := lock.Release(ctx); !errors.Is(err, redislock.ErrLockNotHeld) {
				t.Errorf("second Release as %s: %v, want ErrLockNotHeld", user, err)
			}
			if err := held.Refresh(ctx, time.Minute, nil); !errors.Is(err, redislock.ErrNotObtained) {
				t.Errorf("the holder's Refresh after the Release: %v, want ErrNotObtained", err)
			}
		})
	}
}
