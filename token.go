package redislock

import (
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // G505: a tag naming a key in stored values, not a security measure
	"encoding/base64"
	"encoding/hex"
	"strconv"
)

// tokenLen is the length of a generated token.
const tokenLen = 22

// newToken returns 16 random bytes from crypto/rand, base64url-encoded
// without padding: 22 characters, 128 bits of entropy.
func newToken() string {
	var enc [tokenLen]byte
	fillToken(&enc)
	return string(enc[:])
}

// fillToken writes a token as newToken makes it into enc.
func fillToken(enc *[tokenLen]byte) {
	var raw [16]byte
	rand.Read(raw[:]) // never fails since Go 1.24
	base64.RawURLEncoding.Encode(enc[:], raw[:])
}

// scriptArg is a script argument whose bytes live in storage of their own
// (an obtainArgs). Boxed in an interface as a pointer, it costs no
// allocation, where a string or an int64 does; go-redis writes it as its
// bytes (encoding.BinaryMarshaler).
type scriptArg struct{ b []byte }

// MarshalBinary returns the argument's bytes; the caller must not modify
// them.
func (a *scriptArg) MarshalBinary() ([]byte, error) { return a.b, nil }

// String returns the argument as text, for hooks that print commands.
func (a *scriptArg) String() string { return string(a.b) }

// obtainArgs holds an obtain's generated token, its TTL and its fence
// counter's tag as the script takes them, in the Lock it builds: a failed
// obtain, whose Lock the Client reuses (see Client.spare), then boxes no
// argument of its own.
type obtainArgs struct {
	token, ttl, value, fence scriptArg
	tokenBuf                 [tokenLen]byte
	ttlBuf                   [20]byte // an int64 in decimal
	valueBuf                 [40]byte // the value of a plain SET, short metadata inline
	fenceBuf                 [8]byte  // the fence counter's tag
}

// newToken generates a token into a's storage and returns it as an
// argument.
func (a *obtainArgs) newToken() *scriptArg {
	fillToken(&a.tokenBuf)
	a.token.b = a.tokenBuf[:]
	return &a.token
}

// ttlArg returns ms as an argument.
func (a *obtainArgs) ttlArg(ms int64) *scriptArg {
	a.ttl.b = strconv.AppendInt(a.ttlBuf[:0], ms, 10)
	return &a.ttl
}

// fenceArg returns the tag of the fence counter fenceKey as obtain.lua
// takes it in place of "0" and records it in a fenced lock's value
// ("<token>/<tag>"): the first 8 hex digits of the SHA-1 of the counter's
// key name. Computed here rather than by the script (redis.sha1hex), so
// that the server does not repeat it on every acquisition, and into the
// Lock's storage, so that a Client fencing with many keys allocates
// nothing for it.
func (a *obtainArgs) fenceArg(fenceKey string) *scriptArg {
	var buf [128]byte                             // on the stack, for the usual key
	sum := sha1.Sum(append(buf[:0], fenceKey...)) //nolint:gosec // G401: see the import
	hex.Encode(a.fenceBuf[:], sum[:4])
	a.fence.b = a.fenceBuf[:]
	return &a.fence
}

// valueArg returns the value that obtain.lua writes for the generated token
// and metadata without fence, "<#token>:<token>:0:<metadata>" (lib.lua), as
// an argument.
func (a *obtainArgs) valueArg(metadata string) *scriptArg {
	b := strconv.AppendInt(a.valueBuf[:0], tokenLen, 10)
	b = append(b, ':')
	b = append(b, a.tokenBuf[:]...)
	b = append(b, ":0:"...)
	a.value.b = append(b, metadata...)
	return &a.value
}
