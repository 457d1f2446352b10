// One queue: counts and settings, and the Messages and DLQ tabs.

import { api, session } from "./api.js";
import { h, replace, toast, confirmAction, num, age, time, json, errorBox } from "./dom.js";
import { settingFields } from "./queues.js";

const TABS = [["messages", "Messages"], ["dlq", "DLQ"], ["settings", "Settings"], ["api", "API"]];
const TAB_VIEWS = { messages: messagesTab, dlq: dlqTab, settings: settingsTab, api: apiTab };

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

/** mount renders queue name's page with tab into root; returns unmount. */
export function mount(root, name, tab) {
  if (!TABS.some(([t]) => t === tab)) tab = "messages";
  let alive = true;
  const header = h("div", { class: "panel", id: "queue-header" }, h("span", { class: "muted" }, "Loading…"));
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
          [["ready", "Ready"], ["inflight", "Inflight"], ["delayed", "Delayed"], ["dlq", "DLQ"]].map(([k, label]) =>
            h("div", { "data-stat": k }, h("span", { class: "muted small" }, label), h("b", {}, num(s[k])))),
          h("div", { "data-stat": "oldest_ready_age_seconds" }, h("span", { class: "muted small" }, "Oldest ready"),
            h("b", {}, s.ready ? age(s.oldest_ready_age_seconds) : "–"))),
        h("p", { class: "muted small" },
          `visibility timeout ${q.visibility_timeout_seconds}s · max receive count ${q.max_receive_count} · ` +
          `delay ${q.delay_seconds}s · retention ${age(q.retention_seconds)} · max message ${num(q.max_message_bytes)} bytes · ` +
          `dedup window ${q.dedup_window_seconds}s · created ${time(q.created_at)}`));
    } catch (e) {
      if (alive) replace(header, errorBox(e));
    }
  }

  loadHeader();
  const unmountTab = TAB_VIEWS[tab](body, name, loadHeader, () => alive);
  const timer = setInterval(loadHeader, 30000);
  return () => { alive = false; clearInterval(timer); unmountTab && unmountTab(); };
}

