package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// defaultURL is the server used when neither --redis nor REDIS_URL is set.
const defaultURL = "redis://127.0.0.1:6379"

// Connection defaults, applied where the URL does not set the option
// (dial_timeout=, dialer_retries=, max_retries= in its query). go-redis's
// own (5 s dial timeout, 5 dial attempts 100 ms apart, 3 retries) make an
// unreachable server take seconds to report; a command-line tool should say
// so at once.
const (
	dialTimeout   = 2 * time.Second
	dialerRetries = 1 // one dial attempt per connection
	maxRetries    = 1 // one retry per command (a stale connection)

	// pingSlack is the time that the PING checking the connection first
	// gets beyond the dial timeout, for the handshake and the reply.
	pingSlack = time.Second
)

const connHelp = `Connection:
  --redis URL            default $REDIS_URL, else ` + defaultURL + `
      redis://[user:password@]host[:port][/db][?option=value...]
      rediss://...          (TLS)
      unix://[user:password@]/path/to/socket[?db=N]
      redis-sentinel://[user:password@]host[:port][,host[:port]...]/master[/db]
      rediss-sentinel://... (TLS)
      host:port             (short for redis://host:port)
  --cluster              --redis lists Cluster seed nodes: redis://host:port,host:port
                         (or host:port,host:port, or redis://host:port?addr=host:port);
                         a plain redis:// URL that reaches a Cluster node is used as a
                         seed of the whole Cluster without it
  --sentinel-master NAME --redis lists sentinels (redis://host:port,host:port);
                         NAME is the master they monitor
  Query options are go-redis's (dial_timeout=3s, read_timeout=2s, skip_verify=true,
  ...). A password in the URL may hold any character but ? (percent-escapes, %3F,
  are decoded). In the Sentinel forms user:password@ authenticates to the
  sentinels; the master's password is ?password=... (Sentinel forms only) or
  one of the following.

Quorum (--redis given 3, 5 or more times, an odd number): each URL names one
independent standalone master (no replication between them; not a Cluster,
not Sentinel), and a lock is held while a majority of them hold it (the
library's Quorum; docs/quorum.md). A minority of the masters may be down.
--cluster and --sentinel-master do not go with it; --tls, the --tls-* flags
and the password below apply to every master. Fewer than a majority of the
masters answering is Redis failing (exit 69, see Failures).

Password, without putting it on the command line (when the URL has none):
  --password-file FILE   its first line; else $REDIS_PASSWORD; else $REDISCLI_AUTH
                         (as redis-cli reads it)

TLS (with a rediss:// or rediss-sentinel:// URL, or --tls):
  --tls                  use TLS: a redis:// URL (or host:port) is taken as rediss://,
                         redis-sentinel:// as rediss-sentinel://
  --tls-ca FILE          trust the CA certificates (PEM) of FILE instead of the system's;
                         $SSL_CERT_FILE (and $SSL_CERT_DIR) replace the system's too
  --tls-cert FILE, --tls-key FILE
                         client certificate and its key (PEM), which Redis asks for
                         unless tls-auth-clients is no
  --tls-insecure         do not verify the server's certificate (tests only)

Failures: when Redis cannot be reached or fails (a refused or timed-out
connection, TLS or authentication refused, a Redis error, a reply that is
not Redis's), redislock exits 69 (EX_UNAVAILABLE of sysexits.h), or the
CODE of --redis-error-exit-code. A URL that does not parse, or a file that
cannot be read, exits 1.

No message shows the URL's user name or password.`

// connFlags are the connection flags that every subcommand talking to
// Redis takes.
type connFlags struct {
	// urls are the --redis flags, in order: one URL, or with more a
	// quorum of independent masters (quorum.go).
	urls           urlList
	cluster        bool
	sentinelMaster string
	passwordFile   string
	tlsCA          string
	tlsCert        string
	tlsKey         string
	tlsInsecure    bool
	tls            bool
	// errorCode is the exit status for Redis failing (--redis-error-exit-code).
	errorCode int
}

