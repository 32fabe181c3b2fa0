package value

import (
	"fmt"
	"testing"
)

func TestParseValue(t *testing.T) {
	tests := []struct {
		value    string
		token    string
		fence    int64
		metadata string
		ok       bool
	}{
		{"22:AAAAAAAAAAAAAAAAAAAAAA:0:", "AAAAAAAAAAAAAAAAAAAAAA", 0, "", true},
		{"3:abc:17:host:42", "abc", 17, "host:42", true},
		{"5:a:b:c:1732900000000000:", "a:b:c", 1732900000000000, "", true},
		{"1:::", "", 0, "", false},      // no fence digits
		{"1:x:0:", "x", 0, "", true},    // shortest
		{"0::0:", "", 0, "", false},     // empty token: never written
		{"3:ab:0:", "", 0, "", false},   // token shorter than its length
		{"3:abcd:0:", "", 0, "", false}, // no ":" after the token
		{"3:abc:-1:", "", 0, "", false}, // signed fence
		{"+3:abc:1:", "", 0, "", false}, // signed length
		{"3:abc:1", "", 0, "", false},   // no ":" after the fence
		{"99999999999999999999:x:1:", "", 0, "", false},
		{"bsm-token-and-metadata", "", 0, "", false},
		{"", "", 0, "", false},
		{"3:abc", "", 0, "", false},
		{"3:abc:17/0a1b2c3d:m", "abc", 17, "m", true}, // fenced: counter tag
		{"3:abc:17/:m", "", 0, "", false},             // empty tag
		{"3:abc:17/xyz:m", "", 0, "", false},          // tag not hex
		{"3:abc:/0a1b2c3d:m", "", 0, "", false},       // tag without token
	}
	for _, tt := range tests {
		token, fence, metadata, ok := Parse(tt.value)
		if token != tt.token || fence != tt.fence || metadata != tt.metadata || ok != tt.ok {
			t.Errorf("Parse(%q) = %q, %d, %q, %v; want %q, %d, %q, %v",
				tt.value, token, fence, metadata, ok, tt.token, tt.fence, tt.metadata, tt.ok)
		}
	}
}

// formatValue writes a value as lua/obtain.lua does.
func formatValue(token string, fence int64, metadata string) string {
	return fmt.Sprintf("%d:%s:%d:%s", len(token), token, fence, metadata)
}

func FuzzParseValue(f *testing.F) {
	f.Add("3:abc:17:host:42")
	f.Add("22:AAAAAAAAAAAAAAAAAAAAAA:0:")
	f.Add("bsm-value")
	f.Fuzz(func(t *testing.T, value string) {
		token, fence, metadata, ok := Parse(value)
		if !ok {
			if token != "" || fence != 0 || metadata != "" {
				t.Fatalf("Parse(%q) failed but returned %q, %d, %q", value, token, fence, metadata)
			}
			return
		}
		// Whatever parses describes the value: formatting it again and
		// parsing that gives the same fields.
		t2, f2, m2, ok2 := Parse(formatValue(token, fence, metadata))
		if !ok2 || t2 != token || f2 != fence || m2 != metadata {
			t.Fatalf("Parse(%q) = %q, %d, %q; its format does not parse back: %q, %d, %q, %v", value, token, fence, metadata, t2, f2, m2, ok2)
		}
	})
}

func FuzzParseValueRoundTrip(f *testing.F) {
	f.Add("abc", int64(17), "host:42")
	f.Add("a:b", int64(0), "")
	f.Fuzz(func(t *testing.T, token string, fence int64, metadata string) {
		if token == "" || fence < 0 {
			return
		}
		value := formatValue(token, fence, metadata)
		gotToken, gotFence, gotMetadata, ok := Parse(value)
		if !ok || gotToken != token || gotFence != fence || gotMetadata != metadata {
			t.Fatalf("Parse(%q) = %q, %d, %q, %v; want %q, %d, %q", value, gotToken, gotFence, gotMetadata, ok, token, fence, metadata)
		}
	})
}
