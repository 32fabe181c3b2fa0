package redistest

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestTopologies runs a multi-key script on every topology's shared
// instance: keys of one test share a slot, so it works on a Cluster too.
func TestTopologies(t *testing.T) {
	script := redis.NewScript(`redis.call("SET", KEYS[1], ARGV[1]); redis.call("SET", KEYS[2], ARGV[1]); return redis.call("MGET", KEYS[1], KEYS[2])`)
	for _, tp := range Topologies() {
		t.Run(tp.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			client := tp.NewClient(t)
			_, isCluster := client.(*redis.ClusterClient)
			if isCluster != tp.Cluster {
				t.Errorf("client is %T, Cluster = %v", client, tp.Cluster)
			}
			got, err := script.Run(ctx, client, []string{Key(t, "a"), Key(t, "b")}, "v").StringSlice()
			if err != nil {
				t.Fatalf("script: %v", err)
			}
			if want := []string{"v", "v"}; !reflect.DeepEqual(got, want) {
				t.Errorf("script = %q, want %q", got, want)
			}
			// Each topology runs the server its flavor names.
			want := map[Flavor]Version{Redis: {"redis", 7, 0, 0}, Valkey: {"valkey", 8, 0, 0}, Redis8: {"redis", 8, 0, 0}, Valkey9: {"valkey", 9, 1, 0}}[tp.Flavor]
			if v := tp.Version(t); v.Server != want.Server || v.Major != want.Major || !v.AtLeast(want.Major, want.Minor) {
				t.Errorf("Version() = %v, want %s %d.%d.x or a later %d.x", v, want.Server, want.Major, want.Minor, want.Major)
			}
			// A second client reaches the same shared instance.
			if v, err := tp.NewClient(t).Get(ctx, Key(t, "a")).Result(); err != nil || v != "v" {
				t.Errorf("GET through a second client = %q, %v; want \"v\"", v, err)
			}
			// So does one made from Options, of the same kind, with the
			// caller's changes.
			o := tp.Options(t)
			o.ClientName = "redistest-" + sanitize(t.Name())
			own := redis.NewUniversalClient(o)
			defer func() { _ = own.Close() }()
			if fmt.Sprintf("%T", own) != fmt.Sprintf("%T", client) {
				t.Errorf("client from Options is %T, NewClient's %T", own, client)
			}
			if v, err := own.Get(ctx, Key(t, "a")).Result(); err != nil || v != "v" {
				t.Errorf("GET through a client from Options = %q, %v; want \"v\"", v, err)
			}
			if name, err := own.ClientGetName(ctx).Result(); err != nil || name != o.ClientName {
				t.Errorf("CLIENT GETNAME through a client from Options = %q, %v; want %q", name, err, o.ClientName)
			}
		})
	}
}

func TestSelectTopologies(t *testing.T) {
	names := func(tps []Topology) []string {
		var out []string
		for _, tp := range tps {
			out = append(out, tp.Name)
		}
		return out
	}
	all := []string{"redis", "valkey", "redis8", "valkey9", "redis-cluster", "valkey-cluster", "redis8-cluster", "valkey9-cluster", "redis-sentinel"}
	for _, tc := range []struct {
		env  string
		want []string
	}{
		{"", all},
		{" , ", all},
		{"redis-cluster, redis", []string{"redis", "redis-cluster"}},
		{"valkey,nope", []string{"valkey", "nope"}},
		{"valkey9-cluster,redis8", []string{"redis8", "valkey9-cluster"}},
	} {
		if got := names(selectTopologies(tc.env)); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("selectTopologies(%q) = %q, want %q", tc.env, got, tc.want)
		}
	}

	f := &fakeTB{TB: t}
	f.run(func() { selectTopologies("nope")[0].NewClient(f) })
	if !f.failed {
		t.Errorf("NewClient of an unknown topology did not fail the test")
	}
	f = &fakeTB{TB: t}
	f.run(func() { selectTopologies("nope")[0].Options(f) })
	if !f.failed {
		t.Errorf("Options of an unknown topology did not fail the test")
	}
}
