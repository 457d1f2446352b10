// Small DOM helpers. Data always goes in as text, never as HTML.

/**
 * h builds an element: h("a", {href: "#/x", class: "y", onclick: fn}, "text", child).
 * Attributes starting with "on" are event listeners; null/false ones are left out.
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "value") el.value = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";

/** svg builds an SVG element the way h builds an HTML one (text only). */
export function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** replace empties el and puts children in. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

let toastTimer;

/** toast shows a short message in the corner. */
export function toast(message, isError = false) {
  const el = document.getElementById("toast");
  el.textContent = message;
  el.className = isError ? "toast error" : "toast";
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (el.hidden = true), isError ? 8000 : 4000);
}

const confirmDialog = document.getElementById("confirm");

// answer resolves the question the confirm dialog shows, or showed until it
// closed; null once resolved.
let answer = null;

// settle resolves that question with the dialog's return value.
function settle() {
  if (!answer) return;
  const resolve = answer;
  answer = null;
  resolve(confirmDialog.returnValue === "ok");
}

// A close event is delivered as a later task: one left over from the
// previous question can arrive after the next one opened, when the dialog
// is open again; that event is not the open question's answer.
confirmDialog.addEventListener("close", () => {
  if (!confirmDialog.open) settle();
});

/** confirmAction asks in a modal dialog; resolves true when confirmed. */
export function confirmAction(text, okLabel = "Confirm") {
  // The previous question closed (a modal dialog is closed before
  // anything outside it is clicked) but its close event may not have
  // arrived: its answer is the return value it closed with, read now,
  // before it is reset for this one.
  settle();
  document.getElementById("confirm-text").textContent = text;
  document.getElementById("confirm-ok").textContent = okLabel;
  return new Promise((resolve) => {
    answer = resolve;
    confirmDialog.returnValue = "cancel";
    confirmDialog.showModal();
  });
}

/**
 * confirmed asks question; once confirmed it runs fn and toasts done(its
 * result), or the error. It resolves false when cancelled.
 */
export async function confirmed(question, okLabel, fn, done) {
  if (!(await confirmAction(question, okLabel))) return false;
  try {
    toast(done(await fn()));
  } catch (e) {
    toast(e.message, true);
  }
  return true;
}

/** titleRow is a panel's heading with controls on the right. */
export function titleRow(title, ...controls) {
  return h("div", { class: "row" }, h("h2", {}, title), h("span", { class: "spacer" }), controls);
}

/** plural formats a count of noun, e.g. "1 message", "1,200 messages". */
export function plural(n, noun) {
  return `${num(n)} ${noun}${n === 1 ? "" : "s"}`;
}

/** num formats a count; undefined shows as "…" (not loaded yet). */
export function num(n) {
  return n === undefined || n === null ? "…" : Number(n).toLocaleString("en-US");
}

/** age formats seconds as "45s", "12m 3s", "5h 2m", "3d 4h". */
export function age(s) {
  if (s === undefined || s === null) return "…";
  s = Math.floor(Number(s));
  if (s < 60) return s + "s";
  if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
  if (s < 86400) return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
  return Math.floor(s / 86400) + "d " + Math.floor((s % 86400) / 3600) + "h";
}

/** time formats an RFC 3339 time for display (UTC, to the millisecond). */
export function time(t) {
  if (!t) return "";
  const d = new Date(t);
  return isNaN(d) ? String(t) : d.toISOString().replace("T", " ").replace("Z", " UTC");
}

/** json shows a value as indented JSON. */
export function json(v) {
  return JSON.stringify(v, null, 2);
}

/** errorBox is an inline error message for an ApiError or Error. */
export function errorBox(e) {
  return h("div", { class: "error-box", role: "alert" }, e.code ? `${e.message} (${e.code})` : e.message);
}
