// Access to the Sluice HTTP API (docs/http-api.md). The session (account
// and access key) lives in sessionStorage only: never in a URL or cookie.

const KEY = "sluice.console.session";

/** The signed-in session {account, key}, or null. */
export function session() {
  try {
    const s = JSON.parse(sessionStorage.getItem(KEY));
    return s && s.account && s.key ? s : null;
  } catch {
    return null;
  }
}

export function saveSession(account, key) {
  sessionStorage.setItem(KEY, JSON.stringify({ account, key }));
}

export function clearSession() {
  sessionStorage.removeItem(KEY);
}

/** An error answered by the API (or a network failure, status 0). */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

const enc = encodeURIComponent;

/**
 * call sends one request with the session's key. opts.body is a value sent
 * as JSON; opts.raw is JSON text sent as is (so that the user's numbers keep
 * their precision); opts.query adds query parameters (empty ones left out).
 */
export async function call(method, path, opts = {}, sess = session()) {
  if (!sess) throw new ApiError(401, "unauthorized", "not signed in");
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(opts.query || {})) {
    if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
  }
  const init = {
    method,
    headers: { Authorization: "Bearer " + sess.key, Accept: "application/json" },
    cache: "no-store",
    credentials: "omit",
  };
  if (opts.raw !== undefined || opts.body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = opts.raw !== undefined ? opts.raw : JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(url, init);
  } catch (e) {
    throw new ApiError(0, "network", "the server could not be reached: " + e.message);
  }
  if (res.status === 204) return null;
  const text = await res.text();
  let data = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      if (res.ok) throw new ApiError(res.status, "invalid_response", "the server answered something that is not JSON");
    }
  }
  if (!res.ok) {
    const e = (data && data.error) || {};
    if (res.status === 401 && session()?.key === sess.key) {
      // The signed-in key stopped working (revoked): the app signs out.
      window.dispatchEvent(new CustomEvent("sluice:unauthorized", { detail: e.message || "the key was refused" }));
    }
    throw new ApiError(res.status, e.code || "http_" + res.status, e.message || res.statusText || "HTTP " + res.status);
  }
  return data;
}

/**
 * followLogs streams GET .../logs (Server-Sent Events, read with fetch so
 * the key goes in a header) and calls onEntry with each invocation, with
 * its log position as seq. filters: function, trigger, outcome, since.
 * It reconnects after a dropped connection, resuming after the last entry,
 * until signal aborts; onState gets "live", "reconnecting" or an ApiError.
 */
export async function followLogs(filters, onEntry, onState, signal, sess = session()) {
  let after = "";
  while (!signal.aborted) {
    const url = new URL(`${mgmt(sess)}/logs`, location.origin);
    for (const [k, v] of Object.entries({ ...filters, follow: "true", after })) {
      if (v !== undefined && v !== null && v !== "") url.searchParams.set(k, String(v));
    }
    try {
      const res = await fetch(url, { headers: { Authorization: "Bearer " + sess.key, Accept: "text/event-stream" },
        cache: "no-store", credentials: "omit", signal });
      if (!res.ok) {
        let e = {};
        try { e = (await res.json()).error || {}; } catch { /* not JSON */ }
        onState(new ApiError(res.status, e.code || "http_" + res.status, e.message || "HTTP " + res.status));
        return;
      }
      onState("live");
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value;
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let event = "", id = "", data = "";
          for (const line of block.split("\n")) {
            if (line.startsWith("event: ")) event = line.slice(7);
            else if (line.startsWith("id: ")) id = line.slice(4);
            else if (line.startsWith("data: ")) data += line.slice(6);
          }
          if (event === "invocation") {
            after = id;
            onEntry({ ...JSON.parse(data), seq: Number(id) });
          }
        }
      }
    } catch (e) {
      if (signal.aborted) return;
    }
    if (signal.aborted) return;
    onState("reconnecting");
    await new Promise((r) => setTimeout(r, 1000));
  }
}

function mgmt(sess) {
  return `/v1/accounts/${enc(sess.account)}`;
}

function queueURL(sess, name) {
  return `/${enc(sess.account)}/${enc(name)}`;
}

