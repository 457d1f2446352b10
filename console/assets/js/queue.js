// One queue: counts and settings, and the Overview, Messages, DLQ,
// Triggers, Settings and API tabs.

import { api, session } from "./api.js";
import { h, replace, toast, confirmed, titleRow, num, plural, age, time, json, errorBox } from "./dom.js";
import { settingFields, QUEUE_DEFAULTS } from "./queues.js";
import { lineChart } from "./chart.js";
import { invocationTable } from "./invocations.js";

const TABS = [["overview", "Overview"], ["messages", "Messages"], ["dlq", "DLQ"], ["triggers", "Triggers"], ["settings", "Settings"], ["api", "API"]];
const TAB_VIEWS = { overview: overviewTab, messages: messagesTab, dlq: dlqTab, triggers: triggersTab, settings: settingsTab, api: apiTab };
const REFRESH_MS = 30000;
// The header's counts: stats field, label.
const COUNTS = [["ready", "Ready"], ["inflight", "Inflight"], ["delayed", "Delayed"], ["dlq", "DLQ"]];
const OLDEST_READY = ["oldest_ready_age_seconds", "Oldest ready"];

/** stat renders one figure of the queue header, its label above its value; key names it for tests and scripts. */
function stat(key, label, value) {
  return h("div", key ? { "data-stat": key } : {}, h("span", { class: "muted small" }, label), h("b", {}, value));
}

/**
 * checkMessage validates the send editor's text: a JSON object (one
 * message) or an array of 1–10 bodies (a batch). It returns
 * {ok, count, message}.
 */
export function checkMessage(text) {
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    return { ok: false, message: "not valid JSON: " + e.message };
  }
  if (Array.isArray(v)) {
    if (v.length < 1 || v.length > 10) return { ok: false, message: `a batch holds 1–10 bodies; this one has ${v.length}` };
    return { ok: true, count: v.length, message: `valid batch of ${v.length} message${v.length === 1 ? "" : "s"}` };
  }
  if (v === null || typeof v !== "object") {
    return { ok: false, message: "a single message body must be a JSON object (wrap other values in an array to send them as a batch)" };
  }
  return { ok: true, count: 1, message: "valid JSON object: one message" };
}

/**
 * checkSendOptions validates the send form's options: delay (0–43200 s),
 * TTL (empty, or 1–1209600 s), headers (one key=value per line) and dedup
 * key (1–128 characters, single messages only). It returns {ok, message,
 * headers} with headers an object of strings, or null when none.
 */
export function checkSendOptions(delay, ttl, headerText, dedupKey, count) {
  const d = Number(delay);
  if (delay === "" || !Number.isInteger(d) || d < 0 || d > 43200) return { ok: false, message: "delay: a whole number of seconds, 0–43200" };
  const t = Number(ttl);
  if (ttl !== "" && (!Number.isInteger(t) || t < 1 || t > 1209600)) {
    return { ok: false, message: "TTL: a whole number of seconds, 1–1209600 (14 days), or empty for none" };
  }
  let headers = null;
  for (const [i, raw] of headerText.split("\n").entries()) {
    const line = raw.trim();
    if (line === "") continue;
    const eq = line.indexOf("=");
    if (eq < 1) return { ok: false, message: `headers line ${i + 1}: use key=value, one per line` };
    const k = line.slice(0, eq).trim();
    headers = headers || {};
    if (Object.prototype.hasOwnProperty.call(headers, k)) return { ok: false, message: `headers: key "${k}" is given twice` };
    headers[k] = line.slice(eq + 1).trim();
  }
  if (dedupKey.length > 128) return { ok: false, message: "dedup key: 1–128 characters" };
  if (dedupKey !== "" && count > 1) return { ok: false, message: "dedup key: only a single message takes one" };
  return { ok: true, headers };
}

