package chaos_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redislock/redislock/internal/redistest"
	"github.com/rs/zerolog"
)

// toxiServer is the in-process toxiproxy of this test binary: no HTTP API,
// no logs. Its proxies are made with newProxy.
var toxiServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(prometheus.NewRegistry()), zerolog.Nop())

var proxySeq atomic.Int64

// proxy is one toxiproxy proxy between a client and a server: a TCP
// listener on a free port of 127.0.0.1 that forwards every connection to
// the server, through the toxics added to it.
type proxy struct {
	p *toxiproxy.Proxy
}

// newProxy starts a proxy to upstream. Cleanup stops it (closing every
// connection through it).
func newProxy(t testing.TB, upstream string) *proxy {
	t.Helper()
	// On a port the harness keeps from its servers: a proxy that listens
	// again after a disconnect must find its port free, and never answer
	// in place of a server started meanwhile.
	var p *toxiproxy.Proxy
	var err error
	for range 10 { // a port another process took meanwhile: another
		p = toxiproxy.NewProxy(toxiServer, fmt.Sprintf("p%d", proxySeq.Add(1)), redistest.FreeAddr(t), upstream)
		if err = p.Start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("toxiproxy: start a proxy to %s: %v", upstream, err)
	}
	t.Cleanup(p.Stop)
	return &proxy{p: p}
}

// Addr returns the address clients dial.
func (p *proxy) Addr() string { return p.p.Listen }

// toxic adds a toxic named name of type typ on stream ("upstream": client to
// server, "downstream": server to client) with the given attributes, to
// every connection, open or new. It fails the test if toxiproxy refuses it.
func (p *proxy) toxic(t testing.TB, name, typ, stream string, attrs string) {
	t.Helper()
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":1,"attributes":{%s}}`, name, typ, stream, attrs)
	if _, err := p.p.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		t.Fatalf("toxiproxy: add %s: %v", body, err)
	}
}

// heal removes every toxic.
func (p *proxy) heal() {
	p.p.Toxics.ResetToxics(context.Background())
}

// disconnect closes the listener and every connection through the proxy: a
// new connection is refused until reconnect.
func (p *proxy) disconnect() { p.p.Stop() }

// reconnect listens again, on the same address.
func (p *proxy) reconnect(t testing.TB) {
	t.Helper()
	if err := p.p.Start(); err != nil {
		t.Fatalf("toxiproxy: restart the proxy on %s: %v", p.Addr(), err)
	}
}
