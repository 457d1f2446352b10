package reliability_test

import (
	"fmt"

	"github.com/sluicehq/sluice/reliability"
)

func ExamplePercentile() {
	lat := []float64{4, 5, 5, 6, 7, 9, 12, 15, 30, 250}
	fmt.Println(reliability.Percentile(lat, 50), reliability.Percentile(lat, 90), reliability.Percentile(lat, 99))
	// Output: 7 30 250
}
