package main

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/bench/contention"
)

// The design candidates for event-driven waiting, as minimal prototypes on
// plain go-redis (a SET NX PX lock), measured with the same workload as the
// strategies, beside redsync's polling: REDISLOCK_CONTENTION=designs make
// bench-contention. They are kept to show why WaitForRelease works as it
// does and what a handover costs; see docs/waiting.md, "Why this design".

var (
	protoObtain = redis.NewScript(`
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return -2 end
return redis.call("PTTL", KEYS[1])`)
	// pub/sub: the release publishes; every subscriber wakes.
	protoReleasePublish = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("DEL", KEYS[1])
  redis.call("PUBLISH", KEYS[2], "1")
  return 1
end
return 0`)
	// signal list: the release leaves one token in a list; one waiter
	// blocked on it (BLPOP) wakes and races everyone for the lock.
	protoReleaseSignal = redis.NewScript(`
if redis.call("GET", KEYS[1]) == ARGV[1] then
  redis.call("DEL", KEYS[1], KEYS[2])
  redis.call("RPUSH", KEYS[2], "1")
  redis.call("PEXPIRE", KEYS[2], 1000)
  return 1
end
return 0`)
)

// designRows are the design candidates beside WaitForRelease as it is.
func designRows() []contentionRow {
	return []contentionRow{
		{name: "pub/sub, wake all", obtain: pubsubObtain},
		{name: "BLPOP signal, no handover", obtain: signalObtain},
		{name: "handover without a queue", obtain: grantObtain},
		{name: "direct grant to the oldest waiter", obtain: directObtain},
		{name: "WaitForRelease (queue, handover)", obtain: func(rdb redis.UniversalClient, key string) contention.ObtainFunc {
			return oursObtain(redislock.New(rdb), key, &redislock.Options{RetryStrategy: redislock.WaitForRelease(nil)})
		}},
		// The polling that the Redis CPU per acquisition of a handover is
		// compared with (issue 15's target), in the same run.
		{name: "redsync (polling, its defaults)", obtain: func(rdb redis.UniversalClient, key string) contention.ObtainFunc {
			return redsyncConn{rs: redsync.New(goredis.NewPool(rdb))}.Wait(key, new(atomic.Int64))
		}},
	}
}

var protoToken atomic.Int64

// handover without a queue: the release reserves the key for a grant and
// leaves the grant on a wake-up list, which Redis moves to the client
// blocked longest there (BLMOVE onto that client's own grant list, given a
// TTL first); the attempt queued after the block takes the key with it. No
// waiter registers: a reservation whose grant is still on the wake-up list
// (no client was blocked) counts as free. The least a handover with a
// reservation costs, and what it gives up: a waiter between two blocks is
// not waited for, and each waiting goroutine blocks a connection of its own.
var (
	protoReleaseGrant = redis.NewScript(`
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end
redis.call("SET", KEYS[1], ARGV[3], "PX", ARGV[2])
if redis.call("RPUSH", KEYS[2], ARGV[3]) > 1 then
  redis.call("DEL", KEYS[2])
  redis.call("RPUSH", KEYS[2], ARGV[3])
end
redis.call("PEXPIRE", KEYS[2], ARGV[2])
return 1`)
	// ARGV[3] "1": the attempt after a block, which takes its grant (the
	// head of its grant list, over the placeholder "~").
	protoAttemptGrant = redis.NewScript(`
local g = false
if ARGV[3] == "1" then
  local got = redis.call("LPOP", KEYS[3], 2)
  if got and got[1] ~= "~" then g = got[1] end
end
local v = redis.call("GET", KEYS[1])
if not v or v == g or (string.byte(v, 1) == 126 and redis.call("LINDEX", KEYS[2], 0) == v) then
  if v and v ~= g then redis.call("DEL", KEYS[2]) end
  redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
  return -2
end
return redis.call("PTTL", KEYS[1])`)
)

// protoAttempt tries the lock once. When it got it, it returns the
// function that releases it (running release with releaseKeys and the
// lock's token); otherwise nil and the holder's PTTL.
func protoAttempt(ctx context.Context, rdb redis.UniversalClient, key string, release *redis.Script, releaseKeys []string) (func(context.Context) error, time.Duration, error) {
	token := strconv.FormatInt(protoToken.Add(1), 10) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ms, err := protoObtain.Run(ctx, rdb, []string{key}, token, hotTTL.Milliseconds()).Int64()
	if err != nil {
		return nil, 0, err
	}
	if ms != -2 {
		return nil, time.Duration(max(ms, 1)) * time.Millisecond, nil
	}
	return func(ctx context.Context) error {
		return release.Run(ctx, rdb, releaseKeys, token).Err()
	}, 0, nil
}

// pubsubObtain waits on a subscription to the lock's channel, opened once
// per worker before its first attempt, and tries again on every message.
func pubsubObtain(rdb redis.UniversalClient, key string) contention.ObtainFunc {
	channel := key + ":released"
	var sub *redis.PubSub
	return func(ctx context.Context) (func(context.Context) error, error) {
		if sub == nil {
			sub = rdb.Subscribe(ctx, channel)
			if _, err := sub.Receive(ctx); err != nil {
				return nil, err
			}
			go func() { <-ctx.Done(); _ = sub.Close() }()
		}
		msgs := sub.Channel()
		for {
			release, pttl, err := protoAttempt(ctx, rdb, key, protoReleasePublish, []string{key, channel})
			if err != nil || release != nil {
				return release, err
			}
			t := time.NewTimer(min(pttl, 100*time.Millisecond))
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-msgs:
			case <-t.C:
			}
			t.Stop()
		}
	}
}

// signalObtain blocks on the lock's signal list (BLPOP, one connection per
// waiting goroutine) and tries again when it pops a signal or times out.
func signalObtain(rdb redis.UniversalClient, key string) contention.ObtainFunc {
	signal := key + ":signal"
	return func(ctx context.Context) (func(context.Context) error, error) {
		for {
			release, pttl, err := protoAttempt(ctx, rdb, key, protoReleaseSignal, []string{key, signal})
			if err != nil || release != nil {
				return release, err
			}
			d := min(pttl, 100*time.Millisecond)
			err = rdb.Do(ctx, "blpop", signal, strconv.FormatFloat(d.Seconds(), 'f', 3, 64)).Err()
			if err != nil && !errors.Is(err, redis.Nil) {
				return nil, err
			}
		}
	}
}

// grantObtain is the handover without a queue. A worker whose last
// release handed over blocks at once (no attempt before its block), as
// WaitForRelease's releaser that asks again does.
func grantObtain(rdb redis.UniversalClient, key string) contention.ObtainFunc {
	wake := key + ":wake"
	id := strconv.FormatInt(protoToken.Add(1), 10)
	grants := key + ":grant:" + id
	released := false // this worker's: it released the key last
	seq := 0
	return func(ctx context.Context) (func(context.Context) error, error) {
		seq++
		token := id + "." + strconv.Itoa(seq)
		release := func(ctx context.Context) error {
			released = true
			return protoReleaseGrant.Run(ctx, rdb, []string{key, wake}, token, 100, "~"+token).Err()
		}
		ttl := hotTTL.Milliseconds()
		if !released {
			r, err := protoAttemptGrant.Run(ctx, rdb, []string{key, wake, grants}, token, ttl, "0").Int64()
			if err != nil {
				return nil, err
			}
			if r == -2 {
				return release, nil
			}
		}
		for ctx.Err() == nil {
			p := rdb.Pipeline()
			p.RPush(ctx, grants, "~")
			p.PExpire(ctx, grants, 4*time.Second)
			p.BLMove(ctx, wake, grants, "LEFT", "LEFT", time.Second)
			attempt := protoAttemptGrant.EvalSha(ctx, p, []string{key, wake, grants}, token, ttl, "1")
			_, _ = p.Exec(ctx)
			if err := attempt.Err(); redis.HasErrorPrefix(err, "NOSCRIPT") {
				attempt = protoAttemptGrant.Eval(ctx, rdb, []string{key, wake, grants}, token, ttl, "1")
			}
			r, err := attempt.Int64()
			if err != nil {
				return nil, err
			}
			if r == -2 {
				return release, nil
			}
		}
		return nil, ctx.Err()
	}
}

// direct grant to the oldest waiter: each waiter registers its token in
// the key's queue (scored with the time its registration lapses) and
// blocks on a grant list of its own (BLPOP). The release pops the oldest
// live registration, writes the key with that waiter's token and TTL and
// pushes onto its grant list: the waiter holds the lock when its BLPOP
// returns, with no attempt after the block (one script per handover, the
// release's). A releaser's next wait is registered by its release, behind
// the waiter it served, so its next Obtain blocks at once. The cheapest
// fair handover measured here, and what it gives up: a waiter that died (or
// stopped asking) within its registration's life is granted the key, which
// stays held until its TTL ends (WaitForRelease's reservation lasts
// 100 ms); the release writes keys it cannot declare (the grant lists: one
// server only, no Cluster); the TTL and value of the next holder are the
// releaser's to write; each waiting goroutine blocks a connection of its
// own; a waiter that waits longer than a registration's life (3 s) drops
// out of the queue.
var (
	// KEYS: the lock key, its queue. ARGV: the token, the TTL (ms), the
	// registration's life (ms), and optionally the releaser's next token,
	// registered when the key is handed over. Reply: 0 not ours, 1
	// deleted, 2 handed over.
	protoReleaseDirect = redis.NewScript(`
if redis.call("GET", KEYS[1]) ~= ARGV[1] then return 0 end
local t = redis.call("TIME")
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local m
repeat
  local p = redis.call("ZPOPMIN", KEYS[2])
  if not p[1] then break end
  if tonumber(p[2]) > now then m = p[1] end
until m
if not m then
  redis.call("DEL", KEYS[1])
  return 1
end
redis.call("SET", KEYS[1], m, "PX", ARGV[2])
local g = KEYS[1] .. ":g:" .. m
redis.call("RPUSH", g, "1")
redis.call("PEXPIRE", g, ARGV[3])
if ARGV[4] then
  redis.call("ZADD", KEYS[2], now + ARGV[3], ARGV[4])
  redis.call("PEXPIRE", KEYS[2], ARGV[3])
end
return 2`)
	// KEYS: the lock key, its queue. ARGV: the token, the TTL (ms), the
	// registration's life (ms). Reply 1: held (free, or granted before
	// the waiter blocked); 0: registered (a registration already there
	// keeps its place).
	protoAttemptDirect = redis.NewScript(`
if redis.call("SET", KEYS[1], ARGV[1], "NX", "PX", ARGV[2]) then return 1 end
if redis.call("GET", KEYS[1]) == ARGV[1] then return 1 end
local t = redis.call("TIME")
redis.call("ZADD", KEYS[2], "NX", t[1] * 1000 + math.floor(t[2] / 1000) + ARGV[3], ARGV[1])
redis.call("PEXPIRE", KEYS[2], ARGV[3])
return 0`)
)

// directObtain is the direct grant. A worker whose release registered its
// next wait blocks at once, without an attempt.
func directObtain(rdb redis.UniversalClient, key string) contention.ObtainFunc {
	queue := key + ":queue"
	id := strconv.FormatInt(protoToken.Add(1), 10)
	seq := 0
	registered := false // by this worker's last release
	const life = 3000   // ms
	return func(ctx context.Context) (func(context.Context) error, error) {
		seq++
		token := id + "." + strconv.Itoa(seq)
		ttl := hotTTL.Milliseconds()
		release := func(ctx context.Context) error {
			next := id + "." + strconv.Itoa(seq+1)
			r, err := protoReleaseDirect.Run(ctx, rdb, []string{key, queue}, token, ttl, life, next).Int64()
			registered = r == 2
			return err
		}
		attempt := !registered
		registered = false
		for ctx.Err() == nil {
			if attempt {
				r, err := protoAttemptDirect.Run(ctx, rdb, []string{key, queue}, token, ttl, life).Int64()
				if err != nil {
					return nil, err
				}
				if r == 1 {
					return release, nil
				}
			}
			attempt = true
			err := rdb.BLPop(ctx, time.Second, key+":g:"+token).Err()
			if err == nil {
				return release, nil
			}
			if !errors.Is(err, redis.Nil) {
				return nil, err
			}
		}
		return nil, ctx.Err()
	}
}
