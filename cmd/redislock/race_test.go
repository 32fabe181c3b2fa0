//go:build race

package main

// raceEnabled: the tests run with -race, and so does the binary they build.
const raceEnabled = true