/** mount renders queue name's page with tab into root; returns unmount. */
export function mount(root, name, tab) {
  if (!TABS.some(([t]) => t === tab)) tab = "overview";
  let alive = true;
  // Until the queue loads, a header of the same shape keeps the tabs where
  // they will be (a click on a tab must not land on the header instead).
  const header = h("div", { class: "panel", id: "queue-header" },
    h("div", { class: "counts" }, [...COUNTS, OLDEST_READY].map(([, label]) => stat(null, label, "…"))),
    h("p", { class: "muted small" }, "Loading…"));
  const body = h("div");
  replace(root,
    h("div", { class: "row" }, h("a", { href: "#/queues" }, "← Queues")),
    h("h1", { id: "queue-name" }, name),
    header,
    h("nav", { class: "tabs" }, TABS.map(([t, label]) =>
      h("a", { href: `#/queues/${encodeURIComponent(name)}/${t}`, id: "tab-" + t, "aria-current": t === tab ? "page" : null }, label))),
    body);

  async function loadHeader() {
    try {
      const q = await api.getQueue(name);
      if (!alive) return;
      const s = q.stats || {};
      replace(header,
        h("div", { class: "counts", id: "queue-counts" },
          COUNTS.map(([k, label]) => stat(k, label, num(s[k]))),
          stat(...OLDEST_READY, s.ready ? age(s.oldest_ready_age_seconds) : "–"),
          stat("bytes", "Stored bytes", `${num(s.bytes || 0)} (DLQ ${num(s.dlq_bytes || 0)})`),
          // Ordered groups: shown on a fifo queue, or once a queue has groups.
          ...(q.fifo || s.groups || s.grouped_waiting ?
            [["groups", "Groups"], ["groups_inflight", "Groups in flight"], ["groups_blocked", "Groups blocked"],
              ["grouped_waiting", "Waiting in groups"]].map(([k, label]) => stat(k, label, num(s[k] || 0))) : [])),
        h("p", { class: "muted small" },
          `visibility timeout ${q.visibility_timeout_seconds}s · max receive count ${q.max_receive_count} · ` +
          `delay ${q.delay_seconds}s · retention ${age(q.retention_seconds)} · max message ${num(q.max_message_bytes)} bytes · ` +
          `dedup window ${q.dedup_window_seconds}s · ${q.fifo ? "fifo (every message needs a group) · " : ""}created ${time(q.created_at)}`));
    } catch (e) {
      if (alive) replace(header, errorBox(e));
    }
  }

  loadHeader();
  // A tab may return a function the page's refresh calls too.
  const refreshTab = TAB_VIEWS[tab](body, name, loadHeader, () => alive);
  const timer = setInterval(() => { loadHeader(); if (refreshTab) refreshTab(); }, REFRESH_MS);
  return () => { alive = false; clearInterval(timer); };
}

// overviewTab shows the settings and a chart of the last hour: sends, acks
// and DLQ moves per minute, and depth (ready + inflight). It refreshes
// with the page.
function overviewTab(root, name, changed, alive) {
  const settings = h("div", { id: "overview-settings" }, h("p", { class: "muted" }, "Loading…"));
  const charts = h("div", { id: "overview-charts" }, h("p", { class: "muted" }, "Loading…"));
  const updated = h("span", { class: "muted small", id: "overview-updated" });
  replace(root,
    h("div", { class: "panel" },
      titleRow("Last hour", updated,
        h("button", { type: "button", class: "secondary", id: "overview-refresh", onclick: () => { load(); changed(); } }, "Refresh")),
      charts),
    h("div", { class: "panel" }, h("h2", {}, "Settings"), settings));

  async function load() {
    const [q, st] = await Promise.allSettled([api.getQueue(name), api.queueStats(name, 60)]);
    if (!alive()) return;
    if (q.status === "fulfilled") {
      replace(settings, h("dl", { class: "fields" }, QUEUE_DEFAULTS.map(([key, label]) =>
        [h("dt", {}, label), h("dd", { "data-setting": key }, num(q.value[key]))]),
      h("dt", {}, "Dead letters go to"), h("dd", { "data-setting": "dead_letter_queue" }, q.value.dead_letter_queue
        ? h("a", { href: "#/queues/" + encodeURIComponent(q.value.dead_letter_queue) }, "queue " + q.value.dead_letter_queue)
        : "the DLQ tab"),
      h("dt", {}, "Created"), h("dd", {}, time(q.value.created_at)),
      h("dt", {}, "Updated"), h("dd", {}, time(q.value.updated_at))));
    } else replace(settings, errorBox(q.reason));
    if (st.status === "rejected") return replace(charts, errorBox(st.reason));
    const m = st.value.minutes;
    const minutes = m.map((x) => x.minute);
    const depth = m.map((x) => (x.ready === null || x.inflight === null ? null : x.ready + x.inflight));
    const sum = (k) => m.reduce((a, x) => a + x[k], 0);
    replace(charts,
      h("p", { class: "muted small", id: "overview-totals" },
        `In the last hour: ${num(sum("sends"))} sent · ${num(sum("acks"))} acked · ${num(sum("dlq_moves"))} moved to the DLQ`),
      h("div", { class: "charts" },
        lineChart({ id: "chart-throughput", title: `Messages per minute in ${name}`, yLabel: "per minute", minutes, series: [
          { key: "sends", label: "sends", values: m.map((x) => x.sends) },
          { key: "acks", label: "acks", values: m.map((x) => x.acks) },
          { key: "dlq_moves", label: "DLQ moves", values: m.map((x) => x.dlq_moves) },
        ] }),
        lineChart({ id: "chart-depth", title: `Depth of ${name}`, yLabel: "messages", minutes, series: [
          { key: "depth", label: "depth (ready + inflight)", values: depth },
        ] })));
    updated.textContent = "as of " + new Date().toLocaleTimeString();
  }

  load();
  return load;
}

