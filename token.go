package redislock

import (
	"crypto/rand"
	"encoding/base64"
)

// newToken returns 16 random bytes from crypto/rand, base64url-encoded
// without padding: 22 characters, 128 bits of entropy.
func newToken() string {
	var raw [16]byte
	rand.Read(raw[:]) // never fails since Go 1.24
	var enc [22]byte
	base64.RawURLEncoding.Encode(enc[:], raw[:])
	return string(enc[:])
}
