// Package console is Sluice's web console: an operator's view of queues,
// messages, dead letters, topics, triggers, functions and invocations, served by
// `sluice serve` at /console/.
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
// index.html, app.css and the modules js/app.js (sign-in, nav, hash
// router), js/api.js (session and API calls), js/dom.js (DOM helpers that
// only ever insert text, for HTML and SVG), js/chart.js (line charts as
// inline SVG built with DOM calls), and the pages js/queues.js,
// js/queue.js, js/topics.js, js/functions.js and js/invocations.js.
//
// # What exists
//
//   - Sign-in with account + key, checked against the API; sign-out clears
//     the session. Nav links: Queues, Topics, Functions, Invocations.
//   - Queues: names at once, then ready / inflight / delayed / DLQ counts
//     and oldest ready age from ?live=true; refreshed every 30 s and on the
//     Refresh button, keeping the previous numbers until new ones arrive.
//     Filter by name and paging (50 a page) keep 1,000 queues responsive.
//     Create a queue: name validated as you type, settings prefilled with
//     their defaults.
//   - A queue (#/queues/{q}/{tab}): counts and settings in the header, and
//     tabs Overview (the default: settings, where dead letters go (a
//     dead-letter queue, linked, or the DLQ tab), and charts of the last hour
//     from .../stats: sends, acks and DLQ moves per minute, and depth as
//     ready + inflight, with axis labels, a legend and per-minute hover
//     titles; refreshed with the page every 30 s), Messages (send one JSON
//     object or a batch array of 1-10 with validation as you type and an
//     optional delay; peek 10/50/100 with body, headers, created_at,
//     receive_count, visible_at, paged with after: Next / back to start;
//     delete one; purge with confirmation), DLQ (dead letters with reason
//     and last error, paged with after; delete one; select rows on any
//     page and "Redrive selected" (sequences); redrive all and purge, each
//     with confirmation), Triggers (the queue triggers reading this queue:
//     function and alias, batch size, window, concurrency, ack policy,
//     enabled; and their recent invocations with outcome, duration, batch
//     size, error and stderr), Settings (a save PATCHes only the changed
//     fields) and API (curl, CLI and Go client snippets for this queue with
//     this server's URL; the secret is never shown).
//   - Topics (#/topics): each topic's subscribed queues (linked) with
//     their header filters and source, and a Publish form (a topic, one
//     JSON body sent as typed, optional headers as a JSON object) through
//     .../messages/entries, showing the copies made. Creating topics and
//     subscribing are left to the CLI, API and manifest.
//   - Functions (#/functions): name, latest version, aliases. A function
//     (#/functions/{name}): its aliases with a Rollback button each
//     (confirmed; POST .../rollback), its versions (sha256 prefix, size,
//     memory, timeout, env with values masked as the API gives them,
//     created_at, aliases) with "Point {alias} here" for the others
//     (confirmed; PUT .../aliases/{alias}), and its 20 latest invocations
//     with error and stderr.
//   - Invocations (#/invocations?function=&outcome=&since=&until=): filters
//     by function, outcome and time (UTC), newest first, 50 a page paged
//     with before_id. One invocation (#/invocations/{id}): function,
//     version, trigger, source, times, outcome, failure kind, counts, the
//     batch's message ids, the error and the captured stderr as text.
//   - API errors show in an error box where the data would be; a key that
//     stops working (revoked) signs the console out at its next call,
//     saying why.
//
// The browser tests (console_browser_test.go) drive Debian's chromium with
// chromedp against a real server with its trigger engine on a fresh schema
// (client/clienttest): sign-in, create a queue, send, counts, peek,
// delete, purge, DLQ, redrive, settings, API snippets, 1,000 queues,
// 10,000 dead letters paged and partly redriven, a revoked key, the
// Overview chart's series, a rollback, and the path with the
// poison example (a message sent in the console dies through the
// function's failures, live is pointed at a fixed version, Redrive
// selected, processed; Triggers tab, Invocations filters, one
// invocation's stderr), and topics (subscriptions with filters, publish
// with and without headers). An uncaught JavaScript exception fails them.
// Compiled WASM is shared across runs in the user cache folder
// (sluice/console-test-compiled), since compiling a Go module under -race
// takes tens of seconds. Screenshots go to
// $SLUICE_ARTIFACTS/console/<test>/ (else a kept temporary folder, logged).
// scripts/test installs chromium when it is missing.
package console
