package value

import (
	"crypto/sha1" //nolint:gosec // G505: the tag's definition
	"encoding"
	"encoding/hex"
	"math"
	"strconv"
	"strings"
	"testing"
)

// bytesOf returns what go-redis writes for a.
func bytesOf(t *testing.T, a encoding.BinaryMarshaler) string {
	t.Helper()
	b, err := a.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if s := a.(interface{ String() string }).String(); s != string(b) {
		t.Fatalf("String() = %q, MarshalBinary = %q", s, b)
	}
	return string(b)
}

func TestArgsZero(t *testing.T) {
	var a Args
	if a.Owner() != nil || a.Token() != "" || a.FenceTag() != "" {
		t.Fatalf("zero Args: owner %v, token %q, tag %q", a.Owner(), a.Token(), a.FenceTag())
	}
}

func TestArgsToken(t *testing.T) {
	var a Args
	tok := a.NewToken()
	token := a.Token()
	if len(token) != TokenLen || strings.Trim(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		t.Fatalf("token %q: not %d base64url characters", token, TokenLen)
	}
	if got := bytesOf(t, tok); got != token {
		t.Fatalf("token argument %q, want %q", got, token)
	}
	if got := bytesOf(t, a.Owner()); got != Owner(token) {
		t.Fatalf("owner argument %q, want %q", got, Owner(token))
	}
	var b Args
	if b.NewToken(); b.Token() == token {
		t.Fatalf("two generated tokens are equal: %q", token)
	}
}

func TestArgsValue(t *testing.T) {
	for _, metadata := range []string{"", "host:42", strings.Repeat("m", 100)} {
		var a Args
		a.NewToken()
		if got, want := bytesOf(t, a.Value(metadata)), Format(a.Token(), 0, "", metadata); got != want {
			t.Errorf("Value(%q) = %q, want %q", metadata, got, want)
		}
		if got := bytesOf(t, a.Rest(metadata, false)); got != ":"+metadata {
			t.Errorf("Rest(%q, false) = %q", metadata, got)
		}
	}
}

func TestArgsFence(t *testing.T) {
	var a Args
	sum := sha1.Sum([]byte("{job}:fence")) //nolint:gosec // G401: the tag's definition
	want := hex.EncodeToString(sum[:4])
	if got := bytesOf(t, a.Fence("{job}:fence")); got != want || a.FenceTag() != want {
		t.Fatalf("Fence = %q, FenceTag = %q, want %q", got, a.FenceTag(), want)
	}
	if got := bytesOf(t, a.Rest("m", true)); got != "/"+want+":m" {
		t.Fatalf("Rest(m, true) = %q, want %q", got, "/"+want+":m")
	}
}

func TestArgsTTL(t *testing.T) {
	var a Args
	for _, ms := range []int64{1, 60000, math.MaxInt64} {
		if got := bytesOf(t, a.TTL(ms)); got != strconv.FormatInt(ms, 10) || bytesOf(t, a.TTLArg()) != got {
			t.Errorf("TTL(%d) = %q", ms, got)
		}
	}
}
