package value

import (
	"crypto/rand"
	"crypto/sha1" //nolint:gosec // G505: a tag naming a key in stored values, not a security measure
	"encoding/base64"
	"encoding/hex"
	"strconv"
)

// TokenLen is the length of a generated token: 16 random bytes from
// crypto/rand, base64url without padding, 128 bits of entropy.
const TokenLen = 22

// NewToken returns a generated token.
func NewToken() string {
	var enc [TokenLen]byte
	fillToken(&enc)
	return string(enc[:])
}

func fillToken(enc *[TokenLen]byte) {
	var raw [16]byte
	rand.Read(raw[:]) // never fails since Go 1.24
	base64.RawURLEncoding.Encode(enc[:], raw[:])
}

// Arg is a script argument whose bytes live in storage of their own (an
// Args). Boxed in an interface as a pointer, it costs no allocation, where
// a string or an int64 does; go-redis writes it as its bytes
// (encoding.BinaryMarshaler).
type Arg struct{ b []byte }

// MarshalBinary returns the argument's bytes; the caller must not modify
// them.
func (a *Arg) MarshalBinary() ([]byte, error) { return a.b, nil }

// String returns the argument as text, for hooks that print commands.
func (a *Arg) String() string { return string(a.b) }

// Args holds an obtain's generated token, its TTL, its fence counter's
// tag and the value of a plain SET as script arguments, in the handle it
// builds: a failed obtain, whose handle is reused, then boxes no argument
// of its own. The zero value holds none.
type Args struct {
	token, ttl, value, fence, owner Arg
	ttlBuf                          [20]byte           // an int64 in decimal
	valueBuf                        [40]byte           // Value's or Rest's (an obtain uses one), short metadata inline
	fenceBuf                        [8]byte            // the fence counter's tag
	ownerBuf                        [TokenLen + 4]byte // "22:<token>:", which holds the token
}

// NewToken generates a token into a's storage and returns it as an
// argument.
func (a *Args) NewToken() *Arg {
	b := strconv.AppendInt(a.ownerBuf[:0], TokenLen, 10)
	n := len(b) + 1
	b = append(b, ':')
	b = b[:n+TokenLen]
	fillToken((*[TokenLen]byte)(b[n:]))
	a.token.b = b[n : n+TokenLen : n+TokenLen]
	a.owner.b = append(b, ':')
	return &a.token
}

// Owner returns [Owner] of the token NewToken generated, as an argument
// (nil when none was generated).
func (a *Args) Owner() *Arg {
	if a.owner.b == nil {
		return nil
	}
	return &a.owner
}

// Rest returns what a lock's value holds after its fence field, as
// lua/obtain_plain.lua takes it: ":<metadata>" without fence counter,
// "/<tag>:<metadata>" with the one Fence last named.
func (a *Args) Rest(metadata string, fenced bool) *Arg {
	b := a.valueBuf[:0]
	if fenced {
		b = append(append(b, '/'), a.fence.b...)
	}
	a.value.b = append(append(b, ':'), metadata...)
	return &a.value
}

// Token returns the token NewToken generated, as a string ("" for none).
func (a *Args) Token() string { return string(a.token.b) }

// TTL returns ms as an argument.
func (a *Args) TTL(ms int64) *Arg {
	a.ttl.b = strconv.AppendInt(a.ttlBuf[:0], ms, 10)
	return &a.ttl
}

// TTLArg returns the argument TTL last returned.
func (a *Args) TTLArg() *Arg { return &a.ttl }

// Fence returns the tag of the fence counter fenceKey as obtain.lua takes
// it in place of "0" and records it in a fenced lock's value: the first 8
// hex digits of the SHA-1 of the counter's key name. Computed here rather
// than by the script, so that the server does not repeat it on every
// acquisition, and into the handle's storage.
func (a *Args) Fence(fenceKey string) *Arg {
	var buf [128]byte                             // on the stack, for the usual key
	sum := sha1.Sum(append(buf[:0], fenceKey...)) //nolint:gosec // G401: see the import
	hex.Encode(a.fenceBuf[:], sum[:4])
	a.fence.b = a.fenceBuf[:]
	return &a.fence
}

// FenceTag returns the tag Fence last computed ("" for none).
func (a *Args) FenceTag() string { return string(a.fence.b) }

// Value returns the value that obtain.lua writes for the generated token
// and metadata without fence, "<#token>:<token>:0:<metadata>", as an
// argument.
func (a *Args) Value(metadata string) *Arg {
	b := strconv.AppendInt(a.valueBuf[:0], TokenLen, 10)
	b = append(b, ':')
	b = append(b, a.token.b...)
	b = append(b, ":0:"...)
	a.value.b = append(b, metadata...)
	return &a.value
}
