// Command pgrtt times `SELECT txid_current()` round trips to Postgres (each
// a synchronous commit), one every -gap for -for, and prints their
// p50/p90/p99/max in ms: how long Postgres takes to answer a committing
// statement while something else runs on the machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	url := flag.String("url", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&application_name=pgrtt", "database")
	d := flag.Duration("for", 8*time.Second, "how long to measure")
	gap := flag.Duration("gap", 5*time.Millisecond, "pause between round trips")
	flag.Parse()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, *url)
	if err != nil {
		panic(err)
	}
	var lat []float64
	end := time.Now().Add(*d)
	for time.Now().Before(end) {
		t := time.Now()
		var x int64
		if err := c.QueryRow(ctx, "SELECT txid_current()").Scan(&x); err != nil {
			panic(err)
		}
		lat = append(lat, float64(time.Since(t).Microseconds())/1000)
		time.Sleep(*gap)
	}
	sort.Float64s(lat)
	p := func(q float64) float64 { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	fmt.Printf("n=%d p50 %.2f p90 %.2f p99 %.2f max %.2f ms\n", len(lat), p(.5), p(.9), p(.99), lat[len(lat)-1])
}
