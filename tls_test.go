package redislock_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redislock/redislock"
	"github.com/redislock/redislock/internal/redistest"
)

// testPKI is a CA and the certificates it signed for one test, made with
// openssl in a temporary directory.
type testPKI struct {
	dir string
}

func (p testPKI) path(name string) string { return filepath.Join(p.dir, name) }

// newTestPKI makes a CA, a server certificate for 127.0.0.1 and a client
// certificate, all ECDSA P-256 and valid for a day. A missing openssl fails
// the test with the package to install.
func newTestPKI(t *testing.T) testPKI {
	t.Helper()
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Fatal("openssl not found in PATH: install it with `apt-get install openssl`")
	}
	p := testPKI{dir: t.TempDir()}
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command(openssl, args...)
		cmd.Dir = p.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("openssl %v: %v\n%s", args, err, out)
		}
	}
	key := []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"}
	run(append([]string{"req", "-x509", "-days", "1", "-subj", "/CN=redislock test CA", "-keyout", "ca.key", "-out", "ca.crt"}, key...)...)
	for _, name := range []string{"server", "client"} {
		run(append([]string{"req", "-subj", "/CN=redislock test " + name, "-keyout", name + ".key", "-out", name + ".csr"}, key...)...)
		ext := name + ".ext"
		text := "extendedKeyUsage=clientAuth\n"
		if name == "server" {
			text = "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
		}
		if err := os.WriteFile(p.path(ext), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		run("x509", "-req", "-days", "1", "-in", name+".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-extfile", ext, "-out", name+".crt")
	}
	return p
}

// clientTLS returns a TLS configuration that trusts ca (a file of p) and
// presents the client certificate.
func (p testPKI) clientTLS(t *testing.T, ca string) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(p.path(ca))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatalf("no certificate in %s", ca)
	}
	cert, err := tls.LoadX509KeyPair(p.path("client.crt"), p.path("client.key"))
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// freeTLSPort returns a port of 127.0.0.1 that was free a moment ago.
func freeTLSPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// The library over TLS, against redis-server --tls-port with client
// certificates required (the default of tls-auth-clients).
func TestTLS(t *testing.T) {
	t.Parallel()
	for _, f := range []redistest.Flavor{redistest.Redis, redistest.Valkey} {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			pki := newTestPKI(t)
			port := freeTLSPort(t)
			srv := redistest.NewServer(t, f,
				"--tls-port", strconv.Itoa(port),
				"--tls-cert-file", pki.path("server.crt"),
				"--tls-key-file", pki.path("server.key"),
				"--tls-ca-cert-file", pki.path("ca.crt"),
			)
			addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
			ctx := context.Background()

			rdb := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: pki.clientTLS(t, "ca.crt")})
			t.Cleanup(func() { _ = rdb.Close() })
			if err := useEveryFeature(ctx, rdb, "locks:tls"); err != nil {
				t.Fatalf("over TLS: %v", err)
			}

			// A client that does not trust the server's CA fails with a
			// certificate error and takes nothing.
			untrusting := redis.NewClient(&redis.Options{
				Addr: addr, TLSConfig: pki.clientTLS(t, "client.crt"),
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
