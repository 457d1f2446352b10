# Helpers shared by the pgbench scripts (scripts/bench-sql,
# scripts/bench-citus); source it, don't run it. The caller sets $clients
# and $secs.

pgbench=$(command -v pgbench || echo "$(pg_config --bindir)/pgbench")

# pgbench_tps URL FILE [pgbench args...] runs the pgbench script FILE
# against URL for $secs seconds with $clients clients (prepared
# statements) and prints its transactions per second.
pgbench_tps() {
	local url=$1 file=$2
	shift 2
	"$pgbench" -n -M prepared -c "$clients" -j 2 -T "$secs" "$@" -f "$file" "$url" 2>&1 |
		sed -nE 's/^tps = ([0-9.]+).*/\1/p' | head -1
}

# median reads numbers separated by blanks or newlines and prints their
# median.
median() { tr ' ' '\n' | grep . | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

# spread reads numbers like median and prints "min-max".
spread() { tr ' ' '\n' | grep . | sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%.0f-%.0f", lo, hi}'; }

# refill_backlog URL SCHEMA PER_QUEUE CONDITION empties SCHEMA's messages
# table, gives each queue that CONDITION (SQL on `queues q`) selects
# PER_QUEUE ready messages, and vacuums and analyzes the table, so that
# every receive run starts from the same fresh backlog.
refill_backlog() {
	psql "$1" -qc "TRUNCATE $2.messages" \
		-c "INSERT INTO $2.messages (queue_id, visible_at, body) SELECT q.id, now() - interval '1 second', jsonb_build_object('n', g) FROM $2.queues q CROSS JOIN generate_series(1, $3) g WHERE $4" \
		-c "VACUUM ANALYZE $2.messages" >/dev/null
}