// triggersTab lists the queue triggers reading this queue and their recent
// invocations.
function triggersTab(root, name, changed, alive) {
  const list = h("div", { id: "triggers" }, h("p", { class: "muted" }, "Loading…"));
  const invs = h("div", { id: "trigger-invocations" });
  replace(root,
    h("div", { class: "panel" },
      titleRow("Triggers on this queue",
        h("button", { type: "button", class: "secondary", id: "triggers-refresh", onclick: () => { load(); changed(); } }, "Refresh")),
      list),
    h("div", { class: "panel" }, h("h2", {}, "Recent invocations"), invs));

  async function load() {
    let ts;
    try {
      ts = (await api.listTriggers()).triggers.filter((t) => t.kind === "queue" && t.queue === name).sort((a, b) => a.name.localeCompare(b.name));
    } catch (e) {
      if (alive()) { replace(list, errorBox(e)); replace(invs); }
      return;
    }
    if (!alive()) return;
    replace(list, ts.length === 0 ? h("p", { class: "muted" }, "No trigger reads this queue: add one with `sluice deploy` or PUT .../triggers/{name}.") :
      h("table", {},
        h("thead", {}, h("tr", {}, ["Trigger", "Function", "Batch size", "Window", "Concurrency", "Ack policy", "Enabled"].map((c) =>
          h("th", { class: ["Batch size", "Window", "Concurrency"].includes(c) ? "num" : null }, c)))),
        h("tbody", {}, ts.map((t) => h("tr", { "data-trigger": t.name },
          h("td", {}, t.name),
          h("td", {}, h("a", { href: "#/functions/" + encodeURIComponent(t.function) }, t.function), h("span", { class: "muted" }, " @ " + (t.alias || "live"))),
          h("td", { class: "num" }, num(t.batch_size)),
          h("td", { class: "num" }, num(t.batch_window_ms) + " ms"),
          h("td", { class: "num" }, num(t.concurrency)),
          h("td", {}, t.ack_policy || "ack"),
          h("td", { "data-enabled": t.enabled }, t.enabled ? "yes" : h("span", { class: "error-text" }, "disabled")))))));
    if (ts.length === 0) return replace(invs, h("p", { class: "muted" }, "No invocations."));
    try {
      const rs = await Promise.all(ts.map((t) => api.invocations({ trigger: t.name, limit: 25 })));
      if (!alive()) return;
      const all = rs.flatMap((r) => r.invocations).sort((a, b) => b.id - a.id).slice(0, 25);
      replace(invs, invocationTable(all, { trigger: true, fn: ts.length > 1, logs: true, empty: "No invocations yet." }));
    } catch (e) {
      if (alive()) replace(invs, errorBox(e));
    }
  }

  load();
  return load;
}

/**
 * seqPager pages a list in sequence order with the API's after cursor:
 * Next shows the sequences after the last one shown, "Back to start" the
 * first page. load is called to (re)load the page at after().
 */
