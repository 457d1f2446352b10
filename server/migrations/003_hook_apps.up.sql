-- app: the app (the `app:` of a manifest) that deployed the hook; '' = no
-- app (created by hand), never touched by an app's deploy. The hooks table
-- is package triggers' (triggers/hooks.go), created in this line.
ALTER TABLE hooks ADD COLUMN app text NOT NULL DEFAULT '' CHECK (app ~ '^[A-Za-z0-9_-]{0,80}$');
