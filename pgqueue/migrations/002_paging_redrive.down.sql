-- Reverts 002_paging_redrive.up.sql.

DROP FUNCTION account_redrive_sequences(text,text,bigint[]);
DROP FUNCTION account_receive_dlq_after(text,text,bigint,integer);
DROP FUNCTION account_peek_after(text,text,bigint,integer);
DROP FUNCTION check_page(bigint,integer);
