package redislock

import (
	"context"
	"fmt"
	"testing"

	"github.com/redislock/redislock/internal/redistest"
)

// refresh_many.lua refreshes each lease as refresh.lua alone would: the
// same reply, the same keys extended or left alone, for every mix of keys
// ours, gone and another's, on every server version.
func TestRefreshManyAsRefresh(t *testing.T) {
	// A lease's keys, each "ours", "gone" or "theirs".
	leases := [][]string{
		{"ours"}, {"gone"}, {"theirs"},
		{"ours", "ours", "ours"}, {"ours", "gone"}, {"theirs", "ours"},
		{"ours", "theirs", "gone"}, {"gone", "theirs"}, {"theirs", "theirs"},
	}
	for _, f := range []redistest.Flavor{redistest.Redis, redistest.Valkey, redistest.Redis8, redistest.Valkey9} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			rdb := redistest.SharedServer(t, f).Client(t)
			ctx := context.Background()
			const token, ttl = "tok", int64(5000)
			write := func(key, state string) {
				switch state {
				case "ours":
					rdb.Set(ctx, key, fmt.Sprintf("%d:%s:0:", len(token), token), 0)
				case "theirs":
					rdb.Set(ctx, key, "5:other:0:", 0)
				}
			}
			var manyKeys []string
			manyArgs := []any{ttl}
			want := make([]int64, len(leases))
			for i, states := range leases {
				var one, many []string
				for j, st := range states {
					one = append(one, redistest.Key(t, fmt.Sprintf("one.%d.%d", i, j)))
					many = append(many, redistest.Key(t, fmt.Sprintf("many.%d.%d", i, j)))
					write(one[j], st)
					write(many[j], st)
				}
				n, err := refreshScript.Run(ctx, rdb, one, token, ttl).Int64()
				if err != nil {
					t.Fatalf("refresh.lua: %v", err)
				}
				want[i] = n
				manyKeys = append(manyKeys, many...)
				manyArgs = append(manyArgs, int64(len(many)), token)
			}
			got, err := refreshMany.Run(ctx, rdb, manyKeys, manyArgs...).Int64Slice()
			if err != nil {
				t.Fatalf("refresh_many.lua: %v", err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("refresh_many.lua replied %v, refresh.lua %v", got, want)
			}
			for i, states := range leases {
				for j := range states {
					one := redistest.Key(t, fmt.Sprintf("one.%d.%d", i, j))
					many := redistest.Key(t, fmt.Sprintf("many.%d.%d", i, j))
					a, b := rdb.PTTL(ctx, one).Val() > 0, rdb.PTTL(ctx, many).Val() > 0
					if a != b {
						t.Errorf("lease %v key %d: extended by refresh.lua %v, by refresh_many.lua %v", states, j, a, b)
					}
				}
			}
		})
	}
}
