// The invocations page (filters, paging newest first), one invocation, and
// the invocations table the function page and the queue's Triggers tab use.

import { api } from "./api.js";
import { h, replace, num, time, errorBox } from "./dom.js";

export const PAGE_SIZE = 50;
const OUTCOMES = ["success", "partial_failure", "failure"];

/** outcome shows an invocation's outcome as a colored label. */
export function outcome(o) {
  return h("span", { class: "outcome outcome-" + o }, o.replace("_", " "));
}

/** ms formats a duration in milliseconds. */
export function ms(d) {
  return d < 10 ? Number(d).toFixed(2) + " ms" : d < 10000 ? Math.round(d) + " ms" : (d / 1000).toFixed(1) + " s";
}

/**
 * invocationTable lists invocations with a link to each. opts.logs adds
 * each one's error and stderr (folded); opts.trigger adds the trigger
 * column; opts.fn the function column.
 */
export function invocationTable(invs, opts = {}) {
  if (invs.length === 0) return h("p", { class: "muted", id: "no-invocations" }, opts.empty || "No invocations.");
  const cols = ["Id", "Started", opts.fn && "Function", "Version", opts.trigger && "Trigger", "Outcome", "Duration", "Batch", opts.logs && "Error and logs"].filter(Boolean);
  return h("table", { class: "invocations" },
    h("thead", {}, h("tr", {}, cols.map((c) => h("th", { class: ["Duration", "Batch", "Version"].includes(c) ? "num" : null }, c)))),
    h("tbody", {}, invs.map((v) => h("tr", { "data-invocation": v.id, "data-outcome": v.outcome },
      h("td", {}, h("a", { href: "#/invocations/" + v.id }, "#" + v.id)),
      h("td", { class: "small" }, time(v.started_at)),
      opts.fn ? h("td", {}, h("a", { href: "#/functions/" + encodeURIComponent(v.function) }, v.function)) : null,
      h("td", { class: "num" }, "v" + v.version),
      opts.trigger ? h("td", {}, v.trigger || h("span", { class: "muted" }, v.trigger_type)) : null,
      h("td", {}, outcome(v.outcome)),
      h("td", { class: "num" }, ms(v.duration_ms)),
      h("td", { class: "num" }, num(v.batch_size)),
      opts.logs ? h("td", { class: "logs" },
        v.error ? h("div", { class: "small error-text" }, v.failure_kind ? `${v.failure_kind}: ${v.error}` : v.error) : null,
        v.stderr ? h("details", {}, h("summary", { class: "small" }, "stderr"), h("pre", { class: "stderr" }, v.stderr))
          : (v.error ? null : h("span", { class: "muted" }, "–"))) : null))));
}

// utcInput and fromUTCInput convert between RFC 3339 and a
// datetime-local input's value, read as UTC (the console shows UTC).
function utcInput(t) {
  if (!t) return "";
  const d = new Date(t);
  return isNaN(d) ? "" : d.toISOString().slice(0, 19);
}

function fromUTCInput(v) {
  if (!v) return "";
  const d = new Date(v + "Z");
  return isNaN(d) ? null : d.toISOString();
}

/**
 * mount renders the invocations page into root. params (URLSearchParams
 * from the route) holds the filters: function, outcome, since, until.
 */
export function mount(root, params) {
  let alive = true;
  const filters = { function: params.get("function") || "", outcome: params.get("outcome") || "", since: params.get("since") || "", until: params.get("until") || "" };
  const fn = h("select", { id: "inv-function", "aria-label": "Function" }, h("option", { value: "" }, "any function"),
    filters.function ? h("option", { value: filters.function, selected: true }, filters.function) : null);
  const oc = h("select", { id: "inv-outcome", "aria-label": "Outcome" }, h("option", { value: "" }, "any outcome"),
    OUTCOMES.map((o) => h("option", { value: o, selected: o === filters.outcome }, o.replace("_", " "))));
  const since = h("input", { type: "datetime-local", step: 1, id: "inv-since", value: utcInput(filters.since) });
  const until = h("input", { type: "datetime-local", step: 1, id: "inv-until", value: utcInput(filters.until) });
  const errSlot = h("div");
  const list = h("div", { id: "invocations" }, h("p", { class: "muted" }, "Loading…"));
  const pager = h("div", { class: "row pager" });
  const cursors = []; // before_id of each page shown so far; [] = newest

  api.listFunctions().then((r) => {
    if (!alive) return;
    const names = r.functions.map((f) => f.name).filter((n) => n !== filters.function);
    fn.append(...names.map((n) => h("option", { value: n }, n)));
  }, () => {}); // the filter still works with the name from the route

  async function load(before) {
    try {
      const r = await api.invocations({ ...filters, before_id: before || "", limit: PAGE_SIZE });
      if (!alive) return;
      const invs = r.invocations;
      replace(list, invocationTable(invs, { fn: true, trigger: true, logs: false, empty: "No invocation matches." }));
      const page = cursors.length;
      replace(pager,
        h("button", { type: "button", class: "secondary", id: "inv-newest", disabled: page === 0,
          onclick: () => { cursors.length = 0; load(); } }, "« Newest"),
        h("span", { class: "muted small", id: "inv-page" }, invs.length ? `Page ${page + 1} · ${time(invs[0].started_at)} – ${time(invs[invs.length - 1].started_at)}` : `Page ${page + 1}`),
        h("button", { type: "button", class: "secondary", id: "inv-older", disabled: invs.length < PAGE_SIZE,
          onclick: () => { const last = invs[invs.length - 1].id; cursors.push(last); load(last); } }, "Older ›"));
    } catch (e) {
      if (alive) replace(list, errorBox(e));
    }
  }

  function apply(ev) {
    ev.preventDefault();
    const s = fromUTCInput(since.value);
    const u = fromUTCInput(until.value);
    if (s === null || u === null) return replace(errSlot, errorBox(new Error("since and until are dates and times (UTC)")));
    const q = new URLSearchParams();
    for (const [k, v] of [["function", fn.value], ["outcome", oc.value], ["since", s], ["until", u]]) if (v) q.set(k, v);
    const hash = "#/invocations" + (q.toString() ? "?" + q : "");
    if (location.hash === hash) { cursors.length = 0; load(); } else location.hash = hash;
  }

  replace(root,
    h("div", { class: "row" }, h("h1", {}, "Invocations")),
    h("form", { class: "panel row", id: "inv-filters", onsubmit: apply },
      h("label", {}, "Function", fn), h("label", {}, "Outcome", oc),
      h("label", {}, "Since (UTC)", since), h("label", {}, "Until (UTC)", until),
      h("span", { class: "spacer" }),
      h("button", { type: "submit", id: "inv-apply" }, "Apply")),
    errSlot,
    h("div", { class: "panel" }, h("p", { class: "muted small" }, "Newest first."), list, pager));
  load();
  return () => { alive = false; };
}

