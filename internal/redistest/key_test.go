package redistest

import (
	"strings"
	"sync"
	"testing"
)

func TestKey(t *testing.T) {
	a1, a2, b := Key(t, "a"), Key(t, "a"), Key(t, "b")
	if a1 != a2 {
		t.Errorf("Key(t, \"a\") = %q then %q, want the same", a1, a2)
	}
	if !strings.HasPrefix(a1, "{TestKey#") || !strings.HasSuffix(a1, "}:a") {
		t.Errorf("Key(t, \"a\") = %q, want {TestKey#...}:a", a1)
	}
	if Slot(a1) != Slot(b) {
		t.Errorf("Slot(%q) = %d, Slot(%q) = %d; want equal", a1, Slot(a1), b, Slot(b))
	}

	// Subtests, parallel ones and ones with the same name all differ.
	var mu sync.Mutex
	seen := map[string]string{a1: t.Name()}
	t.Run("group", func(t *testing.T) {
		for range 3 {
			for _, name := range []string{"same", "same", "with {braces} and spaces\t"} {
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					k := Key(t, "a")
					if tag := Tag(t); strings.Count(tag, "{") != 1 || strings.Count(tag, "}") != 1 || strings.ContainsAny(tag, " \t") {
						t.Errorf("Tag = %q: want one {...} without spaces", tag)
					}
					mu.Lock()
					defer mu.Unlock()
					if other, dup := seen[k]; dup {
						t.Errorf("Key %q also returned for %s", k, other)
					}
					seen[k] = t.Name()
				})
			}
		}
	})
}

func TestSanitize(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"TestObtain/redis", "TestObtain/redis"},
		{"Test/{x}", "Test/_x_"},
		{"a b\tc\nd", "a_b_c_d"},
		{"é\x00", "é_"},
	} {
		if got := sanitize(tc.in); got != tc.want {
			t.Errorf("sanitize(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
