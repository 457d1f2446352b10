// Command empty does nothing: benchmarks use it to measure what starting
// the Go runtime costs in a command module, without the SDK or JSON.
package main

func main() {}
