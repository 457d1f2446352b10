// Package console is Sluice's web console: an operator's view of queues,
// messages and dead letters, served by `sluice serve` at /console/.
//
// The console is plain HTML, CSS and JavaScript modules embedded in the
// binary (no build step, no front-end library, no separate server). It
// signs in with an access key (ID:SECRET) and an account number, keeps
// them in the browser's sessionStorage (never in a URL or a cookie) and
// does everything through the HTTP API (docs/http-api.md) with
// "Authorization: Bearer ID:SECRET", so a key's scopes and queue patterns
// apply exactly as they do to any other client.
//
// [Handler] serves the files; [Mount] puts the console in front of the API
// handler (server.Server.Handler uses it). The assets are in assets/:
// index.html, app.css and the modules js/app.js (sign-in, hash router),
// js/api.js (session and API calls), js/dom.js (DOM helpers that only ever
// insert text), js/queues.js and js/queue.js (the pages).
//
// # What exists
//
//   - Sign-in with account + key, checked against the API; sign-out clears
//     the session.
//   - Queues: names at once, then ready / inflight / delayed / DLQ counts
//     and oldest ready age from ?live=true; refreshed every 30 s and on the
//     Refresh button, keeping the previous numbers until new ones arrive.
//     Filter by name and paging (50 a page) keep 1,000 queues responsive.
//     Create a queue: name validated as you type, settings prefilled with
//     their defaults.
//   - A queue: counts and settings in the header, and tabs
//     Messages (send one JSON object or a batch array of 1-10 with
//     validation as you type and an optional delay; peek 10/50/100 with
//     body, headers, created_at, receive_count, visible_at; delete one;
//     purge with confirmation) and DLQ (list up to 100 dead letters with
//     reason and last error; delete one; purge and redrive all, each with
//     confirmation), Settings (edit the settings; a save PATCHes only the
//     changed fields) and API (curl, CLI and Go client snippets for this
//     queue with this server's URL; the secret is never shown).
//   - A key that stops working (revoked) signs the console out at its next
//     call, saying why.
//
// # What is next (issue 7)
//
//   - Overview tab with a throughput / depth chart of the last hour (needs
//     an API for per-minute sends, acks and DLQ moves).
//   - Redrive of selected dead letters, and browsing past the first 100
//     peeked or dead messages (the API has no offset or cursor yet).
//   - Triggers tab, Functions and Invocations pages.
//   - Browser tests of a poison message reaching the DLQ through a
//     function (today the test leases a message past max_receive_count
//     through the API) and of a function rollback.
//
// The browser tests (console_browser_test.go) drive Debian's chromium with
// chromedp against a real server on a fresh schema (client/clienttest):
// sign-in, create a queue, send, counts, peek, delete, purge, DLQ, redrive,
// settings, API snippets, 1,000 queues, 10,000 dead letters, a revoked
// key; an uncaught JavaScript exception fails them. Screenshots go to
// $SLUICE_ARTIFACTS/console/<test>/ (else a kept temporary folder, logged).
// scripts/test installs chromium when it is missing.
package console
