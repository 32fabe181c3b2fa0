package rwlock

import (
	"errors"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	keys := Keys("catalog")
	for _, tc := range []struct {
		name, fence, want string
	}{
		{"catalog", "", ""},
		{"catalog", "fence", ""},
		{"", "", "empty RWMutex name"},
		{"catalog", keys[Holds], "is a key of the RWMutex"},
	} {
		got := Check(tc.name, keys[:], tc.fence)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("Check(%q, %q) = %q, want %q", tc.name, tc.fence, got, tc.want)
		}
	}
}

func TestRegistration(t *testing.T) {
	if got := Registration(false); got != int64(0) {
		t.Errorf("Registration(false) = %v, want 0", got)
	}
	if got := Registration(true); got == int64(0) {
		t.Errorf("Registration(true) = %v, want a registration", got)
	}
}

func TestExplain(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want Refusal
		text string
	}{
		{replyError("ERR " + upgradeReply), Upgrade, `token "t" has a read hold of "n"`},
		{replyError("ERR " + heldByCallerReply), HeldByCaller, "(downgrade it instead)"},
		{errors.New("other"), NotRefused, ""},
	} {
		r, text := Explain(tc.err, "t", "n")
		if r != tc.want || !strings.Contains(text, tc.text) || (tc.text == "") != (text == "") {
			t.Errorf("Explain(%v) = %v, %q; want %v, %q", tc.err, r, text, tc.want, tc.text)
		}
	}
}
