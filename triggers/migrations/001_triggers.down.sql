DROP TABLE invocations;
DROP TABLE cron_ticks;
DROP TABLE triggers;
