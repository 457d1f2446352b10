-- Reverts 004_message_options.up.sql.

DROP FUNCTION receive_delete(text,integer);
DROP FUNCTION send_entries(text,jsonb);
DROP FUNCTION account_receive_delete(text,text,integer);
DROP FUNCTION account_send_entries(text,text,jsonb);
DROP FUNCTION entry_int(jsonb,text,integer,integer,integer);