// every reads a paged list whole, following its next cursor (a page holds
// at most 1,000 items), and returns {[field]: the items}.
async function every(path, field, query, sess) {
  const items = [];
  let after = "";
  for (;;) {
    const r = await call("GET", path, { query: { ...query, after } }, sess);
    items.push(...(r[field] || []));
    if (!r.next) return { [field]: items };
    after = r.next;
  }
}

/** The API calls the console makes, each bound to the current session. */
export const api = {
  listQueues: (live, sess = session()) =>
    every(`${mgmt(sess)}/queues`, "queues", live ? { live: "true" } : {}, sess),
  createQueue: (q) => call("POST", `${mgmt(session())}/queues`, { body: q }),
  getQueue: (name) => call("GET", `${mgmt(session())}/queues/${enc(name)}`),
  updateQueue: (name, settings) => call("PATCH", `${mgmt(session())}/queues/${enc(name)}`, { body: settings }),
  send: (name, rawJSON, delaySeconds, ttlSeconds, dedupKey, group) =>
    call("POST", `${queueURL(session(), name)}/messages`, { raw: rawJSON,
      query: { delay_seconds: delaySeconds || "", expires_in_seconds: ttlSeconds || "", dedup_key: dedupKey || "", group: group || "" } }),
  sendEntries: (name, rawJSON) => call("POST", `${queueURL(session(), name)}/messages/entries`, { raw: rawJSON }),
  peek: (name, max, after) => call("GET", `${queueURL(session(), name)}/messages`, { query: { max_messages: max, after: after || "" } }),
  deleteMessage: (name, seq) => call("DELETE", `${queueURL(session(), name)}/messages/${enc(seq)}`),
  purge: (name) => call("DELETE", `${queueURL(session(), name)}/messages`),
  dlq: (name, max, after) => call("GET", `${queueURL(session(), name)}/dlq`, { query: { max_messages: max, after: after || "" } }),
  deleteDead: (name, seq) => call("DELETE", `${queueURL(session(), name)}/dlq/${enc(seq)}`),
  purgeDLQ: (name) => call("DELETE", `${queueURL(session(), name)}/dlq`),
  redrive: (name) => call("POST", `${queueURL(session(), name)}/dlq/redrive`, { body: {} }),
  redriveSelected: (name, sequences) => call("POST", `${queueURL(session(), name)}/dlq/redrive`, { body: { sequences } }),
  queueStats: (name, minutes) => call("GET", `${mgmt(session())}/queues/${enc(name)}/stats`, { query: { minutes } }),
  listTopics: () => call("GET", `${mgmt(session())}/topics`),
  createTopic: (name) => call("POST", `${mgmt(session())}/topics`, { body: { name } }),
  deleteTopic: (name) => call("DELETE", `${mgmt(session())}/topics/${enc(name)}`),
  /** subscribe puts queue on topic, with filter (an object of header values) or none. */
  subscribe: (topic, queue, filter) =>
    call("PUT", `${mgmt(session())}/topics/${enc(topic)}/subscriptions/${enc(queue)}`, { body: filter ? { filter } : {} }),
  unsubscribe: (topic, queue) => call("DELETE", `${mgmt(session())}/topics/${enc(topic)}/subscriptions/${enc(queue)}`),
  /** publishEntries sends rawJSON, a {"entries": [...]} document, to topic. */
  publishEntries: (topic, rawJSON) =>
    call("POST", `/${enc(session().account)}/topics/${enc(topic)}/messages/entries`, { raw: rawJSON }),
  listTriggers: () => every(`${mgmt(session())}/triggers`, "triggers", {}, session()),
  listFunctions: () => every(`${mgmt(session())}/functions`, "functions", {}, session()),
  getFunction: (name) => call("GET", `${mgmt(session())}/functions/${enc(name)}`),
  setAlias: (name, alias, version) => call("PUT", `${mgmt(session())}/functions/${enc(name)}/aliases/${enc(alias)}`, { body: { version } }),
  rollback: (name, alias) => call("POST", `${mgmt(session())}/functions/${enc(name)}/rollback`, { body: { alias } }),
  /** invocations takes the filters function, outcome, trigger, since, until, before_id, limit. */
  invocations: (filters) => call("GET", `${mgmt(session())}/invocations`, { query: filters }),
  invocation: (id) => call("GET", `${mgmt(session())}/invocations/${enc(id)}`),
};