// addConnFlags defines the connection flags on fs.
func addConnFlags(fs *flag.FlagSet) *connFlags {
	c := &connFlags{}
	fs.Var(&c.urls, "redis", "Redis `URL`; default $REDIS_URL, else "+defaultURL+"; given 3, 5 or more times, an odd number: a quorum of independent masters (see Connection and Quorum below)")
	fs.BoolVar(&c.cluster, "cluster", false, "connect to a Redis Cluster; --redis lists seed nodes")
	fs.StringVar(&c.sentinelMaster, "sentinel-master", "", "connect through Sentinel to the master `NAME`; --redis lists sentinels")
	fs.StringVar(&c.passwordFile, "password-file", "", "read the password from the first line of `FILE`")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "trust the CA certificates of `FILE` (PEM)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "client certificate `FILE` (PEM), with --tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "private key `FILE` (PEM) of --tls-cert")
	fs.BoolVar(&c.tlsInsecure, "tls-insecure", false, "do not verify the server's certificate")
	fs.BoolVar(&c.tls, "tls", false, "use TLS: take a redis:// URL (or host:port) as rediss://")
	fs.IntVar(&c.errorCode, "redis-error-exit-code", exitUnavailable, "exit `CODE` when Redis cannot be reached or fails (see Failures below)")
	return c
}

// check returns what is wrong with the connection flags that can be told
// before anything is read or sent, or "".
func (c *connFlags) check() string {
	if c.errorCode < 0 || c.errorCode > 255 {
		return fmt.Sprintf("--redis-error-exit-code %d is not in 0..255", c.errorCode)
	}
	return c.checkQuorum()
}

// endpoint says how to reach Redis: exactly one of its options is set.
type endpoint struct {
	single   *redis.Options
	failover *redis.FailoverOptions
	cluster  *redis.ClusterOptions
}

// usageError is a connection setting that cannot work whatever the server:
// conflicting flags. It is a usage error (exit 2); a URL that does not
// parse is a failure (exit 1), like an unreachable server.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

// rawURL returns the URL the flags name, and where it came from.
func (c *connFlags) rawURL() (raw, source string) {
	raw, source = c.urls.first(), "--redis"
	if raw == "" {
		raw, source = os.Getenv("REDIS_URL"), "REDIS_URL"
	}
	if raw == "" {
		raw, source = defaultURL, "the default URL"
	}
	return raw, source
}

// endpoint resolves the flags, with $REDIS_URL and the default, into an
// endpoint: a standalone server, or a Cluster when cluster (or --cluster).
// Errors name the flag or variable the URL came from, and never show its
// user information.
func (c *connFlags) endpoint(cluster bool) (*endpoint, error) {
	raw, source := c.rawURL()
	if c.tls {
		var err error
		if raw, err = withTLS(raw); err != nil {
			return nil, err
		}
	}
	e, err := parseEndpoint(raw, cluster || c.cluster, c.sentinelMaster)
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", source, redactedError(raw, cluster || c.cluster, c.sentinelMaster))
	}
	if err := c.applyPassword(e); err != nil {
		return nil, err
	}
	if err := c.applyTLS(e); err != nil {
		return nil, err
	}
	return e, nil
}

// withTLS returns raw with a scheme that asks for TLS (--tls): rediss://
// for redis:// and host:port, rediss-sentinel:// for redis-sentinel://.
// A unix:// URL cannot have it: a usage error.
func withTLS(raw string) (string, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	switch {
	case !ok:
		return "rediss://" + raw, nil
	case scheme == "redis", scheme == "redis-sentinel":
		return strings.Replace(scheme, "redis", "rediss", 1) + "://" + rest, nil
	case scheme == "unix":
		return "", &usageError{"--tls cannot be used with a unix:// URL"}
	}
	return raw, nil // rediss already, or a scheme that parseEndpoint refuses
}

