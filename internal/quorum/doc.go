// Package quorum is the engine of a lock over N independent Redis or
// Valkey masters: held while a majority of them hold its keys, with a
// fencing token that is greater than every token issued before it,
// whichever majority each acquisition won and with nodes restarting. The
// protocol, its assumptions and the proofs are in docs/quorum.md; the
// scripts each node runs are lua/*.lua.
//
// An [Engine] runs the protocol: [Engine.Obtain] (one round trip, a second
// one when the proposed token was too low on too many nodes),
// [Engine.Refresh], [Engine.Release] and [Engine.TTL] (one each). Each
// call sends to every node at once, one goroutine per node, and returns
// only when all of them have ended. It knows nothing of the root
// package's Lock, Options or retry strategies: the root adapts it.
//
// The decisions (majority counting, the next token, the validity, whether
// a refresh counts) are plain functions of the replies (decide.go); the
// model checker of the tests runs the same functions against Go mirrors
// of the scripts.
package quorum
