package redistest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestNewTLSServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := NewTLSServer(t, Redis)
	if s.TLSAddr() == s.Addr() {
		t.Fatalf("TLS address %s equals the plain-text one", s.TLSAddr())
	}
	c := redis.NewClient(s.TLSOptions())
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING over TLS with the client certificate: %v", err)
	}
	// tls-auth-clients yes by default: no client certificate, no connection.
	cfg := s.TLSConfig()
	cfg.Certificates = nil
	anon := redis.NewClient(&redis.Options{Addr: s.TLSAddr(), TLSConfig: cfg, MaxRetries: -1})
	t.Cleanup(func() { _ = anon.Close() })
	if err := anon.Ping(ctx).Err(); err == nil {
		t.Error("PING over TLS without a client certificate succeeded")
	}
	if err := s.Client(t).Ping(ctx).Err(); err != nil {
		t.Errorf("PING on the plain-text port: %v", err)
	}
}

func TestNewTLSServerNoClientCerts(t *testing.T) {
	t.Parallel()
	s := NewTLSServer(t, Valkey, "--tls-auth-clients", "no")
	cfg := s.TLSConfig()
	cfg.Certificates = nil
	c := redis.NewClient(&redis.Options{Addr: s.TLSAddr(), TLSConfig: cfg})
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("PING over TLS without a client certificate, --tls-auth-clients no: %v", err)
	}
}