// redactedError returns the error of parsing raw (which failed) that would
// show no user information: the error of the same URL with its user
// information replaced, so that no part of a password can appear in it.
func redactedError(raw string, cluster bool, sentinelMaster string) error {
	if _, err := parseEndpoint(redactURL(raw), cluster, sentinelMaster); err != nil {
		return err
	}
	return errors.New("the user name or password of the URL does not parse (not shown)")
}

// splitUserinfo splits a URL into what comes before its user information
// ("redis://"), the user information without its "@" ("" if none) and the
// rest ("host:port/0"). The user information ends at the last "@" before
// the query, so that a password may hold "/", "#", ":" and "@".
func splitUserinfo(raw string) (scheme, userinfo, rest string) {
	i := strings.Index(raw, "://")
	if i < 0 {
		return "", "", raw
	}
	scheme, rest = raw[:i+3], raw[i+3:]
	head, _, _ := strings.Cut(rest, "?")
	at := strings.LastIndexByte(head, '@')
	if at < 0 {
		return scheme, "", rest
	}
	return scheme, rest[:at], rest[at+1:]
}

// redactURL returns raw with everything between "://" and its last "@",
// if any, replaced by "xxxxx": the form of a URL that messages may show.
// It hides more than the user information where an "@" follows it (in a
// query, or a password with "?" that splitUserinfo would not take for
// one): messages never show a piece of a password.
func redactURL(raw string) string {
	i := strings.Index(raw, "://")
	if i < 0 {
		i = -3 // host:port, short for redis://host:port
	}
	rest := raw[i+3:]
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return raw
	}
	return raw[:i+3] + "xxxxx@" + rest[at+1:]
}

// escapeUserinfo returns raw with its user information percent-encoded as
// url.Parse wants it: a password with "/" or "#" would otherwise cut the
// URL short. Percent-escapes already there are decoded first.
func escapeUserinfo(raw string) string {
	scheme, userinfo, rest := splitUserinfo(raw)
	if userinfo == "" {
		return raw
	}
	unescape := func(s string) string {
		if u, err := url.PathUnescape(s); err == nil {
			return u
		}
		return s // a literal "%"
	}
	var u *url.Userinfo
	if name, pass, ok := strings.Cut(userinfo, ":"); ok {
		u = url.UserPassword(unescape(name), unescape(pass))
	} else {
		u = url.User(unescape(userinfo))
	}
	return scheme + u.String() + "@" + rest
}

