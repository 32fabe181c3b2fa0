package redislock_test

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
)

// The drop-in surface of bsm/redislock v0.10.0 (docs/migrating-from-bsm.md),
// with its exact signatures: if any of
// these changes, this file stops compiling.
var (
	_ func(redislock.RedisClient) *redislock.Client                                                                      = redislock.New
	_ func(context.Context, redislock.RedisClient, string, time.Duration, *redislock.Options) (*redislock.Lock, error)   = redislock.Obtain
	_ func(context.Context, redislock.RedisClient, []string, time.Duration, *redislock.Options) (*redislock.Lock, error) = redislock.ObtainMulti
	_ func(*redislock.Client, context.Context, string, time.Duration, *redislock.Options) (*redislock.Lock, error)       = (*redislock.Client).Obtain
	_ func(*redislock.Client, context.Context, []string, time.Duration, *redislock.Options) (*redislock.Lock, error)     = (*redislock.Client).ObtainMulti

	_ func(*redislock.Lock) string                                                    = (*redislock.Lock).Key
	_ func(*redislock.Lock) []string                                                  = (*redislock.Lock).Keys
	_ func(*redislock.Lock) string                                                    = (*redislock.Lock).Token
	_ func(*redislock.Lock) string                                                    = (*redislock.Lock).Metadata
	_ func(*redislock.Lock) int64                                                     = (*redislock.Lock).FenceToken
	_ func(*redislock.Lock, context.Context) (time.Duration, error)                   = (*redislock.Lock).TTL
	_ func(*redislock.Lock, context.Context, time.Duration, *redislock.Options) error = (*redislock.Lock).Refresh
	_ func(*redislock.Lock, context.Context) error                                    = (*redislock.Lock).Release
	_ func() redislock.RetryStrategy                                                  = redislock.NoRetry
	_ func(time.Duration) redislock.RetryStrategy                                     = redislock.LinearBackoff
	_ func(time.Duration, time.Duration) redislock.RetryStrategy                      = redislock.ExponentialBackoff
	_ func(redislock.RetryStrategy, int) redislock.RetryStrategy                      = redislock.LimitRetry
	_ interface{ NextBackoff() time.Duration }                                        = redislock.RetryStrategy(nil)
	_ error                                                                           = redislock.ErrNotObtained
	_ error                                                                           = redislock.ErrLockNotHeld

	_ = redislock.Options{
		RetryStrategy: redislock.NoRetry(),
		Metadata:      "",
		Token:         "",
		FenceKey:      "",
	}

	// Every go-redis client kind is a RedisClient.
	_ redislock.RedisClient = (*redis.Client)(nil)
	_ redislock.RedisClient = (*redis.ClusterClient)(nil)
	_ redislock.RedisClient = (*redis.Ring)(nil)
	_ redislock.RedisClient = redis.UniversalClient(nil)
	_ redis.Scripter        = redislock.RedisClient(nil)
)