function seqPager(prefix, load) {
  const cursors = []; // the after of each page past the first
  const el = h("div", { class: "row pager", id: prefix + "-pager" });
  return {
    el,
    after: () => cursors[cursors.length - 1] || 0,
    reset: () => { cursors.length = 0; },
    /**
     * update shows the page just loaded: msgs, and next, the after of the
     * next page while more may follow (a page stops short of max_messages
     * at 8 MiB, so its length does not tell).
     */
    update(msgs, next) {
      const page = cursors.length + 1;
      const last = !next;
      if (page === 1 && last) return replace(el); // nothing to page through
      replace(el,
        h("button", { type: "button", class: "secondary", id: prefix + "-start", disabled: page === 1,
          onclick: () => { cursors.length = 0; load(); } }, "« Back to start"),
        h("span", { class: "muted small", id: prefix + "-page" },
          `Page ${page}` + (msgs.length ? ` · sequences ${msgs[0].sequence}–${msgs[msgs.length - 1].sequence}` : "") + (last ? " · last page" : "")),
        h("button", { type: "button", class: "secondary", id: prefix + "-next", disabled: last,
          onclick: () => { cursors.push(next); load(); } }, "Next ›"));
    },
  };
}

function messagesTab(root, name, changed, alive) {
  const editor = h("textarea", { id: "message-body", spellcheck: "false", "aria-describedby": "message-hint" },
    '{\n  "hello": "world"\n}');
  const hint = h("div", { class: "hint", id: "message-hint" });
  const delay = h("input", { type: "number", id: "message-delay", min: 0, max: 43200, step: 1, value: 0 });
  const ttl = h("input", { type: "number", id: "message-ttl", min: 1, max: 1209600, step: 1, value: "", placeholder: "none" });
  const dedup = h("input", { type: "text", id: "message-dedup", maxlength: 128, placeholder: "none" });
  const group = h("input", { type: "text", id: "message-group", maxlength: 128, placeholder: "none" });
  const headersBox = h("textarea", { id: "message-headers", spellcheck: "false", rows: 2, placeholder: "key=value, one per line" });
  const send = h("button", { type: "submit", id: "send-message" }, "Send");
  const sendResult = h("div", { class: "hint", id: "send-result" });
  const max = h("select", { id: "peek-max" }, [10, 50, 100].map((n) => h("option", { value: n }, n)));
  const list = h("div", { id: "messages" });

  function check() {
    const r = checkMessage(editor.value);
    const o = checkSendOptions(delay.value, ttl.value, headersBox.value, dedup.value, r.ok ? r.count : 1);
    editor.setAttribute("aria-invalid", r.ok ? "false" : "true");
    hint.textContent = r.ok ? (o.ok ? r.message : o.message) : r.message;
    hint.className = "hint " + (r.ok && o.ok ? "ok" : "error");
    send.disabled = !(r.ok && o.ok);
    return { ...r, options: o };
  }
  for (const el of [editor, delay, ttl, dedup, group, headersBox]) el.addEventListener("input", check);

  const pager = seqPager("peek", () => peek());
  max.addEventListener("change", () => { pager.reset(); peek(); });

  async function peek() {
    try {
      const r = await api.peek(name, max.value, pager.after());
      if (!alive()) return;
      replace(list, messageTable(r.messages));
      pager.update(r.messages, r.next);
    } catch (e) {
      if (alive()) replace(list, errorBox(e));
    }
  }

  function messageTable(msgs) {
    if (msgs.length === 0) return h("p", { class: "muted" }, "No messages to peek.");
    return h("table", {},
      h("thead", {}, h("tr", {}, ["Sequence", "Group", "Created", "Receives", "Visible at", "Body", "Headers", ""].map((t) => h("th", {}, t)))),
      h("tbody", {}, msgs.map((m) => h("tr", { "data-sequence": m.sequence },
        h("td", { class: "num" }, m.sequence),
        h("td", { class: "small", "data-group": m.group || "" }, m.group || h("span", { class: "muted" }, "–")),
        h("td", { class: "small" }, time(m.created_at)),
        h("td", { class: "num" }, m.receive_count),
        h("td", { class: "small" }, time(m.visible_at)),
        h("td", {}, h("pre", {}, json(m.body))),
        h("td", {}, m.headers ? h("pre", {}, json(m.headers)) : h("span", { class: "muted" }, "–")),
        h("td", {}, h("button", { type: "button", class: "link", title: "Delete this message", onclick: async () => {
          try {
            await api.deleteMessage(name, m.sequence);
            toast(`Message ${m.sequence} deleted`);
          } catch (e) {
            toast(e.message, true);
          }
          peek(); changed();
        } }, "Delete"))))));
  }

  const form = h("form", {
    class: "panel", id: "send-form",
    onsubmit: async (ev) => {
      ev.preventDefault();
      const r = check();
      if (send.disabled) return;
      send.disabled = true;
      try {
        const o = r.options;
        let res;
        if (o.headers) {
          // Headers travel only in entries: one entry per message, the
          // body's text kept as typed (so its numbers keep their precision)
          // for a single message.
          const opts = JSON.stringify({ headers: o.headers, delay_seconds: Number(delay.value) || undefined,
            expires_in_seconds: ttl.value === "" ? undefined : Number(ttl.value), dedup_key: dedup.value || undefined,
            group: group.value || undefined });
          const v = JSON.parse(editor.value);
          const entries = Array.isArray(v)
            ? v.map((b) => `{"body":${JSON.stringify(b)},${opts.slice(1)}`)
            : [`{"body":${editor.value},${opts.slice(1)}`];
          res = await api.sendEntries(name, `{"entries":[${entries.join(",")}]}`);
        } else {
          res = await api.send(name, editor.value, Number(delay.value), ttl.value === "" ? 0 : Number(ttl.value), dedup.value, group.value);
        }
        const seqs = res.sequences || [res.sequence];
        sendResult.textContent = `Sent ${r.count} message${r.count === 1 ? "" : "s"}: sequence ${seqs.join(", ")}`;
        sendResult.className = "hint ok";
        peek(); changed();
      } catch (e) {
        sendResult.textContent = `${e.message} (${e.code})`;
        sendResult.className = "hint error";
      }
      check();
    },
  },
  h("h2", {}, "Send a message"),
  h("p", { class: "muted small" }, "A JSON object sends one message; an array of 1–10 values sends a batch."),
  editor, hint,
  h("div", { class: "row" }, h("label", {}, "Delay (seconds)", delay), h("label", {}, "TTL (seconds)", ttl),
    h("label", {}, "Dedup key", dedup),
    h("label", { title: "An ordered group: its messages are delivered in order, one at a time; a fifo queue requires one" }, "Group", group)),
  h("label", {}, "Headers", headersBox),
  h("div", { class: "row" }, h("span", { class: "spacer" }), send),
  sendResult);

  replace(root, form,
    h("div", { class: "panel" },
      titleRow("Messages",
        h("label", {}, "Peek at most", max),
        h("button", { type: "button", class: "secondary", id: "peek", onclick: () => { pager.reset(); peek(); changed(); } }, "Peek"),
        h("button", { type: "button", class: "danger", id: "purge", onclick: async () => {
          if (!(await confirmed(`Purge every message of queue ${name}? This cannot be undone.`, "Purge",
            () => api.purge(name), (r) => `Purged ${plural(r.purged, "message")}`))) return;
          pager.reset(); peek(); changed();
        } }, "Purge…")),
      h("p", { class: "muted small" }, "Peek reads the next messages without claiming them."),
      list, pager.el));
  check();
  peek();
}