// password returns the password of --password-file, $REDIS_PASSWORD or
// $REDISCLI_AUTH, the first that is set, and where it came from.
func (c *connFlags) password() (pw, source string, err error) {
	if c.passwordFile != "" {
		b, err := os.ReadFile(c.passwordFile)
		if err != nil {
			return "", "", fmt.Errorf("--password-file: %w", err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		line = strings.TrimSuffix(line, "\r")
		if line == "" {
			return "", "", fmt.Errorf("--password-file %s: the first line is empty", c.passwordFile)
		}
		return line, "--password-file", nil
	}
	for _, name := range []string{"REDIS_PASSWORD", "REDISCLI_AUTH"} {
		if pw := os.Getenv(name); pw != "" {
			return pw, name, nil
		}
	}
	return "", "", nil
}

// applyPassword sets the password of the data nodes from [connFlags.password]
// when the URL gives none. A URL with a password and --password-file is a
// usage error; a URL's password beats the environment's.
func (c *connFlags) applyPassword(e *endpoint) error {
	var target *string
	switch {
	case e.single != nil:
		target = &e.single.Password
	case e.failover != nil:
		target = &e.failover.Password
	default:
		target = &e.cluster.Password
	}
	if *target != "" {
		if c.passwordFile != "" {
			return &usageError{"--password-file and a password in the URL: give one"}
		}
		return nil
	}
	pw, _, err := c.password()
	if err != nil {
		return err
	}
	*target = pw
	return nil
}

// applyTLS applies the --tls-* flags to the endpoint's TLS configuration,
// which the URL's scheme (rediss) must have asked for.
func (c *connFlags) applyTLS(e *endpoint) error {
	if c.tlsCA == "" && c.tlsCert == "" && c.tlsKey == "" && !c.tlsInsecure {
		return nil
	}
	var cfg **tls.Config
	switch {
	case e.single != nil:
		cfg = &e.single.TLSConfig
	case e.failover != nil:
		cfg = &e.failover.TLSConfig
	default:
		cfg = &e.cluster.TLSConfig
	}
	if *cfg == nil {
		return &usageError{"the --tls-* flags need a rediss:// (or rediss-sentinel://) URL, or --tls"}
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return &usageError{"--tls-cert and --tls-key go together"}
	}
	conf := (*cfg).Clone()
	conf.MinVersion = tls.VersionTLS12
	if c.tlsCA != "" {
		pem, err := os.ReadFile(c.tlsCA)
		if err != nil {
			return fmt.Errorf("--tls-ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return fmt.Errorf("--tls-ca %s: no PEM certificate in it", c.tlsCA)
		}
		conf.RootCAs = pool
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		conf.Certificates = []tls.Certificate{cert}
	}
	if c.tlsInsecure {
		conf.InsecureSkipVerify = true //nolint:gosec // --tls-insecure asks for it, and its help says what it costs
	}
	*cfg = conf
	return nil
}

// parseEndpoint parses a connection URL (see connHelp) for a standalone
// server, a Cluster (cluster) or a Sentinel master (a redis-sentinel URL,
// or sentinelMaster). Every form is read by go-redis's own parser
// (ParseURL, ParseClusterURL, ParseFailoverURL), given the first host; the
// comma-separated host list and the master's name in a redis-sentinel path,
// which go-redis does not read, are handled here.
func parseEndpoint(raw string, cluster bool, sentinelMaster string) (*endpoint, error) {
	if !strings.Contains(raw, "://") {
		raw = "redis://" + raw
	}
	raw = escapeUserinfo(raw)
	scheme, rest, _ := strings.Cut(raw, "://")
	sentinel := sentinelMaster != ""
	sentinelURL := false
	switch scheme {
	case "redis-sentinel", "rediss-sentinel":
		scheme = strings.TrimSuffix(scheme, "-sentinel")
		sentinel, sentinelURL = true, true
	case "redis", "rediss":
	case "unix":
		if cluster || sentinel {
			return nil, &usageError{"a unix:// URL names one server: it cannot be used with --cluster or --sentinel-master"}
		}
		o, err := redis.ParseURL(raw)
		if err != nil {
			return nil, err
		}
		return &endpoint{single: o}, nil
	default:
		if !validScheme(scheme) {
			// Quoted, the text before "://" could show a password.
			return nil, errors.New("the URL does not start with a scheme (want redis, rediss, unix, redis-sentinel or rediss-sentinel)")
		}
		return nil, fmt.Errorf("unsupported URL scheme %q (want redis, rediss, unix, redis-sentinel or rediss-sentinel)", scheme)
	}
	if cluster && sentinel {
		return nil, &usageError{"--cluster cannot be used with Sentinel (--sentinel-master or a redis-sentinel URL)"}
	}

	// rest is [userinfo@]host[,host...][/path][?query][#fragment].
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	userinfo, hostList := "", authority
	if i := strings.LastIndexByte(authority, '@'); i >= 0 {
		userinfo, hostList = authority[:i+1], authority[i+1:]
	}
	defaultPort := "6379"
	if sentinel {
		defaultPort = "26379"
	}
	hosts, err := splitHosts(hostList, defaultPort)
	if err != nil {
		return nil, err
	}

	if sentinelURL {
		// The path is /master[/db]: go-redis reads /db only.
		path, query, _ := strings.Cut(tail, "?")
		path, fragment, _ := strings.Cut(path, "#")
		parts := strings.Split(strings.Trim(path, "/"), "/")
		name, err := url.PathUnescape(parts[0])
		if err != nil || name == "" || len(parts) > 2 {
			return nil, fmt.Errorf("a Sentinel URL needs its path to be /master or /master/db, not %q", path)
		}
		if sentinelMaster != "" && sentinelMaster != name {
			return nil, &usageError{fmt.Sprintf("--sentinel-master %q contradicts the master %q of the URL", sentinelMaster, name)}
		}
		sentinelMaster = name
		tail = ""
		if len(parts) == 2 {
			tail = "/" + parts[1]
		}
		if query != "" {
			tail += "?" + query
		}
		if fragment != "" {
			tail += "#" + fragment
		}
	}

	first := scheme + "://" + userinfo + hosts[0] + tail
	switch {
	case cluster:
		o, err := redis.ParseClusterURL(first)
		if err != nil {
			return nil, err
		}
		o.Addrs = append(hosts, o.Addrs[1:]...)
		return &endpoint{cluster: o}, nil
	case sentinel:
		o, err := redis.ParseFailoverURL(first)
		if err != nil {
			return nil, err
		}
		if o.MasterName != "" && o.MasterName != sentinelMaster {
			return nil, &usageError{fmt.Sprintf("?master_name=%s contradicts the master %q", o.MasterName, sentinelMaster)}
		}
		o.MasterName = sentinelMaster
		o.SentinelAddrs = append(hosts, o.SentinelAddrs[1:]...)
		return &endpoint{failover: o}, nil
	}
	if len(hosts) > 1 {
		return nil, &usageError{fmt.Sprintf("the URL lists %d servers: use --cluster for Cluster seeds, or --sentinel-master (or a redis-sentinel:// URL) for sentinels", len(hosts))}
	}
	o, err := redis.ParseURL(first)
	if err != nil {
		return nil, err
	}
	return &endpoint{single: o}, nil
}

// validScheme reports whether s has the form of a URL scheme (RFC 3986):
// a letter, then letters, digits, "+", "-" and ".".
func validScheme(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}

// splitHosts splits a comma-separated list of host[:port] into host:port
// addresses, with defaultPort where the port is missing.
func splitHosts(list, defaultPort string) ([]string, error) {
	if list == "" {
		return nil, errors.New("the URL names no host")
	}
	var hosts []string
	for _, h := range strings.Split(list, ",") {
		u := url.URL{Host: h}
		host, port := u.Hostname(), u.Port()
		if host == "" || strings.ContainsAny(host, "[]") || (port == "" && strings.HasSuffix(h, ":")) {
			return nil, fmt.Errorf("bad host %q in %q", h, list)
		}
		if port == "" {
			port = defaultPort
		}
		if i := strings.LastIndexByte(h, ':'); !strings.HasPrefix(h, "[") && strings.Contains(host, ":") && i >= 0 {
			port = h[i+1:] // url.URL takes a port that is no number for part of the host
		}
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("bad port %q in %q", port, list)
		}
		hosts = append(hosts, net.JoinHostPort(host, port))
	}
	return hosts, nil
}

// String describes the endpoint for messages, without credentials.
func (e *endpoint) String() string {
	switch {
	case e.cluster != nil:
		return fmt.Sprintf("Redis Cluster (seeds %s)", strings.Join(e.cluster.Addrs, ","))
	case e.failover != nil:
		return fmt.Sprintf("Redis master %q (sentinels %s)", e.failover.MasterName, strings.Join(e.failover.SentinelAddrs, ","))
	case e.single.Network == "unix":
		return "Redis at unix:" + e.single.Addr
	}
	return "Redis at " + e.single.Addr
}

// client returns a new client of the endpoint, with the connection
// defaults above where the URL left them unset. It does not block.
func (e *endpoint) client() redis.UniversalClient { return e.clientWith(0, 0) }

// watchClient returns a new client of the endpoint for the watch of a
// run's server (serverwatch.go): no command is resent on another
// connection after its own broke (go-redis would otherwise, and a
// restart could pass unseen), and one connection per node. It does not
// block.
func (e *endpoint) watchClient() redis.UniversalClient { return e.clientWith(-1, 1) }

// clientWith is client with MaxRetries and PoolSize set, when not 0.
func (e *endpoint) clientWith(retries, poolSize int) redis.UniversalClient {
	retriesOr := func(v int) int {
		if retries != 0 {
			return retries
		}
		return orDefault(v, maxRetries)
	}
	// A context deadline bounds socket reads too: every call of the tool
	// has one, and a hanging server must not outlast it.
	switch {
	case e.cluster != nil:
		o := *e.cluster
		o.DialTimeout = orDefault(o.DialTimeout, dialTimeout)
		o.DialerRetries = orDefault(o.DialerRetries, dialerRetries)
		o.MaxRetries = retriesOr(o.MaxRetries)
		o.PoolSize = orDefault(poolSize, o.PoolSize)
		o.ContextTimeoutEnabled = true
		return redis.NewClusterClient(&o)
	case e.failover != nil:
		o := *e.failover
		o.DialTimeout = orDefault(o.DialTimeout, dialTimeout)
		o.DialerRetries = orDefault(o.DialerRetries, dialerRetries)
		o.MaxRetries = retriesOr(o.MaxRetries)
		o.PoolSize = orDefault(poolSize, o.PoolSize)
		o.ContextTimeoutEnabled = true
		return redis.NewFailoverClient(&o)
	}
	o := *e.single
	o.DialTimeout = orDefault(o.DialTimeout, dialTimeout)
	o.DialerRetries = orDefault(o.DialerRetries, dialerRetries)
	o.MaxRetries = retriesOr(o.MaxRetries)
	o.PoolSize = orDefault(poolSize, o.PoolSize)
	o.ContextTimeoutEnabled = true
	return redis.NewClient(&o)
}

// usesTLS reports whether the endpoint's clients talk TLS.
func (e *endpoint) usesTLS() bool {
	switch {
	case e.cluster != nil:
		return e.cluster.TLSConfig != nil
	case e.failover != nil:
		return e.failover.TLSConfig != nil
	}
	return e.single.TLSConfig != nil
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// connect resolves the connection flags, dials and PINGs the server, so
// that an unreachable server or a refused password is reported at once,
// by name. On error it has printed a one-line message, prefixed with
// prog, and returns the exit code.
func (c *connFlags) connect(ctx context.Context, prog string, stderr io.Writer) (redis.UniversalClient, int, bool) {
	rdb, _, code, ok := c.dial(ctx, prog, stderr, time.Time{}, nil)
	return rdb, code, ok
}

// dial is connect that retries a failure that may pass (a refused
// connection, a server still loading) until the time until, pausing
// between attempts, and tells note of each retry (nil: nobody). A server
// that turns out to be a Cluster node, reached without --cluster, is used
// as a seed of the whole Cluster. It also returns the endpoint it reached.
// Redis failing gives the exit code of --redis-error-exit-code; a URL that
// does not parse, or a file that cannot be read, 1; conflicting flags 2.
func (c *connFlags) dial(ctx context.Context, prog string, stderr io.Writer, until time.Time, note func(format string, args ...any)) (redis.UniversalClient, *endpoint, int, bool) {
	fail := func(code int, format string, args ...any) (redis.UniversalClient, *endpoint, int, bool) {
		_, _ = fmt.Fprintf(stderr, "%s: %s\n", prog, fmt.Sprintf(format, args...))
		return nil, nil, code, false
	}
	e, err := c.endpoint(false)
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			return fail(exitUsage, "%v", err)
		}
		return fail(exitFailure, "%v", err)
	}
	pause := 50 * time.Millisecond
	for {
		rdb, cluster, timeout, err := e.ping(ctx)
		if err == nil && cluster {
			// A Cluster node answers for its own slots only: talk to the
			// Cluster through it.
			_ = rdb.Close()
			if e.single.DB != 0 {
				return fail(exitFailure, "%s is a Cluster node, and a Cluster has database 0 only: drop /%d from the URL", e, e.single.DB)
			}
			ce, cerr := c.endpoint(true)
			if cerr != nil {
				return fail(exitFailure, "%v", cerr)
			}
			if note != nil {
				note("%s is a Cluster node: using it as a seed of the Cluster (as --cluster would)", e)
			}
			e = ce
			continue
		}
		if err == nil {
			return rdb, e, exitOK, true
		}
		if ctx.Err() == nil && retryable(err) && time.Now().Add(pause).Before(until) {
			if note != nil {
				note("cannot reach %s (%v); trying again for %v", e, err, time.Until(until).Round(time.Millisecond))
			}
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
			pause = min(2*pause, time.Second)
			continue
		}
		within := ""
		if !until.IsZero() {
			within = " within --wait"
		}
		var ne net.Error
		switch {
		case isAuthError(err):
			return fail(c.errorCode, "authentication failed at %s: %v (give the password in the URL, with --password-file, or in $REDIS_PASSWORD or $REDISCLI_AUTH)", e, err)
		case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
			return fail(c.errorCode, "cannot reach %s%s: no answer within %v (%v)%s", e, within, timeout, err, tlsHint(e, err))
		}
		return fail(c.errorCode, "cannot reach %s%s: %v%s", e, within, err, tlsHint(e, err))
	}
}

// tlsHint returns what to try when err may come from talking plain text
// to a TLS port (the server hangs up: EOF, a reset) or TLS to a plain-text
// one (the reply is no TLS record, or none comes: Redis waits for the end
// of a line that the handshake never sends), or "".
func tlsHint(e *endpoint, err error) string {
	var (
		record tls.RecordHeaderError
		ne     net.Error
	)
	switch {
	case !e.usesTLS() && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)):
		return " (is it TLS? try --tls)"
	case e.usesTLS() && (errors.As(err, &record) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()):
		return " (is it plain text? drop --tls, or use a redis:// URL)"
	}
	return ""
}

