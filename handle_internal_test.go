package redislock

import (
	"testing"
	"unsafe"
)

// TestHandleSize keeps the handle, one allocation per obtain, within the
// 512 bytes that the Go allocator serves without a malloc header
// (docs/ARCHITECTURE.md, "One handle under every primitive").
func TestHandleSize(t *testing.T) {
	if n := unsafe.Sizeof(handle{}); n > 512 {
		t.Fatalf("handle is %d bytes, over 512", n)
	}
}
