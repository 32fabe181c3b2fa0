package redislock_test

import (
	"context"
	"crypto/x509"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// The library over TLS, against redis-server --tls-port with client
// certificates required (the default of tls-auth-clients).
func TestTLS(t *testing.T) {
	t.Parallel()
	for _, f := range []redistest.Flavor{redistest.Redis, redistest.Valkey} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			srv := redistest.NewTLSServer(t, f)
			addr := srv.TLSAddr()
			ctx := context.Background()

			rdb := redis.NewClient(srv.TLSOptions())
			t.Cleanup(func() { _ = rdb.Close() })
			if err := useEveryFeature(ctx, rdb, "locks:tls"); err != nil {
				t.Fatalf("over TLS: %v", err)
			}

			// A client that does not trust the server's CA fails with a
			// certificate error and takes nothing.
			untrustingTLS := srv.TLSConfig()
			untrustingTLS.RootCAs = x509.NewCertPool()
			untrusting := redis.NewClient(&redis.Options{
				Addr: addr, TLSConfig: untrustingTLS,
				DialerRetries: 1, MaxRetries: -1, DialTimeout: 5 * time.Second,
			})
			t.Cleanup(func() { _ = untrusting.Close() })
			_, err := redislock.Obtain(ctx, untrusting, "locks:tls:other", time.Minute, nil)
			var unknownCA x509.UnknownAuthorityError
			if !errors.As(err, &unknownCA) {
				t.Errorf("Obtain through a client that does not trust the CA: got %v, want an x509.UnknownAuthorityError", err)
			}
			if n := srv.Client(t).Exists(ctx, "locks:tls:other").Val(); n != 0 {
				t.Error("the lock was taken anyway")
			}
		})
	}
}
