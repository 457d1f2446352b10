// The functions page (name, latest version, aliases) and one function:
// versions with limits and masked env, aliases with rollback, pointing an
// alias at a version, and recent invocations with their logs.

import { api, followLogs } from "./api.js";
import { h, replace, confirmed, titleRow, num, time, errorBox } from "./dom.js";
import { invocationTable } from "./invocations.js";

function aliasList(aliases) {
  const names = Object.keys(aliases || {}).sort();
  if (names.length === 0) return h("span", { class: "muted" }, "–");
  return names.map((a) => h("span", { class: "badge", "data-alias": a }, `${a} → v${aliases[a]}`));
}

/** mount renders the functions list into root. */
export function mount(root) {
  let alive = true;
  const list = h("div", { id: "functions" }, h("p", { class: "muted" }, "Loading…"));
  replace(root, h("div", { class: "row" }, h("h1", {}, "Functions")), h("div", { class: "panel" }, list));
  api.listFunctions().then((r) => {
    if (!alive) return;
    const fs = r.functions.slice().sort((a, b) => a.name.localeCompare(b.name));
    replace(list, fs.length === 0 ? h("p", { class: "muted" }, "No functions yet: deploy one with `sluice deploy` or `sluice functions deploy`.") :
      h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", { class: "num" }, "Latest version"), h("th", {}, "Aliases"), h("th", {}, "Created"))),
        h("tbody", {}, fs.map((f) => h("tr", { "data-function": f.name },
          h("td", {}, h("a", { href: "#/functions/" + encodeURIComponent(f.name) }, f.name)),
          h("td", { class: "num" }, "v" + f.latest_version),
          h("td", {}, aliasList(f.aliases)),
          h("td", { class: "small" }, time(f.created_at)))))));
  }, (e) => {
    if (alive) replace(list, errorBox(e));
  });
  return () => { alive = false; };
}

