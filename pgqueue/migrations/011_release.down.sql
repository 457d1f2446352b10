DROP FUNCTION account_release(text, text, bigint[], uuid[]);
