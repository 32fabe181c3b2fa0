package quorum

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redislock/redislock/internal/script"
)

// The engine's errors. The root package maps them to its own.
var (
	// ErrNotObtained: an Obtain did not take the lock on a majority, or
	// could not settle its token, or its validity ran out. Returned inside
	// a *[Failure].
	ErrNotObtained = errors.New("quorum: not obtained")
	// ErrNotHeld: a Refresh or TTL found that a majority no longer holds
	// the keys for the token, or a Refresh came after the lease had ended.
	// Returned inside a *[Failure].
	ErrNotHeld = errors.New("quorum: not held")
	// ErrNoQuorum: too few nodes answered to know the outcome; the
	// failures may go away (see [Failure.Transient]). Returned inside a
	// *[Failure].
	ErrNoQuorum = errors.New("quorum: too few nodes answered")
	// ErrInput: bad input, found before anything was sent. Returned
	// wrapped, with what was wrong.
	ErrInput = errors.New("quorum: bad input")
	// ErrUnexpectedReply: a script answered something it never answers
	// (a node that is not a Redis or Valkey server of a supported
	// version). Counted as that node's failure.
	ErrUnexpectedReply = errors.New("quorum: unexpected reply")
)

// Failure is the error of an operation that did not get a majority: what
// it was, how the nodes answered its last round, and the errors of the
// nodes that failed. errors.Is matches its kind ([ErrNotObtained],
// [ErrNotHeld] or [ErrNoQuorum]) and, through Unwrap, each node's error.
type Failure struct {
	Op      string // "obtain", "refresh" or "ttl"
	Kind    error  // ErrNotObtained, ErrNotHeld or ErrNoQuorum
	Counts  Counts // the last round's answers
	Rounds  int    // obtain: rounds sent
	Expired bool   // the validity ran out before the last reply
	Errs    []error
}

// Error says what failed and how the nodes answered.
func (f *Failure) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %s: of %d nodes", f.Kind, f.Op, f.Counts.Nodes)
	for _, p := range [...]struct {
		n    int
		what string
	}{
		{f.Counts.Taken, "held by the token"},
		{f.Counts.Confirmed, "confirmed the token"},
		{f.Counts.Held, "held by another"},
		{f.Counts.Recovering, "recovering"},
		{f.Counts.Lost, "lost"},
		{f.Counts.Failed, "failed"},
	} {
		if p.n > 0 {
			fmt.Fprintf(&b, ", %d %s", p.n, p.what)
		}
	}
	if f.Expired {
		b.WriteString("; the validity ran out")
	}
	for _, err := range f.Errs {
		b.WriteString("; ")
		b.WriteString(err.Error())
	}
	return b.String()
}

// Is reports whether target is f's kind.
func (f *Failure) Is(target error) bool { return target == f.Kind }

// Unwrap returns the errors of the nodes that failed.
func (f *Failure) Unwrap() []error { return f.Errs }

// Transient reports whether the outcome could have been different had the
// nodes that failed answered, and each of their errors may go away by
// itself ([script.Transient]): worth another attempt soon. A lock held by
// others, recovering nodes or a validity that ran out are not transient.
func (f *Failure) Transient() bool {
	if f.Expired || f.Counts.Failed == 0 || f.Counts.Taken+f.Counts.Failed < Majority(f.Counts.Nodes) {
		return false
	}
	for _, err := range f.Errs {
		if !script.Transient(err) {
			return false
		}
	}
	return true
}

// nodeErrors returns the errors of the failed replies, each naming its
// node.
func nodeErrors(replies []nodeReply) []error {
	var errs []error
	for i, r := range replies {
		if r.kind == rFailed {
			errs = append(errs, &NodeError{Node: i, Err: r.err})
		}
	}
	return errs
}

// NodeError is the error of one node.
type NodeError struct {
	Node int // its index in the engine's nodes
	Err  error
}

// Error names the node and its error.
func (e *NodeError) Error() string { return fmt.Sprintf("node %d: %v", e.Node, e.Err) }

// Unwrap returns the node's error.
func (e *NodeError) Unwrap() error { return e.Err }
