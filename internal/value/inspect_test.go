package value

import (
	"testing"
	"time"
)

func TestParseInspect(t *testing.T) {
	tests := []struct {
		reply any
		want  Info
		ok    bool
	}{
		{[]any{}, Info{}, true},
		{[]any{int64(-1)}, Info{Held: true, Foreign: true, TTL: -time.Millisecond}, true},
		{[]any{int64(5), "bsm"}, Info{Held: true, Foreign: true, Value: "bsm", TTL: 5 * time.Millisecond}, true},
		{[]any{int64(5), "3:abc:7:m"}, Info{Held: true, Token: "abc", Fence: 7, Metadata: "m",
			Value: "3:abc:7:m", TTL: 5 * time.Millisecond}, true},
		{"OK", Info{}, false},
		{[]any{"5"}, Info{}, false},
		{[]any{int64(5), int64(1)}, Info{}, false},
		{[]any{int64(5), "v", "w"}, Info{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseInspect(tt.reply)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseInspect(%#v) = %+v, %v; want %+v, %v", tt.reply, got, ok, tt.want, tt.ok)
		}
	}
}
