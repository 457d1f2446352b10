// The queues page: names at once, live counts filled in after and
// refreshed every 30 s without blanking; filter, paging, create.

import { api } from "./api.js";
import { h, replace, toast, num, age, errorBox } from "./dom.js";

export const PAGE_SIZE = 50;
export const REFRESH_MS = 30000;
export const NAME_RE = /^[A-Za-z0-9_-]{1,80}$/;

// The settings a create may give, with the API's defaults.
export const QUEUE_DEFAULTS = [
  ["visibility_timeout_seconds", "Visibility timeout (s)", 30, 0, 43200],
  ["max_receive_count", "Max receive count", 5, 1, 1000],
  ["delay_seconds", "Delay (s)", 0, 0, 43200],
  ["retention_seconds", "Retention (s)", 345600, 60, 1209600],
  ["max_message_bytes", "Max message bytes", 262144, 1, 1048576],
  ["dedup_window_seconds", "Dedup window (s)", 300, 0, 86400],
];

/**
 * settingFields builds one number input per queue setting, with values
 * (default: the defaults), ids idPrefix+key and onInput called on edits.
 * read() marks bad inputs and returns {ok, values} (integers in range).
 */
export function settingFields(idPrefix, values, onInput) {
  const fields = QUEUE_DEFAULTS.map(([key, label, def, min, max]) => {
    const input = h("input", { type: "number", name: key, id: idPrefix + key, value: values ? values[key] : def, min, max, step: 1, required: true });
    input.addEventListener("input", onInput);
    const range = `${min.toLocaleString("en-US")}–${max.toLocaleString("en-US")}`;
    return { key, min, max, input, el: h("label", {}, `${label} (${range}, default ${def.toLocaleString("en-US")})`, input) };
  });
  return {
    elements: fields.map((f) => f.el),
    read() {
      const values = {};
      let ok = true;
      for (const f of fields) {
        const n = Number(f.input.value);
        const bad = f.input.value === "" || !Number.isInteger(n) || n < f.min || n > f.max;
        f.input.setAttribute("aria-invalid", bad ? "true" : "false");
        if (bad) ok = false;
        else values[f.key] = n;
      }
      return { ok, values };
    },
  };
}

/** validateName explains what is wrong with a queue name, or returns "". */
export function validateName(name) {
  if (name.length === 0) return "a name is required";
  if (name.length > 80) return `${name.length} characters; at most 80`;
  const bad = [...name].find((c) => !/[A-Za-z0-9_-]/.test(c));
  if (bad !== undefined) return `"${bad}" is not allowed: use A-Z a-z 0-9 _ -`;
  return "";
}

const STATS = ["ready", "inflight", "delayed", "dlq"];

