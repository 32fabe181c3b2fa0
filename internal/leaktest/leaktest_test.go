package leaktest

import (
	"testing"
	"time"
)

// A goroutine started after the snapshot is found while it runs, and not
// once it has exited.
func TestLeaked(t *testing.T) {
	s := Now()
	stop := make(chan struct{})
	go func() { <-stop }()
	if left := s.Leaked(20 * time.Millisecond); len(left) != 1 {
		t.Fatalf("%d goroutines found, want the one started: %q", len(left), left)
	}
	close(stop)
	if left := s.Leaked(5 * time.Second); left != nil {
		t.Fatalf("goroutines found after it exited: %q", left)
	}
}
