package redistest

import "testing"

func TestSlot(t *testing.T) {
	// Values from CLUSTER KEYSLOT (TestClusterSlot checks more on a server).
	for _, tc := range []struct {
		key  string
		want int
	}{
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", Slot("foo{}{bar}")},
		{"{}x", int(crc16("{}x") % 16384)},
		{"a{b", int(crc16("a{b") % 16384)},
	} {
		if got := Slot(tc.key); got != tc.want {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}
