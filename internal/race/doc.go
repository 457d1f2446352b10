// Package race tells code whether the binary was built with the race
// detector (go build or go test -race). Tests use it to skip work that
// takes minutes inside a race-built process (compiling a multi-MB Go
// module with wazero's instrumented compiler) and that scripts/test runs
// again without -race.
package race
