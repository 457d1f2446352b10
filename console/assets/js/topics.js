// The topics page: each topic with the queues subscribed to it (and their
// filters on headers), forms to create a topic and subscribe a queue, an
// unsubscribe and a delete per row, and a form to publish to a topic.

import { api } from "./api.js";
import { h, replace, titleRow, time, errorBox, toast, confirmAction } from "./dom.js";

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
  const newTopic = h("input", { id: "new-topic", class: "mono", placeholder: "orders", autocomplete: "off" });
  const subTopic = h("select", { id: "subscribe-topic" });
  const subQueue = h("input", { id: "subscribe-queue", class: "mono", placeholder: "billing", autocomplete: "off" });
  const subFilter = h("input", { id: "subscribe-filter", class: "mono", placeholder: '{"type": "order"} (optional)', autocomplete: "off" });
  const manageResult = h("div", { class: "hint", id: "manage-result" });
  // run does one management call, reports it and reloads the list.
  async function run(what, call) {
    try {
      await call();
      manageResult.textContent = what;
      manageResult.className = "hint ok";
      toast(what);
      await load();
    } catch (e) {
      manageResult.textContent = `${e.message} (${e.code})`;
      manageResult.className = "hint error";
    }
  }
  replace(root,
    h("div", { class: "row" }, h("h1", {}, "Topics")),
    h("div", { class: "panel" },
      titleRow("Subscriptions", h("button", { type: "button", class: "secondary", id: "topics-refresh", onclick: () => load() }, "Refresh")),
      list,
      h("p", { class: "muted small" }, "Also with `sluice topics`, the API or sluice.yaml (topics: {orders: {subscribers: [billing]}}).")),
    h("div", { class: "panel" },
      h("h2", {}, "Manage"),
      h("form", { id: "create-topic-form", class: "row",
        onsubmit: (ev) => { ev.preventDefault(); const name = newTopic.value.trim(); run(`Created topic ${name}`, () => api.createTopic(name)); } },
        h("label", {}, "New topic", newTopic), h("span", { class: "spacer" }), h("button", { type: "submit", id: "create-topic" }, "Create")),
      h("form", { id: "subscribe-form", class: "row",
        onsubmit: (ev) => {
          ev.preventDefault();
          let filter;
          try {
            filter = subFilter.value.trim() ? JSON.parse(subFilter.value) : undefined;
          } catch (e) {
            manageResult.textContent = "filter: not valid JSON: " + e.message;
            manageResult.className = "hint error";
            return;
          }
          const q = subQueue.value.trim();
          run(`Subscribed ${q} to ${subTopic.value}`, () => api.subscribe(subTopic.value, q, filter));
        } },
        h("label", {}, "Topic", subTopic), h("label", {}, "Queue", subQueue), h("label", {}, "Filter on headers", subFilter),
        h("span", { class: "spacer" }), h("button", { type: "submit", id: "subscribe" }, "Subscribe")),
      manageResult),
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
      const subChosen = subTopic.value;
      replace(subTopic, ts.map((t) => h("option", { value: t.name, selected: t.name === subChosen }, t.name)));
      publish.disabled = ts.length === 0;
      replace(list, ts.length === 0 ? h("p", { class: "muted" }, "No topics yet.") :
        h("table", {},
          h("thead", {}, h("tr", {}, h("th", {}, "Topic"), h("th", {}, "Queue"), h("th", {}, "Filter"), h("th", {}, "Source"), h("th", {}, "Created"), h("th", {}, ""))),
          h("tbody", {}, ts.flatMap((t) => (t.subscriptions.length ? t.subscriptions : [null]).map((s) =>
            h("tr", { "data-topic": t.name, "data-queue": s ? s.queue : null },
              h("td", {}, t.name),
              h("td", {}, s ? h("a", { href: "#/queues/" + encodeURIComponent(s.queue) }, s.queue) : h("span", { class: "muted" }, "no subscribers")),
              h("td", {}, s ? filterText(s.filter) : null),
              h("td", { class: "small" }, s ? s.source : null),
              h("td", { class: "small" }, time(t.created_at)),
              h("td", {},
                s ? h("button", { type: "button", class: "secondary small unsubscribe",
                  onclick: () => run(`Unsubscribed ${s.queue} from ${t.name}`, () => api.unsubscribe(t.name, s.queue)) }, "Unsubscribe") : null,
                h("button", { type: "button", class: "danger small delete-topic",
                  onclick: async () => {
                    if (await confirmAction(`Delete topic ${t.name}? Its subscriptions go with it; queued messages stay.`, "Delete topic")) {
                      run(`Deleted topic ${t.name}`, () => api.deleteTopic(t.name));
                    }
                  } }, "Delete topic"))))))));
    } catch (e) {
      if (alive) replace(list, errorBox(e));
    }
  }

  load();
  return () => { alive = false; };
}
