-- app: the app (the `app:` of a manifest) that deployed the trigger; ''
-- = no app (created by hand or before apps existed), never touched by an
-- app's deploy. (The hooks' app column is in the server's line, which
-- creates that table: see server/migrations/001_api.up.sql.)
ALTER TABLE triggers ADD COLUMN app text NOT NULL DEFAULT '' CHECK (app ~ '^[A-Za-z0-9_-]{0,80}$');
