DROP TABLE IF EXISTS account_limits;
