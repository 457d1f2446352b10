-- One id per invocation, the same in log lines, the API and the CLI: the
-- engine takes the id from the identity's sequence before it invokes the
-- function (so guest log lines carry it) and inserts the record with it.
-- Readers that follow the log in the order records are written (metrics,
-- `sluice logs --follow`) use log_seq, assigned when the record is
-- inserted, instead of id.
--
-- trigger is the name the invocation was recorded under: the trigger's
-- name (kept when the trigger is later deleted), or 'invoke' for a call
-- of POST .../functions/{name}/invoke. It is what every surface shows and
-- every filter takes.
ALTER TABLE invocations ADD COLUMN trigger text;
UPDATE invocations i
   SET trigger = coalesce((SELECT t.name FROM triggers t WHERE t.id = i.trigger_id),
                          i.trigger_type || ':' || i.source);
ALTER TABLE invocations ALTER COLUMN trigger SET NOT NULL;
-- A record inserted without trigger (by hand, by SQL, by an older
-- process) gets its trigger's name, else trigger_type:source.
CREATE FUNCTION invocation_trigger_name() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.trigger IS NULL THEN
        IF NEW.trigger_id IS NOT NULL THEN
            EXECUTE format('SELECT name FROM %I.triggers WHERE id = $1', TG_TABLE_SCHEMA)
               INTO NEW.trigger USING NEW.trigger_id;
        END IF;
        NEW.trigger := coalesce(NEW.trigger, NEW.trigger_type || ':' || NEW.source);
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER invocation_trigger_name BEFORE INSERT ON invocations
    FOR EACH ROW WHEN (NEW.trigger IS NULL) EXECUTE FUNCTION invocation_trigger_name();

CREATE SEQUENCE invocation_log_seq;
ALTER TABLE invocations ADD COLUMN log_seq bigint;
UPDATE invocations SET log_seq = id;
SELECT setval('invocation_log_seq', coalesce(max(id), 0) + 1, false) FROM invocations;
ALTER TABLE invocations ALTER COLUMN log_seq SET DEFAULT nextval('invocation_log_seq'),
                        ALTER COLUMN log_seq SET NOT NULL;
ALTER SEQUENCE invocation_log_seq OWNED BY invocations.log_seq;
CREATE INDEX invocations_log_seq ON invocations (log_seq);
CREATE INDEX invocations_trigger ON invocations (account, trigger, started_at DESC);

