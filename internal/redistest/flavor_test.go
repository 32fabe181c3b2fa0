package redistest

import (
	"context"
	"testing"
)

// The flavors from sid are the servers they claim to be: each has a
// command its predecessor lacks (Valkey 9.0's DELIFEQ and 8.1's SET IFEQ;
// Redis 8.0's HSETEX), and Redis 7.0 and Valkey 8.0 refuse them.
func TestSidFeatures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		f    Flavor
		want bool
	}{{Valkey9, true}, {Valkey, false}} {
		c := SharedServer(t, tc.f).Client(t)
		key := Key(t, string(tc.f))
		if err := c.Set(ctx, key, "a", 0).Err(); err != nil {
			t.Fatal(err)
		}
		setErr := c.Do(ctx, "SET", key, "b", "IFEQ", "a").Err()
		n, delErr := c.Do(ctx, "DELIFEQ", key, "b").Int()
		if got := setErr == nil && delErr == nil && n == 1; got != tc.want {
			t.Errorf("%s: SET IFEQ: %v; DELIFEQ: %d, %v; want them to work: %v", tc.f, setErr, n, delErr, tc.want)
		}
	}
	for _, tc := range []struct {
		f    Flavor
		want bool
	}{{Redis8, true}, {Redis, false}} {
		c := SharedServer(t, tc.f).Client(t)
		err := c.Do(ctx, "HSETEX", Key(t, string(tc.f)), "PX", "60000", "FIELDS", "1", "f", "v").Err()
		if got := err == nil; got != tc.want {
			t.Errorf("%s: HSETEX: %v; want it to work: %v", tc.f, err, tc.want)
		}
	}
}
