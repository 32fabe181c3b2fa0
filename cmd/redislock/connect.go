package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
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
                         (or host:port,host:port, or redis://host:port?addr=host:port)
  --sentinel-master NAME --redis lists sentinels (redis://host:port,host:port);
                         NAME is the master they monitor
  Query options are go-redis's (dial_timeout=3s, read_timeout=2s, password=...).
  In the Sentinel forms user:password@ authenticates to the sentinels, as in
  go-redis's ParseFailoverURL; give the master's password as ?password=....`

// connFlags are the connection flags that every subcommand talking to
// Redis takes.
type connFlags struct {
	url            string
	cluster        bool
	sentinelMaster string
}

// addConnFlags defines the connection flags on fs.
func addConnFlags(fs *flag.FlagSet) *connFlags {
	c := &connFlags{}
	fs.StringVar(&c.url, "redis", "", "Redis `URL`; default $REDIS_URL, else "+defaultURL+" (see Connection below)")
	fs.BoolVar(&c.cluster, "cluster", false, "connect to a Redis Cluster; --redis lists seed nodes")
	fs.StringVar(&c.sentinelMaster, "sentinel-master", "", "connect through Sentinel to the master `NAME`; --redis lists sentinels")
	return c
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

// endpoint resolves the flags, with $REDIS_URL and the default, into an
// endpoint. Errors name the flag or variable the URL came from.
func (c *connFlags) endpoint() (*endpoint, error) {
	raw, source := c.url, "--redis"
	if raw == "" {
		raw, source = os.Getenv("REDIS_URL"), "REDIS_URL"
	}
	if raw == "" {
		raw, source = defaultURL, "the default URL"
	}
	e, err := parseEndpoint(raw, c.cluster, c.sentinelMaster)
	if err != nil {
		var ue *usageError
		if errors.As(err, &ue) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return e, nil
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
func (e *endpoint) client() redis.UniversalClient {
	// A context deadline bounds socket reads too: every call of the tool
	// has one, and a hanging server must not outlast it.
	switch {
	case e.cluster != nil:
		o := *e.cluster
		o.DialTimeout = orDefault(o.DialTimeout, dialTimeout)
		o.DialerRetries = orDefault(o.DialerRetries, dialerRetries)
		o.MaxRetries = orDefault(o.MaxRetries, maxRetries)
		o.ContextTimeoutEnabled = true
		return redis.NewClusterClient(&o)
	case e.failover != nil:
		o := *e.failover
		o.DialTimeout = orDefault(o.DialTimeout, dialTimeout)
		o.DialerRetries = orDefault(o.DialerRetries, dialerRetries)
		o.MaxRetries = orDefault(o.MaxRetries, maxRetries)
		o.ContextTimeoutEnabled = true
		return redis.NewFailoverClient(&o)
	}
	o := *e.single
	o.DialTimeout = orDefault(o.DialTimeout, dialTimeout)
	o.DialerRetries = orDefault(o.DialerRetries, dialerRetries)
	o.MaxRetries = orDefault(o.MaxRetries, maxRetries)
	o.ContextTimeoutEnabled = true
	return redis.NewClient(&o)
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
	e, err := c.endpoint()
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		var ue *usageError
		if errors.As(err, &ue) {
			return nil, exitUsage, false
		}
		return nil, exitFailure, false
	}
	rdb := e.client()
	timeout := e.dialTimeout() + pingSlack
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
			fmt.Fprintf(stderr, "%s: cannot reach %s: no answer within %v (%v)\n", prog, e, timeout, err)
		} else {
			fmt.Fprintf(stderr, "%s: cannot reach %s: %v\n", prog, e, err)
		}
		return nil, exitFailure, false
	}
	return rdb, exitOK, true
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
