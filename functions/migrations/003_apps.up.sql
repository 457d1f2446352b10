-- app: the app (the `app:` of a manifest) that deployed the function; ''
-- = no app (deployed by hand), never touched by an app's deploy.
ALTER TABLE functions ADD COLUMN app text NOT NULL DEFAULT '' CHECK (app ~ '^[A-Za-z0-9_-]{0,80}$');
