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

// tokenAt is where the token starts in an OwnerArg, after "22:".
const tokenAt = 3

// The script arguments of an Args live in its own storage. Boxed in an
// interface as pointers, they cost no allocation, where a string or an
// int64 does; go-redis writes each as its bytes (encoding.BinaryMarshaler).
// The fixed-length ones are their bytes, with no slice header of their own.
type (
	// Arg is an argument of any length, short ones held in an Args.
	Arg struct{ b []byte }
	// OwnerArg is "22:<token>:", the prefix of a lock's value that names
	// a generated token ([Owner]).
	OwnerArg [TokenLen + 4]byte
	// TokenArg is the token inside an OwnerArg.
	TokenArg OwnerArg
	// TagArg is a fence counter's tag.
	TagArg [8]byte
	// DecimalArg is a non-negative int64 in decimal.
	DecimalArg struct {
		n uint8
		b [19]byte
	}
)

// MarshalBinary returns the argument's bytes; the caller must not modify
// them.
func (a *Arg) MarshalBinary() ([]byte, error) { return a.b, nil }

// MarshalBinary returns the owner prefix.
func (o *OwnerArg) MarshalBinary() ([]byte, error) { return o[:], nil }

// MarshalBinary returns the token.
func (t *TokenArg) MarshalBinary() ([]byte, error) { return t[tokenAt : tokenAt+TokenLen], nil }

// MarshalBinary returns the tag.
func (t *TagArg) MarshalBinary() ([]byte, error) { return t[:], nil }

// MarshalBinary returns the decimal digits.
func (d *DecimalArg) MarshalBinary() ([]byte, error) { return d.b[:d.n], nil }

// String returns the argument as text, for hooks that print commands.
func (a *Arg) String() string { return string(a.b) }

// String returns the owner prefix, for hooks that print commands.
func (o *OwnerArg) String() string { return string(o[:]) }

// String returns the token, for hooks that print commands.
func (t *TokenArg) String() string { return string(t[tokenAt : tokenAt+TokenLen]) }

// String returns the tag, for hooks that print commands.
func (t *TagArg) String() string { return string(t[:]) }

// String returns the digits, for hooks that print commands.
func (d *DecimalArg) String() string { return string(d.b[:d.n]) }

// Args holds an obtain's generated token, its TTL, its fence counter's
// tag and the value of a plain SET as script arguments, in the handle it
// builds: a failed obtain, whose handle is reused, then boxes no argument
// of its own. The zero value holds none.
type Args struct {
	owner    OwnerArg // zero when no token was generated
	fence    TagArg   // zero without fence counter
	ttl      DecimalArg
	value    Arg      // Value's or Rest's (an obtain uses one)
	valueBuf [40]byte // value's storage, short metadata inline
}

// NewToken generates a token into a's storage and returns it as an
// argument.
func (a *Args) NewToken() *TokenArg {
	strconv.AppendInt(a.owner[:0], TokenLen, 10) // "22", in place
	a.owner[tokenAt-1] = ':'
	fillToken((*[TokenLen]byte)(a.owner[tokenAt:]))
	a.owner[tokenAt+TokenLen] = ':'
	return (*TokenArg)(&a.owner)
}

// Owner returns [Owner] of the token NewToken generated, as an argument
// (nil when none was generated).
func (a *Args) Owner() *OwnerArg {
	if a.owner[0] == 0 {
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
		b = append(append(b, '/'), a.fence[:]...)
	}
	a.value.b = append(append(b, ':'), metadata...)
	return &a.value
}

// Token returns the token NewToken generated, as a string ("" for none).
func (a *Args) Token() string {
	if a.owner[0] == 0 {
		return ""
	}
	return string(a.owner[tokenAt : tokenAt+TokenLen])
}

// TTL returns ms (not negative) as an argument.
func (a *Args) TTL(ms int64) *DecimalArg {
	a.ttl.n = uint8(len(strconv.AppendInt(a.ttl.b[:0], ms, 10))) //nolint:gosec // G115: at most 19 digits
	return &a.ttl
}

// TTLArg returns the argument TTL last returned.
func (a *Args) TTLArg() *DecimalArg { return &a.ttl }

// Fence returns the tag of the fence counter fenceKey as obtain.lua takes
// it in place of "0" and records it in a fenced lock's value: the first 8
// hex digits of the SHA-1 of the counter's key name. Computed here rather
// than by the script, so that the server does not repeat it on every
// acquisition, and into the handle's storage.
func (a *Args) Fence(fenceKey string) *TagArg {
	var buf [128]byte                             // on the stack, for the usual key
	sum := sha1.Sum(append(buf[:0], fenceKey...)) //nolint:gosec // G401: see the import
	hex.Encode(a.fence[:], sum[:4])
	return &a.fence
}

// FenceTag returns the tag Fence last computed ("" for none).
func (a *Args) FenceTag() string {
	if a.fence[0] == 0 {
		return ""
	}
	return string(a.fence[:])
}

// Value returns the value that obtain.lua writes for the generated token
// and metadata without fence, "<#token>:<token>:0:<metadata>", as an
// argument.
func (a *Args) Value(metadata string) *Arg {
	b := append(a.valueBuf[:0], a.owner[:]...)
	b = append(b, "0:"...)
	a.value.b = append(b, metadata...)
	return &a.value
}