// ping makes a client of the endpoint and PINGs it. For a standalone
// server it also reads whether that is a Cluster node (INFO cluster; a
// server that refuses INFO is taken as no Cluster). On
// error the client is closed. timeout is the time the PING was given.
func (e *endpoint) ping(ctx context.Context) (_ redis.UniversalClient, cluster bool, timeout time.Duration, _ error) {
	rdb := e.client()
	timeout = e.dialTimeout() + pingSlack
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, false, timeout, err
	}
	if e.single != nil {
		info, err := rdb.Info(pctx, "cluster").Result()
		cluster = err == nil && strings.Contains(info, "cluster_enabled:1")
	}
	return rdb, cluster, timeout, nil
}

// isAuthError reports whether err is Redis refusing the credentials, or
// asking for some.
func isAuthError(err error) bool {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return false
	}
	msg := reply.Error()
	return strings.HasPrefix(msg, "NOAUTH") || strings.HasPrefix(msg, "WRONGPASS") ||
		strings.Contains(msg, "without any password configured")
}

// retryable reports whether err, met while connecting or obtaining, may
// pass by itself: a network failure (a refused connection, a reset, a
// timeout) or a server that is loading, busy, failing over or without a
// Cluster quorum. A certificate that does not verify, a refused password,
// a context that ended and every other Redis error are final.
func retryable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	var (
		reply    redis.Error
		verify   *tls.CertificateVerificationError
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
	)
	switch {
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &hostname), errors.As(err, &invalid), errors.As(err, &record):
		return false
	case errors.As(err, &reply):
		for _, p := range []string{"LOADING", "BUSY", "TRYAGAIN", "CLUSTERDOWN", "MASTERDOWN", "READONLY"} {
			if strings.HasPrefix(reply.Error(), p) {
				return true
			}
		}
		return false
	}
	return true
}

// dialTimeout returns the dial timeout of the endpoint's clients.
func (e *endpoint) dialTimeout() time.Duration {
	var d time.Duration
	switch {
	case e.cluster != nil:
		d = e.cluster.DialTimeout
	case e.failover != nil:
		d = e.failover.DialTimeout
	default:
		d = e.single.DialTimeout
	}
	if d <= 0 {
		return dialTimeout
	}
	return d
}
