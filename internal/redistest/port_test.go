package redistest

import "testing"

func TestFreePort(t *testing.T) {
	t.Parallel()
	seen := make(map[int]bool)
	for range 50 {
		p, err := freePort(true)
		if err != nil {
			t.Fatal(err)
		}
		if p == 6379 || p > maxPort || seen[p] || seen[p+10000] {
			t.Fatalf("freePort = %d (seen before: %v)", p, seen[p])
		}
		seen[p], seen[p+10000] = true, true
	}
}
