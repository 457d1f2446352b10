-- The settling functions cost a lookup of a message by its key as Postgres
-- does on a table that is in memory, so that a large settlement reads each
-- message it names instead of its whole queue (issue #18; BENCHMARKS.md,
-- "a large ack can scan its whole queue").
--
-- queue_ack, queue_nack, queue_fail and queue_release join the messages
-- they settle, `unnest(p_sequences, ...)`, to messages on (queue_id,
-- sequence). For a few messages the planner looks each up by the primary
-- key. For many, as a trigger's settlement of a batch of 1,000 or of
-- several batches together, it costs each lookup as a random read from
-- disk (random_page_cost 4) and hashes the queue's rows instead. That
-- scans the whole queue: an ack of 1,000 in a queue of 100,000 took 76-97
-- ms so, against 6-9 ms by key, and more as the queue grows. A queue's
-- messages are the hot part of the table, read and written all the time,
-- so they are in shared buffers; random_page_cost = 1.1, inside these
-- functions only, makes the planner cost them so. Measured in psql, one
-- ack of 1,000 per session, queue of 100,000 (three calls each):
--
--   statistics of the queue when the table was analyzed   default   1.1
--   full (fresh)                                          76-78     6.5-7.7 ms
--   300 of 3,300 rows                                     85-91     6.9-8.7 ms
--   5,000 of 10,000 rows                                  91-97     6.2-6.8 ms
--   30 of 30,030 rows                                     79-81     76-80 ms
--   1 of 30,001 rows                                      76-91     77-80 ms
--
-- The last two rows are statistics so stale that the planner takes a
-- queue of 100,000 for a few rows; then it hashes the queue with or
-- without the setting. Forcing the lookups by key there (enable_hashjoin
-- and enable_mergejoin off) was worse: a nested loop that scans the queue
-- once per message, seconds per ack. A settlement by ctid would not depend
-- on statistics at all; that is not done yet.

ALTER FUNCTION queue_ack(bigint, text, text, bigint[], uuid[], boolean) SET random_page_cost = 1.1;
ALTER FUNCTION queue_nack(bigint, text, text, bigint[], uuid[], integer[], text[]) SET random_page_cost = 1.1;
ALTER FUNCTION queue_fail(bigint, text, text, bigint[], uuid[], text[], text[]) SET random_page_cost = 1.1;
ALTER FUNCTION queue_release(bigint, text, text, bigint[], uuid[]) SET random_page_cost = 1.1;
