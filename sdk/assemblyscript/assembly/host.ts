// Wrappers for the v1.1 host imports of module "sluice": outbound HTTP and
// key-value stores (docs/function-abi.md, section 8). Import this module
// only when a function calls them: a module that does not is a plain v1
// module.
//
//   import { httpRequest, Store, lastErrno, lastError } from "<sdk>/assembly/host";
//
//   const resp = httpRequest("POST", "https://api.example.com/v1/charges",
//                            "{\"Content-Type\":[\"application/json\"]}", "{\"amount\":42}");
//   if (resp == null) log("error", lastError());
//   const counts = Store.open("counts");
//   if (counts != null) counts.increment("hits", 1);
//
// AssemblyScript cannot catch exceptions, so a failed call returns null
// (or its errno) and lastErrno()/lastError() say why. Keys and values are
// strings, sent as UTF-8.

import { Value, parse, quote } from "./index";

// Errnos of the host calls.
export const OK: i32 = 0;
export const DENIED: i32 = 1;
export const INVALID: i32 = 2;
export const LIMIT: i32 = 3;
export const FAILED: i32 = 4;
export const NOT_FOUND: i32 = 5;
export const CONFLICT: i32 = 6;

@external("sluice", "result_read")
declare function result_read(buf: usize, len: u32): i32;
@external("sluice", "http_request")
declare function http_request(req: usize, len: u32, respLen: usize): u32;
@external("sluice", "kv_open")
declare function kv_open(name: usize, len: u32, handle: usize): u32;
@external("sluice", "kv_get")
declare function kv_get(store: i32, key: usize, keyLen: u32, valLen: usize): u32;
@external("sluice", "kv_set")
declare function kv_set(store: i32, key: usize, keyLen: u32, val: usize, valLen: u32, ttlMs: i64): u32;
@external("sluice", "kv_delete")
declare function kv_delete(store: i32, key: usize, keyLen: u32): u32;
@external("sluice", "kv_increment")
declare function kv_increment(store: i32, key: usize, keyLen: u32, delta: i64, value: usize): u32;
@external("sluice", "kv_compare_and_set")
declare function kv_compare_and_set(store: i32, key: usize, keyLen: u32, old: usize, oldLen: u32,
  val: usize, valLen: u32, flags: u32, ttlMs: i64): u32;

let errno: i32 = 0;
let message: string = "";

// lastErrno is the errno of the last host call (OK when it succeeded).
export function lastErrno(): i32 { return errno; }
// lastError is the host's message for the last failed call ("" if none).
export function lastError(): string { return message; }

// result returns the last call's result.
function result(): ArrayBuffer {
  const n = result_read(0, 0);
  const buf = new ArrayBuffer(n > 0 ? n : 0);
  if (n > 0) result_read(changetype<usize>(buf), <u32>n);
  return buf;
}

function done(e: u32): i32 {
  errno = <i32>e;
  message = e == 0 ? "" : String.UTF8.decode(result());
  return errno;
}

const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

function base64(b: Uint8Array): string {
  let s = "";
  for (let i = 0; i < b.length; i += 3) {
    const v: u32 = (<u32>b[i] << 16) | (i + 1 < b.length ? <u32>b[i + 1] << 8 : 0) | (i + 2 < b.length ? <u32>b[i + 2] : 0);
    s += B64.charAt((v >> 18) & 63) + B64.charAt((v >> 12) & 63);
    s += i + 1 < b.length ? B64.charAt((v >> 6) & 63) : "=";
    s += i + 2 < b.length ? B64.charAt(v & 63) : "=";
  }
  return s;
}

function unbase64(s: string): ArrayBuffer {
  const out = new Uint8Array((s.length / 4) * 3);
  let n = 0;
  let acc: u32 = 0;
  let bits = 0;
  for (let i = 0; i < s.length; i++) {
    const v = B64.indexOf(s.charAt(i));
    if (v < 0) continue; // padding
    acc = (acc << 6) | <u32>v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[n++] = <u8>((acc >> bits) & 0xff);
    }
  }
  return out.buffer.slice(0, n);
}

