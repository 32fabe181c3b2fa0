package redislock

import (
	"crypto/rand"
	"encoding/base64"
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

// obtainArgs holds an obtain's generated token and its TTL as the script
// takes them, in the Lock it builds: a failed obtain, whose Lock the Client
// reuses (see Client.spare), then boxes no argument of its own.
type obtainArgs struct {
	token, ttl, value scriptArg
	tokenBuf          [tokenLen]byte
	ttlBuf            [20]byte // an int64 in decimal
	valueBuf          [40]byte // the value of a plain SET, short metadata inline
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
