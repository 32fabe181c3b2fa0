package semaphore

import (
	"strings"
	"testing"
	"time"
)

func TestCheckKey(t *testing.T) {
	for _, tc := range []struct {
		key, permits, want string
	}{
		{"jobs", "{jobs}:redislock:permits:untagged", ""},
		{"", "", "empty"},
		{"a}b", "", `give it one, like "{ab}"`},
	} {
		got := CheckKey(tc.key, tc.permits)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("CheckKey(%q, %q) = %q, want %q", tc.key, tc.permits, got, tc.want)
		}
	}
}

func TestCheckToken(t *testing.T) {
	if got := CheckToken("tok"); got != "" {
		t.Errorf("CheckToken(tok) = %q, want none", got)
	}
	if got := CheckToken(ReservationMark + "x"); got == "" {
		t.Errorf("CheckToken(%q) = none, want a refusal", ReservationMark+"x")
	}
}

func TestHolders(t *testing.T) {
	type info struct {
		Token      string
		Metadata   string
		FenceToken int64
		TTL        time.Duration
	}
	got, ok := Holders[info]([]any{"t", int64(5), "7:meta"})
	want := []info{{"t", "meta", 7, 5 * time.Millisecond}}
	if !ok || len(got) != 1 || got[0] != want[0] {
		t.Errorf("Holders = %v, %v; want %v, true", got, ok, want)
	}
	if _, ok := Holders[info]([]any{"t"}); ok {
		t.Error("Holders of a short reply: ok, want not ok")
	}
}
