-- Back to 015: the claims planned on every call.
ALTER FUNCTION queue_receive(bigint, text, text, integer, integer) RESET plan_cache_mode;
ALTER FUNCTION queue_receive_delete(bigint, text, text, integer) RESET plan_cache_mode;
