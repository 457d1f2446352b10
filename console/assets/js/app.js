// The console's entry: sign-in, the hash router and the page frame.

import { api, session, saveSession, clearSession, ApiError } from "./api.js";
import { h, replace, errorBox } from "./dom.js";
import * as queues from "./queues.js";
import * as queue from "./queue.js";
import * as functions from "./functions.js";
import * as invocations from "./invocations.js";
import * as topics from "./topics.js";

const main = document.getElementById("main");
const who = document.getElementById("who");
const signout = document.getElementById("signout");
const nav = document.getElementById("nav");
let unmount = null;

signout.addEventListener("click", () => {
  clearSession();
  location.hash = "";
  route();
});

function signIn(reason) {
  who.textContent = "";
  signout.hidden = true;
  nav.hidden = true;
  const account = h("input", { id: "account", name: "account", inputmode: "numeric", autocomplete: "off", placeholder: "000000000001", maxlength: 12, required: true });
  const key = h("input", { id: "key", name: "key", type: "password", autocomplete: "off", placeholder: "sk_…:secret", required: true });
  const errSlot = h("div", {}, reason ? errorBox(reason) : null);
  const submit = h("button", { type: "submit", id: "signin" }, "Sign in");
  replace(main, h("form", {
    class: "panel signin", id: "signin-form",
    onsubmit: async (ev) => {
      ev.preventDefault();
      const a = account.value.trim();
      const k = key.value.trim();
      if (!/^[0-9]{12}$/.test(a)) return replace(errSlot, errorBox(new Error("the account is 12 digits")));
      if (!/^[^:\s]+:\S+$/.test(k)) return replace(errSlot, errorBox(new Error("the access key is ID:SECRET, as `sluice keys create` printed it")));
      submit.disabled = true;
      try {
        await api.listQueues(false, { account: a, key: k }); // checks key and account
        saveSession(a, k);
        route();
      } catch (e) {
        const msg = e.status === 401 ? "this key is not valid (unknown, wrong or revoked)"
          : e.status === 403 ? "this key cannot list the queues of that account (another account, or missing the mq:receive scope)"
          : e.message;
        replace(errSlot, errorBox(new ApiError(e.status, e.code, msg)));
        submit.disabled = false;
      }
    },
  },
  h("h1", {}, "Sign in"),
  h("p", { class: "muted small" }, "The key stays in this browser tab's session storage and is sent only to this server's API."),
  h("label", {}, "Account", account),
  h("label", {}, "Access key (ID:SECRET)", key),
  errSlot,
  h("div", { class: "row end" }, submit)));
  account.focus();
}

function route() {
  if (unmount) unmount();
  unmount = null;
  const s = session();
  if (!s) return signIn();
  who.textContent = `account ${s.account} · key ${s.key.split(":")[0]}`;
  signout.hidden = false;
  nav.hidden = false;
  // #/page/part/part?filters
  const [path, query] = location.hash.replace(/^#\/?/, "").split("?", 2);
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  const params = new URLSearchParams(query || "");
  const section = ["functions", "invocations", "topics"].includes(parts[0]) ? parts[0] : "queues";
  for (const a of nav.querySelectorAll("a")) {
    if (a.dataset.section === section) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (parts[0] === "queues" && parts[1]) {
    unmount = queue.mount(main, parts[1], parts[2] || "overview");
  } else if (parts[0] === "functions") {
    unmount = parts[1] ? functions.mountOne(main, parts[1]) : functions.mount(main);
  } else if (parts[0] === "topics") {
    unmount = topics.mount(main);
  } else if (parts[0] === "invocations") {
    unmount = parts[1] ? invocations.mountOne(main, parts[1]) : invocations.mount(main, params);
  } else {
    unmount = queues.mount(main);
  }
}

// A 401 on any call means the key stopped working (revoked): back to
// sign-in, saying why.
window.addEventListener("sluice:unauthorized", (ev) => {
  if (unmount) unmount();
  unmount = null;
  clearSession();
  signIn(new ApiError(401, "unauthorized", "signed out: the server refused the key (" + ev.detail + ")"));
});
window.addEventListener("hashchange", route);
route();
