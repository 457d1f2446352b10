// Command pgsample samples pg_stat_activity every -every until killed: one
// tab-separated line per active backend (and per background process not
// idling in its main loop) per sample: the sample's wall time (Unix µs),
// pid, backend type, application name, state, wait event type:event, how
// long its query and transaction have run (ms) and the query's start. What
// hostiletrace reads as pg.tsv.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/jackc/pgx/v5"
)

func main() {
	url := flag.String("url", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable&application_name=pgsample", "database")
	every := flag.Duration("every", 5*time.Millisecond, "sampling interval")
	flag.Parse()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, *url)
	if err != nil {
		panic(err)
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