// dlqTab pages through the dead letters; rows can be selected for a
// redrive of just those.
function dlqTab(root, name, changed, alive) {
  const max = h("select", { id: "dlq-max" }, [10, 50, 100].map((n) => h("option", { value: n, selected: n === 100 }, n)));
  const list = h("div", { id: "dead-letters" });
  const selected = new Set(); // sequences checked, kept across pages
  const pager = seqPager("dlq", () => load());
  const redriveSel = h("button", { type: "button", id: "redrive-selected", disabled: true,
    onclick: () => act(`Move the ${selected.size} selected dead letter${selected.size === 1 ? "" : "s"} of ${name} back to the queue (receive counts reset)?`,
      "Redrive selected", () => api.redriveSelected(name, [...selected].sort((a, b) => a - b)),
      (r) => { selected.clear(); return `Redrove ${plural(r.redriven, "message")}`; }) }, "Redrive selected…");
  max.addEventListener("change", () => { pager.reset(); load(); });

  function selectionChanged() {
    redriveSel.disabled = selected.size === 0 || selected.size > 1000;
    redriveSel.textContent = selected.size ? `Redrive ${num(selected.size)} selected…` : "Redrive selected…";
  }

  async function load() {
    try {
      const r = await api.dlq(name, max.value, pager.after());
      if (!alive()) return;
      replace(list, deadTable(r.messages));
      pager.update(r.messages, r.next);
    } catch (e) {
      if (alive()) replace(list, errorBox(e));
    }
  }

  function deadTable(msgs) {
    if (msgs.length === 0) return h("p", { class: "muted" }, pager.after() ? "No dead letters after this point." : "The dead-letter queue is empty.");
    const boxes = msgs.map((m) => h("input", { type: "checkbox", "aria-label": `Select dead letter ${m.sequence}`, checked: selected.has(m.sequence),
      onchange: (ev) => { if (ev.target.checked) selected.add(m.sequence); else selected.delete(m.sequence); all.checked = boxes.every((b) => b.checked); selectionChanged(); } }));
    const all = h("input", { type: "checkbox", id: "dlq-select-page", "aria-label": "Select the dead letters on this page", checked: boxes.every((b) => b.checked),
      onchange: () => {
        msgs.forEach((m, i) => { boxes[i].checked = all.checked; if (all.checked) selected.add(m.sequence); else selected.delete(m.sequence); });
        selectionChanged();
      } });
    return h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, all), ["Sequence", "Group", "Failed at", "Reason", "Last error", "Receives", "Body", ""].map((t) => h("th", {}, t)))),
      h("tbody", {}, msgs.map((m, i) => h("tr", { "data-sequence": m.sequence },
        h("td", {}, boxes[i]),
        h("td", { class: "num" }, m.sequence),
        h("td", { class: "small", "data-group": m.group || "" }, m.group || h("span", { class: "muted" }, "–")),
        h("td", { class: "small" }, time(m.failed_at)),
        h("td", {}, m.reason),
        h("td", {}, m.last_error ? h("pre", {}, m.last_error) : h("span", { class: "muted" }, "–")),
        h("td", { class: "num" }, m.receive_count),
        h("td", {}, h("pre", {}, json(m.body))),
        h("td", {}, h("button", { type: "button", class: "link", "data-delete": m.sequence, onclick: async () => {
          try {
            await api.deleteDead(name, m.sequence);
            selected.delete(m.sequence);
            selectionChanged();
            toast(`Dead letter ${m.sequence} deleted`);
          } catch (e) {
            toast(e.message, true);
          }
          load(); changed();
        } }, "Delete"))))));
  }

  async function act(question, label, fn, done) {
    if (!(await confirmed(question, label, () => fn(name), done))) return;
    selectionChanged();
    pager.reset(); load(); changed();
  }

  replace(root, h("div", { class: "panel" },
    titleRow("Dead letters",
      h("label", {}, "Show at most", max),
      h("button", { type: "button", class: "secondary", id: "dlq-refresh", onclick: () => { load(); changed(); } }, "Refresh"),
      redriveSel,
      h("button", { type: "button", id: "redrive", onclick: () => act(`Move every dead letter of ${name} back to the queue (receive counts reset)?`, "Redrive all",
        api.redrive, (r) => { selected.clear(); return `Redrove ${plural(r.redriven, "message")}`; }) }, "Redrive all…"),
      h("button", { type: "button", class: "danger", id: "purge-dlq", onclick: () => act(`Purge every dead letter of ${name}? This cannot be undone.`, "Purge DLQ",
        api.purgeDLQ, (r) => { selected.clear(); return `Purged ${plural(r.purged, "dead letter")}`; }) }, "Purge DLQ…")),
    h("p", { class: "muted small" }, "Oldest first. Select rows (on any page) to redrive only those."),
    list, pager.el));
  load();
}

