-- Back to 016: the settling functions cost reads with the server's
-- random_page_cost.
ALTER FUNCTION queue_ack(bigint, text, text, bigint[], uuid[], boolean) RESET random_page_cost;
ALTER FUNCTION queue_nack(bigint, text, text, bigint[], uuid[], integer[], text[]) RESET random_page_cost;
ALTER FUNCTION queue_fail(bigint, text, text, bigint[], uuid[], text[], text[]) RESET random_page_cost;
ALTER FUNCTION queue_release(bigint, text, text, bigint[], uuid[]) RESET random_page_cost;
