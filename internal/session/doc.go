// Package session keeps many leases alive from one loop: a [Session]
// refreshes every lease put under it ([Session.Add]) in batches, one
// pipelined round trip per Redis node for all the leases due, and signals
// each lease's loss on its own, through the same [lease.Signal] and
// [lease.End] as a lease's own keep-alive ([lease.KeepAlive]).
//
// # Goroutines
//
// A session runs one goroutine, its loop, and one more per Redis node it
// sends to (a sender): none per lease. The loop owns every timer and
// decides; it never waits for Redis. A sender sends one batch at a time
// to its node and hands the replies back to the loop. [Session.Close]
// stops them all and waits for them.
//
// # Timing
//
// Each lease follows the rules of a keep-alive ([lease.Config]): a
// refresh is due Interval after the send time of the last successful one
// (less the jitter), a transient failure is retried after backoffs while
// the lease lasts, and the lease's ValidUntil (its send time plus the TTL
// less the margin, on the monotonic clock) is a deadline that the loop
// watches whatever the senders do. When a refresh is due, the loop also
// takes into the same batch every lease due within a tenth of the
// interval ([Window]): a refresh is sent early to join a batch, never
// late. A node busy with a batch gets the next one as soon as its replies
// are in.
//
// # Losses
//
// A lease whose refresh finds its keys gone or taken ([lease.NotHeld]),
// whose refresh fails with an error reply of the server that is not
// transient ([lease.Failed]), or whose MaxHold passes, ends alone. A
// lease whose ValidUntil passes without a successful refresh, or a
// refresh that fails in the client itself (a closed client), means that
// the session could not reach Redis in time: the session ends, and every
// lease still in it ends with [lease.SessionLost], at once, before the
// earliest of their keys can expire.
//
// # Batches on the wire
//
// A batch is one pipeline through the go-redis client (a Cluster client
// sends it to the node that serves each key, following MOVED and ASK).
// On a client of one deployment (*redis.Client) or a Cluster
// (*redis.ClusterClient), the calls of [Config.One] (refresh.lua) in a
// batch are sent as calls of [Config.Many], each refreshing up to
// [ManyLimit] leases of one hash slot in one script call; on other
// clients (a Ring, a wrapper) each lease is its own script call in the
// pipeline. Scripts the server does not have cached are sent again with
// EVAL in a second pipeline.
package session