// An HTTP response: status, headers (a JSON object {"Name":["value",...]})
// and body (bytes, and as UTF-8 text).
export class Response {
  status: i32 = 0;
  headers: Value = new Value();
  body: ArrayBuffer = new ArrayBuffer(0);
  text(): string { return String.UTF8.decode(this.body); }
}

// httpRequest performs one request through the host: method ("" for GET),
// url (must match the manifest's allowed_outbound_hosts), headersJSON (""
// or a JSON object {"Name":["value",...]}) and body ("" for none). A
// non-2xx status is a response like any other; null means the call
// failed (see lastErrno, lastError).
export function httpRequest(method: string, url: string, headersJSON: string = "", body: string = ""): Response | null {
  let req = "{\"method\":" + quote(method.length > 0 ? method : "GET") + ",\"url\":" + quote(url);
  if (headersJSON.length > 0) req += ",\"headers\":" + headersJSON;
  if (body.length > 0) req += ",\"body\":\"" + base64(Uint8Array.wrap(String.UTF8.encode(body))) + "\"";
  req += "}";
  const enc = String.UTF8.encode(req);
  const n = new ArrayBuffer(4);
  if (done(http_request(changetype<usize>(enc), <u32>enc.byteLength, changetype<usize>(n))) != OK) return null;
  const doc = result();
  const v = parse(changetype<usize>(doc), <usize>doc.byteLength);
  const r = new Response();
  const st = v.get("status");
  if (st != null && st.isInteger()) r.status = <i32>st.toI64();
  const h = v.get("headers");
  if (h != null) r.headers = h;
  const b = v.get("body");
  if (b != null && b.isString()) r.body = unbase64(b.str);
  return r;
}

// An open key-value store of the function's account; a reactor may keep
// it across batches.
export class Store {
  constructor(public handle: i32) {}

  // open opens store name, which the manifest must list under stores;
  // null when it may not (see lastErrno, lastError).
  static open(name: string): Store | null {
    const enc = String.UTF8.encode(name);
    const h = new ArrayBuffer(4);
    if (done(kv_open(changetype<usize>(enc), <u32>enc.byteLength, changetype<usize>(h))) != OK) return null;
    return new Store(load<i32>(changetype<usize>(h)));
  }

  // get returns the value of key, or null (lastErrno NOT_FOUND when absent).
  get(key: string): string | null {
    const k = String.UTF8.encode(key);
    const n = new ArrayBuffer(4);
    if (done(kv_get(this.handle, changetype<usize>(k), <u32>k.byteLength, changetype<usize>(n))) != OK) return null;
    return String.UTF8.decode(result());
  }

  // set stores value at key, expiring after ttlMs (0: never); returns the errno.
  set(key: string, value: string, ttlMs: i64 = 0): i32 {
    const k = String.UTF8.encode(key);
    const v = String.UTF8.encode(value);
    return done(kv_set(this.handle, changetype<usize>(k), <u32>k.byteLength, changetype<usize>(v), <u32>v.byteLength, ttlMs));
  }

  // delete removes key; returns the errno (NOT_FOUND when absent).
  delete(key: string): i32 {
    const k = String.UTF8.encode(key);
    return done(kv_delete(this.handle, changetype<usize>(k), <u32>k.byteLength));
  }

  // increment adds delta to the decimal integer at key (absent: 0) and
  // returns the new value; check lastErrno() for failure (0 returned).
  increment(key: string, delta: i64): i64 {
    const k = String.UTF8.encode(key);
    const v = new ArrayBuffer(8);
    if (done(kv_increment(this.handle, changetype<usize>(k), <u32>k.byteLength, delta, changetype<usize>(v))) != OK) return 0;
    return load<i64>(changetype<usize>(v));
  }

  // compareAndSet sets key to value only if it holds old (null: only if
  // key is absent); returns the errno (CONFLICT otherwise).
  compareAndSet(key: string, old: string | null, value: string, ttlMs: i64 = 0): i32 {
    const k = String.UTF8.encode(key);
    const v = String.UTF8.encode(value);
    const o = String.UTF8.encode(old != null ? old : "");
    return done(kv_compare_and_set(this.handle, changetype<usize>(k), <u32>k.byteLength, changetype<usize>(o), <u32>o.byteLength,
      changetype<usize>(v), <u32>v.byteLength, old == null ? 1 : 0, ttlMs));
  }
}
