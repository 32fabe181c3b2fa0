package redistest

import (
	"fmt"
	"strings"
	"sync"
)

// SharedQuorumAddrs returns the addresses of n independent standalone
// servers of flavor f (no replication between them: the masters of a
// quorum), started with the harness's flags followed by args and shared
// by this test binary, starting them on first use, for code that has no
// testing.TB: runnable examples of redislock.Quorum, the benchmarks. The
// servers of one (f, n, args) are started at once and stopped by [Run];
// like every shared instance they must not be stopped or reconfigured.
func SharedQuorumAddrs(f Flavor, n int, args ...string) ([]string, error) {
	id := fmt.Sprintf("quorum/%s/%d/%s", f, n, strings.Join(args, " "))
	servers, err := sharedInstance(id, func() ([]*Server, func(), error) {
		servers := make([]*Server, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range servers {
			wg.Go(func() { servers[i], errs[i] = startServer(f, args) })
		}
		wg.Wait()
		stop := func() {
			for _, s := range servers {
				if s != nil {
					s.stop()
				}
			}
		}
		for _, err := range errs {
			if err != nil {
				stop()
				return nil, nil, err
			}
		}
		return servers, stop, nil
	})
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(servers))
	for i, s := range servers {
		addrs[i] = s.Addr()
	}
	return addrs, nil
}
