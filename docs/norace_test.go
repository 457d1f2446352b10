//go:build !race

package docs_test

// raceEnabled: the tests run under the race detector.
const raceEnabled = false
