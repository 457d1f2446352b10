-- app: the app (the `app:` of a manifest) that deployed the queue, so that
-- `sluice deploy` creates, updates and removes only its own app's queues.
-- '' = no app: created by hand (SQL, Go API, HTTP API, CLI), never touched
-- by a deploy. Set with the Go API's SetQueueApp.
ALTER TABLE queues ADD COLUMN app text NOT NULL DEFAULT '' CHECK (app ~ '^[A-Za-z0-9_-]{0,80}$');
