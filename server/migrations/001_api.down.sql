DROP TABLE IF EXISTS webhook_deliveries;
DROP TABLE IF EXISTS hooks;
DROP TABLE IF EXISTS access_keys;
