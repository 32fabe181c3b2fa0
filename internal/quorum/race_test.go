//go:build race

package quorum

// raceBuild: the model checker, single-threaded, runs smaller bounds
// under the race detector (about six times slower).
const raceBuild = true