// settingsTab edits the queue's settings; a save sends only the changed
// fields (PATCH changes them atomically).
function settingsTab(root, name, changed, alive) {
  const errSlot = h("div");
  const result = h("div", { class: "hint", id: "settings-result" });
  replace(root, h("div", { class: "panel" }, h("span", { class: "muted" }, "Loading…")));
  api.getQueue(name).then((q) => {
    if (!alive()) return;
    const save = h("button", { type: "submit", id: "save-settings", disabled: true }, "Save");
    const settings = settingFields("setting-", q, () => edits());
    // edits returns the fields that differ from the saved queue.
    function edits() {
      const r = settings.read();
      const out = {};
      for (const [k, v] of Object.entries(r.values)) if (v !== q[k]) out[k] = v;
      save.disabled = !r.ok || Object.keys(out).length === 0;
      return out;
    }
    replace(root, h("form", {
      class: "panel", id: "settings-form",
      onsubmit: async (ev) => {
        ev.preventDefault();
        const body = edits();
        if (save.disabled) return;
        save.disabled = true;
        replace(errSlot);
        try {
          q = await api.updateQueue(name, body);
          result.textContent = "Saved: " + Object.keys(body).join(", ");
          result.className = "hint ok";
          changed();
        } catch (e) {
          replace(errSlot, errorBox(e));
        }
        edits();
      },
    },
    h("h2", {}, "Settings"),
    h("p", { class: "muted small" }, "Changes apply to messages received from now on; the name cannot change."),
    h("div", { class: "grid" }, settings.elements),
    errSlot,
    h("div", { class: "row end" }, result, save)));
  }, (e) => {
    if (alive()) replace(root, errorBox(e));
  });
}