/** mountOne renders function name's page into root. */
export function mountOne(root, name) {
  let alive = true;
  const detail = h("div", { id: "function-detail" }, h("p", { class: "muted" }, "Loading…"));
  const invs = h("div", { id: "function-invocations" }, h("p", { class: "muted" }, "Loading…"));
  const tail = h("pre", { id: "function-tail", class: "stderr tail" });
  const tailState = h("span", { id: "function-tail-state", class: "muted small" }, "connecting…");
  const stop = new AbortController();
  replace(root,
    h("div", { class: "row" }, h("a", { href: "#/functions" }, "← Functions")),
    h("h1", { id: "function-name" }, name),
    detail,
    h("div", { class: "panel" },
      titleRow("Live tail", tailState),
      h("p", { class: "muted small" }, "Function logs and outcomes as any server records them, newest last. Each line: start time, trigger, invocation id."),
      tail),
    h("div", { class: "panel" },
      titleRow("Recent invocations",
        h("a", { href: "#/invocations?function=" + encodeURIComponent(name) }, "All invocations of " + name + " →"),
        h("button", { type: "button", class: "secondary", id: "function-refresh", onclick: () => { load(); loadInvocations(); } }, "Refresh")),
      invs));

  async function load() {
    try {
      const f = await api.getFunction(name);
      if (alive) render(f);
    } catch (e) {
      if (alive) replace(detail, errorBox(e));
    }
  }

  async function loadInvocations() {
    try {
      const r = await api.invocations({ function: name, limit: 20 });
      if (alive) replace(invs, invocationTable(r.invocations, { logs: true, trigger: true, empty: "No invocations yet." }));
    } catch (e) {
      if (alive) replace(invs, errorBox(e));
    }
  }

  async function act(question, label, fn, done) {
    if (await confirmed(question, label, fn, done)) load();
  }

  // rollbackButton names where a rollback of alias a goes (the version it
  // pointed at before its last move), or is disabled when it never moved.
  function rollbackButton(f, a) {
    const to = (f.rollback_to || {})[a];
    if (to === undefined) {
      return h("button", { type: "button", class: "secondary", "data-rollback": a, disabled: true,
        title: `${a} has pointed only at v${f.aliases[a]}: nothing to roll back to` }, "Rollback…");
    }
    return h("button", { type: "button", class: "secondary", "data-rollback": a, "data-to": to,
      onclick: () => act(`Roll alias ${a} of ${name} back from v${f.aliases[a]} to v${to}, where it pointed before its last move?`, "Roll back",
        () => api.rollback(name, a), (r) => `${a} rolled back to v${r.version}`) }, `Rollback to v${to}…`);
  }

  function render(f) {
    const aliases = Object.keys(f.aliases).sort();
    const byVersion = {};
    for (const a of aliases) (byVersion[f.aliases[a]] ||= []).push(a);
    const versions = (f.versions || []).slice().sort((a, b) => b.version - a.version);
    replace(detail,
      h("div", { class: "panel" },
        h("h2", {}, "Aliases"),
        aliases.length === 0 ? h("p", { class: "muted" }, "No aliases: triggers call a function through an alias (live by default).") :
          h("table", { id: "aliases" },
            h("thead", {}, h("tr", {}, h("th", {}, "Alias"), h("th", {}, "Points at"), h("th", {}, ""))),
            h("tbody", {}, aliases.map((a) => h("tr", { "data-alias": a },
              h("td", {}, a),
              h("td", { "data-version": f.aliases[a] }, "v" + f.aliases[a]),
              h("td", {}, rollbackButton(f, a)))))),
        h("p", { class: "muted small" }, `Latest version v${f.latest_version} · created ${time(f.created_at)}`)),
      h("div", { class: "panel" },
        h("h2", {}, "Versions"),
        h("table", { id: "versions" },
          h("thead", {}, h("tr", {}, ["Version", "SHA-256", "Size", "Memory", "Timeout", "Env", "Created", "Aliases", ""].map((c) =>
            h("th", { class: ["Version", "Size", "Memory", "Timeout"].includes(c) ? "num" : null }, c)))),
          h("tbody", {}, versions.map((v) => h("tr", { "data-version": v.version },
            h("td", { class: "num" }, "v" + v.version),
            h("td", { class: "mono small", title: v.sha256 }, v.sha256.slice(0, 12)),
            h("td", { class: "num" }, num(v.size_bytes) + " B"),
            h("td", { class: "num" }, v.memory_mb + " MiB"),
            h("td", { class: "num" }, num(v.timeout_ms) + " ms"),
            h("td", { class: "mono small" }, envList(v.env)),
            h("td", { class: "small" }, time(v.created_at)),
            h("td", {}, (byVersion[v.version] || []).map((a) => h("span", { class: "badge" }, a))),
            h("td", {}, aliases.filter((a) => f.aliases[a] !== v.version).map((a) =>
              h("button", { type: "button", class: "secondary small", "data-point": a,
                onclick: () => act(`Point alias ${a} of ${name} at v${v.version} (now v${f.aliases[a]})?`, `Point ${a} here`,
                  () => api.setAlias(name, a, v.version), () => `${a} now points at v${v.version}`) }, `Point ${a} here…`)))))))));
  }

  // The live tail: lines of each new invocation (its stderr, then its
  // outcome), the last TAIL_LINES kept.
  const TAIL_LINES = 500;
  followLogs({ function: name }, (v) => {
    if (!alive) return;
    const prefix = `${v.started_at} ${v.trigger} #${v.id} `;
    const lines = (v.stderr || "").split("\n").filter((l) => l !== "").map((l) => prefix + l);
    lines.push(prefix + v.outcome + (v.failure_kind ? ` (${v.failure_kind})` : "") +
      ` batch=${v.batch_size} acked=${v.acked} retried=${v.retried} dead=${v.dead} ${v.duration_ms.toFixed(1)} ms` +
      (v.error ? " error: " + v.error : ""));
    for (const l of lines) {
      tail.appendChild(h("div", { "data-invocation": v.id, class: v.outcome === "success" ? null : "tail-failed" }, l));
    }
    while (tail.childElementCount > TAIL_LINES) tail.firstElementChild.remove();
    tail.scrollTop = tail.scrollHeight;
  }, (state) => {
    if (!alive) return;
    tailState.textContent = typeof state === "string" ? state : "stopped: " + state.message;
    tailState.dataset.state = typeof state === "string" ? state : "error";
  }, stop.signal);

  load();
  loadInvocations();
  return () => { alive = false; stop.abort(); };
}

// envList shows env names with their values as the API gives them
// (masked).
function envList(env) {
  const keys = Object.keys(env || {}).sort();
  if (keys.length === 0) return h("span", { class: "muted" }, "–");
  return keys.map((k) => h("div", {}, `${k}=${env[k]}`));
}
