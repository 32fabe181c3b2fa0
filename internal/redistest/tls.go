package redistest

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TLSServer is a standalone server that also listens for TLS, with the CA and
// certificates that the test made for it. The embedded [Server] is its
// plain-text side (Addr, Client), for the test's own checks; TLS clients
// connect to [TLSServer.TLSAddr]. Its methods are safe for concurrent use.
type TLSServer struct {
	*Server
	tlsPort int
	pki     string // directory of ca.crt, server.*, client.*
	config  *tls.Config
}

// NewTLSServer makes a CA, a server certificate for IP 127.0.0.1 and a client
// certificate (ECDSA P-256, valid for a day, made with openssl in a temporary
// directory), then starts a standalone server of flavor f like [NewServer]
// that also listens with TLS on another free port of 127.0.0.1 (--tls-port)
// and keeps its plain-text port. By default the server requires a client
// certificate signed by the CA (tls-auth-clients yes); args are appended to
// its flags and may override that, as in "--tls-auth-clients", "no". It
// blocks until the server answers PING, for at most 30 s. Cleanup stops the
// server. A missing openssl or server binary, or a server that does not
// start, fails the test.
func NewTLSServer(t testing.TB, f Flavor, args ...string) *TLSServer {
	t.Helper()
	pki := t.TempDir()
	if err := makePKI(pki); err != nil {
		t.Fatal(err)
	}
	config, err := clientTLSConfig(pki)
	if err != nil {
		t.Fatal(err)
	}
	s := &TLSServer{pki: pki, config: config}
	srv, err := launch(serverSpec{
		flavor: f,
		label:  f.serverBin() + "-tls",
		args: func(port int, dir string) ([]string, error) {
			// A new TLS port on every attempt: the last one is the server's.
			tlsPort, err := freePort(false)
			if err != nil {
				return nil, err
			}
			s.tlsPort = tlsPort
			tlsArgs := []string{
				"--tls-port", strconv.Itoa(tlsPort),
				"--tls-cert-file", filepath.Join(pki, "server.crt"),
				"--tls-key-file", filepath.Join(pki, "server.key"),
				"--tls-ca-cert-file", filepath.Join(pki, "ca.crt"),
			}
			return append(append(dataArgs(port, dir), tlsArgs...), args...), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Server = srv
	t.Cleanup(srv.stop)
	reportOnFailure(t, srv, func() string { return srv.report(40) })
	return s
}

// TLSAddr returns the address of the server's TLS port, "127.0.0.1:PORT".
func (s *TLSServer) TLSAddr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.tlsPort)) }

// CAFile returns the path of the CA certificate (PEM) that signed the
// server's and the client's certificates.
func (s *TLSServer) CAFile() string { return filepath.Join(s.pki, "ca.crt") }

// ClientCertFile returns the path of the client certificate (PEM).
func (s *TLSServer) ClientCertFile() string { return filepath.Join(s.pki, "client.crt") }

// ClientKeyFile returns the path of the client certificate's private key
// (PEM, unencrypted).
func (s *TLSServer) ClientKeyFile() string { return filepath.Join(s.pki, "client.key") }

// TLSConfig returns a new TLS configuration for go-redis clients of
// [TLSServer.TLSAddr]: it trusts the CA only and presents the client
// certificate. The caller owns it and may change it.
func (s *TLSServer) TLSConfig() *tls.Config { return s.config.Clone() }

// TLSOptions returns new go-redis options for a TLS client of this server,
// with [TLSServer.TLSConfig] and go-redis's defaults otherwise.
func (s *TLSServer) TLSOptions() *redis.Options {
	return &redis.Options{Addr: s.TLSAddr(), TLSConfig: s.TLSConfig()}
}

// makePKI writes ca.crt, server.crt/.key (for IP 127.0.0.1) and
// client.crt/.key into dir with openssl.
func makePKI(dir string) error {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		return fmt.Errorf("redistest: openssl not found in PATH: install it with `apt-get install openssl`")
	}
	run := func(args ...string) error {
		cmd := exec.Command(openssl, args...) //nolint:gosec // openssl from PATH, with the harness's own arguments
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("redistest: openssl %v: %w\n%s", args, err, out)
		}
		return nil
	}
	key := []string{"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"}
	if err := run(append([]string{"req", "-x509", "-days", "1", "-subj", "/CN=redislock test CA", "-keyout", "ca.key", "-out", "ca.crt"}, key...)...); err != nil {
		return err
	}
	for _, name := range []string{"server", "client"} {
		if err := run(append([]string{"req", "-subj", "/CN=redislock test " + name, "-keyout", name + ".key", "-out", name + ".csr"}, key...)...); err != nil {
			return err
		}
		ext := name + ".ext"
		text := "extendedKeyUsage=clientAuth\n"
		if name == "server" {
			text = "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n"
		}
		if err := os.WriteFile(filepath.Join(dir, ext), []byte(text), 0o600); err != nil {
			return fmt.Errorf("redistest: %w", err)
		}
		if err := run("x509", "-req", "-days", "1", "-in", name+".csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-extfile", ext, "-out", name+".crt"); err != nil {
			return err
		}
	}
	return nil
}

// clientTLSConfig returns a TLS configuration that trusts the CA of dir and
// presents its client certificate.
func clientTLSConfig(dir string) (*tls.Config, error) {
	pem, err := os.ReadFile(filepath.Join(dir, "ca.crt")) //nolint:gosec // the CA the harness just made
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("redistest: no certificate in %s", filepath.Join(dir, "ca.crt"))
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key"))
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}
