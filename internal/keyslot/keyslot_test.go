package keyslot

import (
	"strings"
	"testing"
)

// Known vectors: the check value of CRC-16/XMODEM ("123456789" gives
// 0x31C3, as the Redis Cluster specification says) and CLUSTER KEYSLOT of
// a Redis 7 server.
func TestCRC16(t *testing.T) {
	cases := []struct {
		in   string
		want uint16
	}{
		{"", 0},
		{"123456789", 0x31C3},
		{"A", 0x58E5},
		{"\x00", 0},
		{"\xff", 0x1EF0},
	}
	for _, tc := range cases {
		if got := CRC16(tc.in); got != tc.want {
			t.Errorf("CRC16(%q) = %#04x, want %#04x", tc.in, got, tc.want)
		}
	}
}

func TestSlot(t *testing.T) {
	cases := []struct {
		key  string
		want int
	}{
		{"123456789", 0x31C3},
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", 3443},
		{"{user1000}.followers", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363},    // empty first tag: the whole key is hashed
		{"foo{{bar}}zap", 4015}, // the tag is "{bar"
		{"foo{bar}{zap}", 5061}, // only the first tag counts
		{"", 0},
	}
	for _, tc := range cases {
		if got := Slot(tc.key); got != tc.want {
			t.Errorf("Slot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
}

func TestTag(t *testing.T) {
	cases := []struct {
		key string
		tag string
		has bool
	}{
		{"", "", false},
		{"job", "", false},
		{"{job}:lock", "job", true},
		{"a{job}b{x}", "job", true},
		{"{}", "", false},
		{"{}{job}", "", false}, // the first "{" decides, and its tag is empty
		{"{{job}}", "{job", true},
		{"}{job}", "job", true},
		{"{job", "", false},
		{"job}", "", false},
	}
	for _, tc := range cases {
		tag, has := Tag(tc.key)
		if tag != tc.tag || has != tc.has {
			t.Errorf("Tag(%q) = %q, %v; want %q, %v", tc.key, tag, has, tc.tag, tc.has)
		}
		if got := HasTag(tc.key); got != tc.has {
			t.Errorf("HasTag(%q) = %v, want %v", tc.key, got, tc.has)
		}
	}
}

// refCRC16 is CRC-16/XMODEM as polynomial long division, independent of
// the shift-register loop of CRC16: the message, most significant bit
// first and followed by 16 zero bits, is divided by x^16+x^12+x^5+1 and the
// remainder kept.
func refCRC16(s string) uint16 {
	const poly = 0x11021
	var rem uint32
	bits := func(b byte) {
		for i := 7; i >= 0; i-- {
			rem = rem<<1 | uint32(b>>i&1)
			if rem&0x10000 != 0 {
				rem ^= poly
			}
		}
	}
	for i := 0; i < len(s); i++ {
		bits(s[i])
	}
	bits(0)
	bits(0)
	return uint16(rem)
}

// refSlot follows keyHashSlot of Redis's cluster.c: find the first "{",
// then the first "}" after it; hash what lies between when it is not empty.
func refSlot(key string) int {
	open := -1
	for i, c := range []byte(key) {
		if open < 0 && c == '{' {
			open = i
			continue
		}
		if open >= 0 && c == '}' {
			if i > open+1 {
				return int(refCRC16(key[open+1:i]) & 0x3FFF)
			}
			break
		}
	}
	return int(refCRC16(key) & 0x3FFF)
}

func FuzzSlot(f *testing.F) {
	for _, k := range []string{
		"", "123456789", "foo", "{user1000}.following", "foo{}{bar}", "foo{{bar}}zap",
		"foo{bar}{zap}", "{", "}", "{}", "}{", "{a", "a}", "{{}}", "\x00{\xff}\x00", "{job}:lock",
	} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if got, want := CRC16(key), refCRC16(key); got != want {
			t.Fatalf("CRC16(%q) = %#04x, reference %#04x", key, got, want)
		}
		got := Slot(key)
		if want := refSlot(key); got != want {
			t.Fatalf("Slot(%q) = %d, reference %d", key, got, want)
		}
		if got < 0 || got >= Count {
			t.Fatalf("Slot(%q) = %d, out of range", key, got)
		}
		tag, has := Tag(key)
		if has != (tag != "") || has && !strings.Contains(key, "{"+tag+"}") {
			t.Fatalf("Tag(%q) = %q, %v", key, tag, has)
		}
	})
}
