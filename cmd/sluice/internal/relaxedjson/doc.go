// Package relaxedjson parses the JSON the sluice CLI accepts in --body and
// similar flags: strict JSON, or a relaxed form that survives shells which
// strip or mangle double quotes (PowerShell passing arguments to native
// programs, cmd.exe, careless quoting in sh).
//
// Strict JSON is returned unchanged apart from compaction. Anything else is
// read with these relaxations and converted to strict JSON:
//
//   - Object keys may be unquoted: {hello:world} is {"hello":"world"}.
//   - String values may be unquoted "bare words": {id:1,tags:[a,b]} is
//     {"id":1,"tags":["a","b"]}. A bare word is a run of characters other
//     than white space, control characters and  { } [ ] , " ' \  — so
//     letters, digits and _-.:/@+~#%$!?*=&^|;<>() are all fine, and
//     {url:https://example.com/a?b=c} works. A key's bare word also stops at
//     ':'. Bare words that are exactly true, false or null, or that are valid
//     JSON numbers (1, -2.5, 1e9), keep their JSON meaning; any other bare
//     word is a string (True, 1.2.3, 007, NaN, 0x10 are strings). A bare word
//     cannot contain spaces: quote it.
//   - Strings may be single-quoted: {msg:'hello world'}. In either kind of
//     quotes the JSON escapes work, plus \' ; raw tabs and newlines are
//     kept (and escaped in the output).
//   - A trailing comma before } or ] is allowed: [a,b,].
//
// The top level may be any value: Parse("hello") is "hello", Parse("[{id:1},{id:2}]")
// is [{"id":1},{"id":2}]. Input must be valid UTF-8. Errors are
// *[SyntaxError] values naming the byte offset, what was expected and what
// was found.
package relaxedjson
