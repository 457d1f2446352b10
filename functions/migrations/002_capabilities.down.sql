ALTER TABLE function_versions DROP COLUMN capabilities;
