// The topics page: each topic with the queues subscribed to it (and their
// filters on headers), and a form to publish to a topic. Creating topics
// and subscribing queues is left to the CLI, the API and sluice.yaml.

import { api } from "./api.js";
import { h, replace, titleRow, time, errorBox } from "./dom.js";

function filterText(f) {
  const keys = Object.keys(f || {}).sort();
  if (keys.length === 0) return h("span", { class: "muted" }, "every message");
  return keys.map((k) => h("div", { class: "mono small" }, `${k} = ${f[k]}`));
}

/** mount renders the topics page into root. */
export function mount(root) {
  let alive = true;
  const list = h("div", { id: "topics" }, h("p", { class: "muted" }, "Loading…"));
  const topic = h("select", { id: "publish-topic" });
  const editor = h("textarea", { id: "publish-body", spellcheck: "false" }, '{"hello": "world"}');
  const headers = h("input", { id: "publish-headers", class: "mono", placeholder: '{"type": "order"}', autocomplete: "off" });
  const publish = h("button", { type: "submit", id: "publish" }, "Publish");
  const result = h("div", { class: "hint", id: "publish-result" });
  replace(root,
    h("div", { class: "row" }, h("h1", {}, "Topics")),
    h("div", { class: "panel" },
      titleRow("Subscriptions", h("button", { type: "button", class: "secondary", id: "topics-refresh", onclick: () => load() }, "Refresh")),
      list,
      h("p", { class: "muted small" }, "Create topics and subscribe queues with `sluice topics`, the API or sluice.yaml (topics: {orders: {subscribers: [billing]}}).")),
    h("form", {
      class: "panel", id: "publish-form",
      onsubmit: async (ev) => {
        ev.preventDefault();
        let body, hdrs;
        try {
          body = JSON.parse(editor.value);
          hdrs = headers.value.trim() ? JSON.parse(headers.value) : undefined;
        } catch (e) {
          result.textContent = "not valid JSON: " + e.message;
          result.className = "hint error";
          return;
        }
        if (hdrs !== undefined && (typeof hdrs !== "object" || hdrs === null || Array.isArray(hdrs))) {
          result.textContent = "headers must be a JSON object";
          result.className = "hint error";
          return;
        }
        publish.disabled = true;
        try {
          // The raw text goes as the body, so the user's numbers keep their precision.
          const raw = `{"entries":[{"body":${editor.value}${hdrs ? `,"headers":${headers.value}` : ""}}]}`;
          const r = await api.publishEntries(topic.value, raw);
          const n = r.copies[0];
          result.textContent = `Published to ${topic.value}: ${n} cop${n === 1 ? "y" : "ies"}`;
          result.className = "hint ok";
        } catch (e) {
          result.textContent = `${e.message} (${e.code})`;
          result.className = "hint error";
        } finally {
          publish.disabled = false;
        }
      },
    },
    h("h2", {}, "Publish"),
    h("p", { class: "muted small" }, "One message (any JSON value) copied into every subscribed queue whose filter its headers match."),
    h("label", {}, "Topic", topic),
    h("label", {}, "Body", editor),
    h("label", {}, "Headers (JSON object, optional)", headers),
    h("div", { class: "row" }, h("span", { class: "spacer" }), publish),
    result));

  async function load() {
    try {
      const r = await api.listTopics();
      if (!alive) return;
      const ts = r.topics;
      const chosen = topic.value;
      replace(topic, ts.map((t) => h("option", { value: t.name, selected: t.name === chosen }, t.name)));
      publish.disabled = ts.length === 0;
      replace(list, ts.length === 0 ? h("p", { class: "muted" }, "No topics yet.") :
        h("table", {},
          h("thead", {}, h("tr", {}, h("th", {}, "Topic"), h("th", {}, "Queue"), h("th", {}, "Filter"), h("th", {}, "Source"), h("th", {}, "Created"))),
          h("tbody", {}, ts.flatMap((t) => (t.subscriptions.length ? t.subscriptions : [null]).map((s) =>
            h("tr", { "data-topic": t.name, "data-queue": s ? s.queue : null },
              h("td", {}, t.name),
              h("td", {}, s ? h("a", { href: "#/queues/" + encodeURIComponent(s.queue) }, s.queue) : h("span", { class: "muted" }, "no subscribers")),
              h("td", {}, s ? filterText(s.filter) : null),
              h("td", { class: "small" }, s ? s.source : null),
              h("td", { class: "small" }, time(t.created_at))))))));
    } catch (e) {
      if (alive) replace(list, errorBox(e));
    }
  }

  load();
  return () => { alive = false; };
}