function messagesTab(root, name, changed, alive) {
  const editor = h("textarea", { id: "message-body", spellcheck: "false", "aria-describedby": "message-hint" },
    '{\n  "hello": "world"\n}');
  const hint = h("div", { class: "hint", id: "message-hint" });
  const delay = h("input", { type: "number", id: "message-delay", min: 0, max: 43200, step: 1, value: 0 });
  const send = h("button", { type: "submit", id: "send-message" }, "Send");
  const sendResult = h("div", { class: "hint", id: "send-result" });
  const max = h("select", { id: "peek-max" }, [10, 50, 100].map((n) => h("option", { value: n }, n)));
  const list = h("div", { id: "messages" });

  function check() {
    const r = checkMessage(editor.value);
    const d = Number(delay.value);
    const delayOK = delay.value !== "" && Number.isInteger(d) && d >= 0 && d <= 43200;
    editor.setAttribute("aria-invalid", r.ok ? "false" : "true");
    delay.setAttribute("aria-invalid", delayOK ? "false" : "true");
    hint.textContent = r.ok ? (delayOK ? r.message : "delay: a whole number of seconds, 0–43200") : r.message;
    hint.className = "hint " + (r.ok && delayOK ? "ok" : "error");
    send.disabled = !(r.ok && delayOK);
    return r;
  }
  editor.addEventListener("input", check);
  delay.addEventListener("input", check);

  async function peek() {
    try {
      const r = await api.peek(name, max.value);
      if (!alive()) return;
      replace(list, messageTable(r.messages));
    } catch (e) {
      if (alive()) replace(list, errorBox(e));
    }
  }

  function messageTable(msgs) {
    if (msgs.length === 0) return h("p", { class: "muted" }, "No messages to peek.");
    return h("table", {},
      h("thead", {}, h("tr", {}, ["Sequence", "Created", "Receives", "Visible at", "Body", "Headers", ""].map((t) => h("th", {}, t)))),
      h("tbody", {}, msgs.map((m) => h("tr", { "data-sequence": m.sequence },
        h("td", { class: "num" }, m.sequence),
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
        const res = await api.send(name, editor.value, Number(delay.value));
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
  h("div", { class: "row" }, h("label", {}, "Delay (seconds)", delay), h("span", { class: "spacer" }), send),
  sendResult);

  replace(root, form,
    h("div", { class: "panel" },
      h("div", { class: "row" }, h("h2", {}, "Messages"), h("span", { class: "spacer" }),
        h("label", {}, "Peek at most", max),
        h("button", { type: "button", class: "secondary", id: "peek", onclick: () => { peek(); changed(); } }, "Peek"),
        h("button", { type: "button", class: "danger", id: "purge", onclick: async () => {
          if (!(await confirmAction(`Purge every message of queue ${name}? This cannot be undone.`, "Purge"))) return;
          try {
            const r = await api.purge(name);
            toast(`Purged ${num(r.purged)} message${r.purged === 1 ? "" : "s"}`);
          } catch (e) {
            toast(e.message, true);
          }
          peek(); changed();
        } }, "Purge…")),
      h("p", { class: "muted small" }, "Peek reads the next messages without claiming them."),
      list));
  check();
  peek();
}

function dlqTab(root, name, changed, alive) {
  const max = h("select", { id: "dlq-max" }, [10, 50, 100].map((n) => h("option", { value: n, selected: n === 100 }, n)));
  const list = h("div", { id: "dead-letters" });

  async function load() {
    try {
      const r = await api.dlq(name, max.value);
      if (!alive()) return;
      replace(list, deadTable(r.messages),
        r.messages.length === Number(max.value) ? h("p", { class: "muted small", id: "dlq-more" },
          `Showing the oldest ${r.messages.length}; the DLQ count above says how many there are. Delete, purge or redrive to see the rest.`) : null);
    } catch (e) {
      if (alive()) replace(list, errorBox(e));
    }
  }

  function deadTable(msgs) {
    if (msgs.length === 0) return h("p", { class: "muted" }, "The dead-letter queue is empty.");
    return h("table", {},
      h("thead", {}, h("tr", {}, ["Sequence", "Failed at", "Reason", "Last error", "Receives", "Body", ""].map((t) => h("th", {}, t)))),
      h("tbody", {}, msgs.map((m) => h("tr", { "data-sequence": m.sequence },
        h("td", { class: "num" }, m.sequence),
        h("td", { class: "small" }, time(m.failed_at)),
        h("td", {}, m.reason),
        h("td", {}, m.last_error ? h("pre", {}, m.last_error) : h("span", { class: "muted" }, "–")),
        h("td", { class: "num" }, m.receive_count),
        h("td", {}, h("pre", {}, json(m.body))),
        h("td", {}, h("button", { type: "button", class: "link", onclick: async () => {
          try {
            await api.deleteDead(name, m.sequence);
            toast(`Dead letter ${m.sequence} deleted`);
          } catch (e) {
            toast(e.message, true);
          }
          load(); changed();
        } }, "Delete"))))));
  }

  async function act(question, label, fn, done) {
    if (!(await confirmAction(question, label))) return;
    try {
      toast(done(await fn(name)));
    } catch (e) {
      toast(e.message, true);
    }
    load(); changed();
  }

  replace(root, h("div", { class: "panel" },
    h("div", { class: "row" }, h("h2", {}, "Dead letters"), h("span", { class: "spacer" }),
      h("label", {}, "Show at most", max),
      h("button", { type: "button", class: "secondary", id: "dlq-refresh", onclick: () => { load(); changed(); } }, "Refresh"),
      h("button", { type: "button", id: "redrive", onclick: () => act(`Move every dead letter of ${name} back to the queue (receive counts reset)?`, "Redrive all",
        api.redrive, (r) => `Redrove ${num(r.redriven)} message${r.redriven === 1 ? "" : "s"}`) }, "Redrive all…"),
      h("button", { type: "button", class: "danger", id: "purge-dlq", onclick: () => act(`Purge every dead letter of ${name}? This cannot be undone.`, "Purge DLQ",
        api.purgeDLQ, (r) => `Purged ${num(r.purged)} dead letter${r.purged === 1 ? "" : "s"}`) }, "Purge DLQ…")),
    list));
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
      h("div", { class: "row" }, h("h2", {}, title), h("span", { class: "spacer" }),
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
