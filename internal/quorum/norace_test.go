//go:build !race

package quorum

// raceBuild: see race_test.go.
const raceBuild = false