/** mount renders the page into root and returns its unmount function. */
export function mount(root) {
  const state = {
    queues: null, // [Queue] from the last list, names only needed
    stats: new Map(), // name -> last known stats (kept across refreshes)
    filter: "",
    page: 0,
    updated: null,
    error: null,
    loadingStats: false,
  };
  let alive = true;

  const tbody = h("tbody");
  const info = h("span", { class: "muted small", id: "queues-info" });
  const updated = h("span", { class: "muted small", id: "stats-updated" });
  const errSlot = h("div");
  const pager = h("div", { class: "row pager" });
  const filter = h("input", {
    type: "search", placeholder: "Filter by name", id: "queue-filter", "aria-label": "Filter queues by name",
    oninput: () => { state.filter = filter.value.trim(); state.page = 0; render(); },
  });
  const refreshBtn = h("button", { type: "button", class: "secondary", id: "refresh", onclick: () => refresh(true) }, "Refresh");

  replace(root,
    h("div", { class: "row" }, h("h1", {}, "Queues"), h("span", { class: "spacer" }), updated, refreshBtn),
    createPanel(() => refresh(true)),
    h("div", { class: "panel" },
      h("div", { class: "row" }, filter, info),
      errSlot,
      h("table", { id: "queues" },
        h("thead", {}, h("tr", {},
          h("th", {}, "Name"), h("th", { class: "num" }, "Ready"), h("th", { class: "num" }, "Inflight"),
          h("th", { class: "num" }, "Delayed"), h("th", { class: "num" }, "DLQ"), h("th", { class: "num" }, "Oldest ready"))),
        tbody),
      pager));

  function visible() {
    const all = state.queues || [];
    const f = state.filter.toLowerCase();
    return f ? all.filter((q) => q.name.toLowerCase().includes(f)) : all;
  }

  function render() {
    if (state.error) replace(errSlot, errorBox(state.error));
    else replace(errSlot);
    if (state.queues === null) {
      replace(tbody, h("tr", {}, h("td", { colspan: 6, class: "muted" }, "Loading…")));
      return;
    }
    const list = visible();
    const pages = Math.max(1, Math.ceil(list.length / PAGE_SIZE));
    state.page = Math.min(state.page, pages - 1);
    const start = state.page * PAGE_SIZE;
    const rows = list.slice(start, start + PAGE_SIZE);
    info.textContent = list.length === 0 ? "" :
      `${start + 1}–${start + rows.length} of ${list.length}` + (list.length !== state.queues.length ? ` (${state.queues.length} in all)` : "");
    if (rows.length === 0) {
      replace(tbody, h("tr", {}, h("td", { colspan: 6, class: "muted" },
        state.queues.length === 0 ? "No queues yet: create one above." : "No queue matches the filter.")));
    } else {
      replace(tbody, rows.map(row));
    }
    replace(pager,
      h("button", { type: "button", class: "secondary", id: "prev-page", disabled: state.page === 0,
        onclick: () => { state.page--; render(); } }, "‹ Previous"),
      h("span", { class: "muted small", id: "page-info" }, `Page ${state.page + 1} of ${pages}`),
      h("button", { type: "button", class: "secondary", id: "next-page", disabled: state.page >= pages - 1,
        onclick: () => { state.page++; render(); } }, "Next ›"));
    updated.textContent = state.updated ? `Counts as of ${state.updated.toLocaleTimeString()}` + (state.loadingStats ? " · refreshing…" : "") : (state.loadingStats ? "Loading counts…" : "");
  }

  function row(q) {
    const s = state.stats.get(q.name);
    const cls = state.loadingStats && s ? "num stale" : "num";
    return h("tr", { "data-queue": q.name },
      h("td", {}, h("a", { href: "#/queues/" + encodeURIComponent(q.name) }, q.name)),
      STATS.map((k) => h("td", { class: cls, "data-stat": k }, num(s && s[k]))),
      h("td", { class: cls, "data-stat": "oldest_ready_age_seconds" }, s ? (s.ready ? age(s.oldest_ready_age_seconds) : "–") : "…"));
  }

  // refresh lists the names (when names is true or none are known yet),
  // renders them at once with the counts known so far, then asks for live
  // counts and fills them in.
  async function refresh(names) {
    state.error = null;
    try {
      if (names || state.queues === null) {
        const r = await api.listQueues(false);
        if (!alive) return;
        state.queues = r.queues.slice().sort((a, b) => a.name.localeCompare(b.name));
      }
      state.loadingStats = true;
      render();
      const live = await api.listQueues(true);
      if (!alive) return;
      state.queues = live.queues.slice().sort((a, b) => a.name.localeCompare(b.name));
      for (const q of live.queues) if (q.stats) state.stats.set(q.name, q.stats);
      state.updated = new Date();
    } catch (e) {
      if (!alive) return;
      state.error = e;
    }
    state.loadingStats = false;
    render();
  }

  render();
  refresh(true);
  const timer = setInterval(() => refresh(false), REFRESH_MS);
  return () => { alive = false; clearInterval(timer); };
}

// createPanel is the "New queue" form: the name is checked as it is typed,
// settings show their defaults.
function createPanel(onCreated) {
  const name = h("input", { id: "new-queue-name", name: "name", autocomplete: "off", maxlength: 200, placeholder: "orders", "aria-describedby": "new-queue-hint" });
  const hint = h("div", { class: "hint", id: "new-queue-hint" }, "1–80 of A-Z a-z 0-9 _ -");
  const errSlot = h("div");
  const settings = settingFields("new-queue-", null, () => check());
  const submit = h("button", { type: "submit", id: "create-queue", disabled: true }, "Create queue");

  function check() {
    const v = name.value;
    const msg = v === "" ? "" : validateName(v);
    name.setAttribute("aria-invalid", msg ? "true" : "false");
    hint.textContent = v === "" ? "1–80 of A-Z a-z 0-9 _ -" : msg || "✓ valid name";
    hint.className = "hint" + (msg ? " error" : v ? " ok" : "");
    const r = settings.read();
    submit.disabled = !(v !== "" && !msg && r.ok);
    return r.values;
  }
  name.addEventListener("input", check);

  const form = h("form", {
    class: "panel", id: "create-queue-form",
    onsubmit: async (ev) => {
      ev.preventDefault();
      const values = check();
      if (submit.disabled) return;
      const body = { name: name.value, ...values };
      submit.disabled = true;
      replace(errSlot);
      try {
        await api.createQueue(body);
        toast(`Queue ${body.name} created`);
        name.value = "";
        check();
        onCreated();
      } catch (e) {
        replace(errSlot, errorBox(e));
        submit.disabled = false;
      }
    },
  },
  h("details", {},
    h("summary", {}, h("b", {}, "New queue")),
    h("div", { class: "row", style: null }, h("label", {}, "Name", name), hint),
    h("div", { class: "grid" }, settings.elements),
    errSlot,
    h("div", { class: "row end" }, submit)));
  return form;
}