// apiTab shows ready-to-copy snippets for this queue with this server's URL.
// The secret is never shown: the snippets read it from SLUICE_KEY.
function apiTab(root, name) {
  const s = session();
  const origin = location.origin;
  const url = `${origin}/${s.account}/${name}`;
  const keyID = s.key.split(":")[0];
  const snippets = [
    ["curl", [
      `export SLUICE_KEY='${keyID}:…'   # this key's ID:SECRET`,
      `# send`,
      `curl -sS -X POST '${url}/messages' -H "Authorization: Bearer $SLUICE_KEY" -H 'Content-Type: application/json' -d '{"hello": "world"}'`,
      `# send entries, each with its own headers, delay_seconds, expires_in_seconds, dedup_key, group`,
      `curl -sS -X POST '${url}/messages/entries' -H "Authorization: Bearer $SLUICE_KEY" -H 'Content-Type: application/json' -d '{"entries": [{"body": {"hello": "world"}, "headers": {"trace": "abc"}, "expires_in_seconds": 300}]}'`,
      `# receive (lease) up to 10, waiting up to 20 s`,
      `curl -sS -X POST '${url}/messages/receive' -H "Authorization: Bearer $SLUICE_KEY" -H 'Content-Type: application/json' -d '{"max_messages": 10, "wait_seconds": 20}'`,
      `# delete (ack) one`,
      `curl -sS -X DELETE '${url}/messages/SEQUENCE?receipt=RECEIPT' -H "Authorization: Bearer $SLUICE_KEY"`,
      `# peek, and the dead letters`,
      `curl -sS '${url}/messages?max_messages=10' -H "Authorization: Bearer $SLUICE_KEY"`,
      `curl -sS '${url}/dlq?max_messages=10' -H "Authorization: Bearer $SLUICE_KEY"`,
    ].join("\n")],
    ["CLI", [
      `sluice login --endpoint ${origin} --account ${s.account} --key "$SLUICE_KEY"`,
      `sluice mq send ${name} --body '{"hello": "world"}'`,
      `sluice mq send ${name} '{"hello": "world"}' --delay 30s --ttl 5m --header trace=abc`,
      `sluice mq receive ${name} --max-messages 10 --wait-seconds 20`,
      `sluice mq peek ${name} --max-messages 10`,
    ].join("\n")],
    ["Go", [
      `import "github.com/sluicehq/sluice/client"`,
      ``,
      `c, err := client.New("${origin}", "${keyID}", os.Getenv("SLUICE_SECRET"), client.WithAccount("${s.account}"))`,
      `seq, err := c.MQ.Send(ctx, "${name}", map[string]any{"hello": "world"})`,
      `msgs, err := c.MQ.Receive(ctx, "${name}", client.ReceiveOptions{MaxMessages: 10, WaitSeconds: 20})`,
      `for _, m := range msgs {`,
      `\t// handle m.Body, then ack:`,
      `\terr = c.MQ.Delete(ctx, "${name}", m.Sequence, m.Receipt)`,
      `}`,
    ].join("\n")],
  ];
  replace(root, snippets.map(([title, text]) => {
    const pre = h("pre", { class: "snippet", "data-snippet": title }, text);
    return h("div", { class: "panel" },
      titleRow(title,
        h("button", { type: "button", class: "secondary", onclick: () => copy(pre) }, "Copy")),
      pre);
  }));
}

async function copy(pre) {
  try {
    await navigator.clipboard.writeText(pre.textContent);
    toast("Copied");
  } catch {
    // No clipboard access (plain http off localhost): select the text.
    getSelection().selectAllChildren(pre);
    toast("Selected: press Ctrl+C to copy");
  }
}
