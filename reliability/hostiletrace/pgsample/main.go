// Command pgsample samples pg_stat_activity every -every until killed: one
// tab-separated line per active backend (and per background process not
// idling in its main loop) per sample: the sample's wall time (Unix µs),
// pid, backend type, application name, state, wait event type:event, how
// long its query and transaction have run (ms) and the query's start. What
// hostiletrace reads as pg.tsv.
//
// With -rtt it times `SELECT txid_current()` round trips instead (each a
// synchronous commit), one every -every for that long, and prints their
// p50/p90/p99/max in ms: how long Postgres takes to answer a committing
// statement while something else runs on the machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	url := flag.String("url", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&application_name=pgsample", "database")
	every := flag.Duration("every", 5*time.Millisecond, "sampling interval")
	rtt := flag.Duration("rtt", 0, "time commit round trips for this long instead of sampling")
	flag.Parse()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, *url)
	if err != nil {
		panic(err)
	}
	if *rtt > 0 {
		roundTrips(ctx, c, *rtt, *every)
		return
	}
	w := os.Stdout
	for {
		t := time.Now()
		rows, err := c.Query(ctx, `SELECT pid, coalesce(backend_type,''), coalesce(application_name,''), coalesce(state,''),
			coalesce(wait_event_type,''), coalesce(wait_event,''),
			coalesce(extract(epoch from clock_timestamp()-query_start)*1000, -1)::float8,
			coalesce(extract(epoch from clock_timestamp()-xact_start)*1000, -1)::float8,
			left(regexp_replace(coalesce(query,''), '\s+', ' ', 'g'), 70)
			FROM pg_stat_activity WHERE pid <> pg_backend_pid()
			AND (state = 'active' OR backend_type <> 'client backend') AND (wait_event IS NULL OR wait_event NOT IN ('ClientRead','WalWriterMain','CheckpointerMain','BgWriterHibernate','BgWriterMain','LogicalLauncherMain','AutoVacuumMain','ArchiverMain'))`)
		if err != nil {
			panic(err)
		}
		for rows.Next() {
			var pid int
			var bt, app, st, wt, we, q string
			var qms, xms float64
			if err := rows.Scan(&pid, &bt, &app, &st, &wt, &we, &qms, &xms, &q); err != nil {
				panic(err)
			}
			fmt.Fprintf(w, "%d\t%d\t%s\t%s\t%s\t%s:%s\t%.1f\t%.1f\t%s\n", t.UnixMicro(), pid, bt, app, st, wt, we, qms, xms, q)
		}
		if rows.Err() != nil {
			panic(rows.Err())
		}
		time.Sleep(*every - time.Since(t))
	}
}

// roundTrips times `SELECT txid_current()` on c, one every gap for d, and
// prints the latencies' percentiles.
func roundTrips(ctx context.Context, c *pgx.Conn, d, gap time.Duration) {
	var lat []float64
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(gap) {
		t := time.Now()
		var x int64
		if err := c.QueryRow(ctx, "SELECT txid_current()").Scan(&x); err != nil {
			panic(err)
		}
		lat = append(lat, float64(time.Since(t).Microseconds())/1000)
	}
	sort.Float64s(lat)
	p := func(q float64) float64 { return lat[min(len(lat)-1, int(q*float64(len(lat))))] }
	fmt.Printf("n=%d p50 %.2f p90 %.2f p99 %.2f max %.2f ms\n", len(lat), p(.5), p(.9), p(.99), lat[len(lat)-1])
}
