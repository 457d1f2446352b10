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

function mgmt(sess) {
  return `/v1/accounts/${enc(sess.account)}`;
}

function queueURL(sess, name) {
  return `/${enc(sess.account)}/${enc(name)}`;
}

/** The API calls the console makes, each bound to the current session. */
export const api = {
  listQueues: (live, sess = session()) =>
    call("GET", `${mgmt(sess)}/queues`, { query: live ? { live: "true" } : {} }, sess),
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
  listTriggers: () => call("GET", `${mgmt(session())}/triggers`),
  listFunctions: () => call("GET", `${mgmt(session())}/functions`),
  getFunction: (name) => call("GET", `${mgmt(session())}/functions/${enc(name)}`),
  setAlias: (name, alias, version) => call("PUT", `${mgmt(session())}/functions/${enc(name)}/aliases/${enc(alias)}`, { body: { version } }),
  rollback: (name, alias) => call("POST", `${mgmt(session())}/functions/${enc(name)}/rollback`, { body: { alias } }),
  /** invocations takes the filters function, outcome, trigger, since, until, before_id, limit. */
  invocations: (filters) => call("GET", `${mgmt(session())}/invocations`, { query: filters }),
  invocation: (id) => call("GET", `${mgmt(session())}/invocations/${enc(id)}`),
};
