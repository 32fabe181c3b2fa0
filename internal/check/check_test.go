package check

import (
	"fmt"
	"testing"
	"time"
)

func TestKeys(t *testing.T) {
	many := make([]string, 20)
	for i := range many {
		many[i] = fmt.Sprint("k", i)
	}
	manyDup := append(append([]string(nil), many...), "k7")
	for _, tc := range []struct {
		keys  []string
		fence string
		want  string
	}{
		{nil, "", "no keys given"},
		{[]string{"a", ""}, "", "key 2 of 2 is empty"},
		{[]string{"a", "f"}, "f", `fence key "f" is also a lock key`},
		{[]string{"a", "b", "a"}, "", `key "a" is given more than once`},
		{manyDup, "", `key "k7" is given more than once`},
		{many, "fence", ""},
		{[]string{"a"}, "", ""},
	} {
		if got := Keys(tc.keys, tc.fence); got != tc.want {
			t.Errorf("Keys(%q, %q) = %q, want %q", tc.keys, tc.fence, got, tc.want)
		}
	}
}

func TestSlots(t *testing.T) {
	if all, slots := Slots([]string{"{j}:a", "{j}:b"}, "{j}:f"); all != nil || slots != nil {
		t.Errorf("same tag: got %q %v, want nil", all, slots)
	}
	all, slots := Slots([]string{"{j}:a", "{j}:b"}, "{k}:f")
	if len(all) != 3 || all[2] != "{k}:f" || len(slots) != 3 || slots[0] != slots[1] || slots[0] == slots[2] {
		t.Errorf("fence of another slot: got %q %v", all, slots)
	}
	all, slots = Slots([]string{"a", "b"}, "")
	if len(all) != 2 || len(slots) != 2 {
		t.Errorf("no fence key: got %q %v, want the two lock keys", all, slots)
	}
}

func TestNil(t *testing.T) {
	var p *int
	for _, tc := range []struct {
		v    any
		want bool
	}{{nil, true}, {p, true}, {new(int), false}, {3, false}} {
		if got := Nil(tc.v); got != tc.want {
			t.Errorf("Nil(%#v) = %v, want %v", tc.v, got, tc.want)
		}
	}
}

func TestMinHold(t *testing.T) {
	for _, tc := range []struct {
		d         time.Duration
		supported bool
		want      string
	}{
		{0, false, ""},
		{time.Second, true, ""},
		{-time.Second, true, "negative Options.MinHold (-1s)"},
		{time.Second, false, "Options.MinHold is not supported by an election"},
	} {
		if got := MinHold(tc.d, tc.supported, "an election"); got != tc.want {
			t.Errorf("MinHold(%v, %v) = %q, want %q", tc.d, tc.supported, got, tc.want)
		}
	}
}
