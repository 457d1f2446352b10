DROP VIEW function_overview;
DROP TABLE function_aliases;
DROP TABLE function_versions;
DROP TABLE functions;
DROP TABLE wasm_modules;
