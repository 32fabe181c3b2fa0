package redistest

import "context"

// SharedPrimaryAddr returns the address of the master of the Sentinel setup
// of flavor f shared by this test binary (the one [SharedSentinel] returns:
// a master with one replica in sync), starting it on first use, for code
// that has no testing.TB, such as a runnable example of
// Options.MinReplicas. Like every shared instance, it must not be
// reconfigured, and it is stopped by [Run].
func SharedPrimaryAddr(f Flavor) (string, error) {
	s, err := sharedInstance("sentinel/"+string(f), func() (*Sentinel, func(), error) {
		s, err := startSentinel(f)
		if err != nil {
			return nil, nil, err
		}
		return s, s.stop, nil
	})
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	return s.masterAddr(ctx)
}
