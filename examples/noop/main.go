// Command noop acks every batch without looking at it; benchmarks use it
// to measure the host's own cost per batch.
package main

import "github.com/sluicehq/sluice/sdk"

func main() {
	sdk.Handle(func(sdk.Context, sdk.Batch) sdk.Result { return sdk.Result{} })
}