/**
 * emitsTable lists the messages an invocation emitted, in output order:
 * each send with its queue and sequence there, each publish with its
 * topic and copies, and the batch message it was for.
 */
function emitsTable(emits) {
  if (emits.length === 0) return h("p", { class: "muted", id: "no-emits" }, "None.");
  return h("table", { id: "invocation-emits" },
    h("thead", {}, h("tr", {}, h("th", {}, "Sent to"), h("th", {}, "Message"), h("th", {}, "For"))),
    h("tbody", {}, emits.map((e) => h("tr", { "data-emit": e.topic ? "topic:" + e.topic : "queue:" + e.queue + ":" + e.sequence },
      h("td", {}, e.topic
        ? ["topic ", h("a", { href: "#/topics" }, e.topic)]
        : ["queue ", h("a", { href: "#/queues/" + encodeURIComponent(e.queue) }, e.queue)]),
      h("td", { class: "mono" }, e.topic ? `${e.copies} ${e.copies === 1 ? "copy" : "copies"}` : "sequence " + e.sequence),
      h("td", { class: "mono" }, e.for || h("span", { class: "muted" }, "the batch"))))));
}

/** mountOne renders invocation id into root. */
export function mountOne(root, id) {
  let alive = true;
  replace(root, h("div", { class: "row" }, h("a", { href: "#/invocations" }, "← Invocations")),
    h("h1", {}, "Invocation #" + id), h("p", { class: "muted" }, "Loading…"));
  api.invocation(id).then((v) => {
    if (!alive) return;
    const fields = [
      ["Function", h("a", { href: "#/functions/" + encodeURIComponent(v.function) }, v.function)],
      ["Version", "v" + v.version],
      ["Trigger", v.trigger ? v.trigger : h("span", { class: "muted" }, v.trigger_id ? "(deleted)" : "–")],
      ["Trigger type", v.trigger_type],
      ["Source", v.source || "–"],
      ["Started", time(v.started_at)],
      ["Duration", ms(v.duration_ms)],
      ["Outcome", outcome(v.outcome)],
      ["Failure kind", v.failure_kind || "–"],
      ["Batch size", num(v.batch_size)],
      ["Acked / retried / dead", `${v.acked} / ${v.retried} / ${v.dead}`],
      ["Emitted", num(v.emitted || 0)],
    ];
    replace(root,
      h("div", { class: "row" }, h("a", { href: "#/invocations" }, "← Invocations")),
      h("h1", { id: "invocation-title" }, "Invocation #" + v.id),
      h("div", { class: "panel" }, h("dl", { class: "fields", id: "invocation-fields" },
        fields.map(([k, val]) => [h("dt", {}, k), h("dd", { "data-field": k }, val)]))),
      h("div", { class: "panel" }, h("h2", {}, "Messages in the batch"),
        h("p", { id: "invocation-messages", class: "mono" }, v.message_ids && v.message_ids.length ? v.message_ids.join(", ") : "–")),
      h("div", { class: "panel" }, h("h2", {}, "Emitted messages"), emitsTable(v.emits || [])),
      h("div", { class: "panel" }, h("h2", {}, "Error"),
        v.error ? h("pre", { id: "invocation-error", class: "stderr" }, v.error) : h("p", { class: "muted" }, "None.")),
      h("div", { class: "panel" }, h("h2", {}, "Captured stderr"),
        v.stderr ? h("pre", { id: "invocation-stderr", class: "stderr" }, v.stderr) : h("p", { class: "muted" }, "Nothing was written to stderr.")));
  }, (e) => {
    if (alive) replace(root, h("div", { class: "row" }, h("a", { href: "#/invocations" }, "← Invocations")), h("h1", {}, "Invocation #" + id), errorBox(e));
  });
  return () => { alive = false; };
}
