// Guest SDK for Sluice functions written in AssemblyScript: Function ABI v1
// over WASI preview 1 (docs/function-abi.md), as a reactor module. The
// entry file registers a handler at top level and re-exports the ABI:
//
//   import { Batch, Output, handle, log } from "<sdk>/assembly/index";
//   export { sluice_alloc, sluice_handle } from "<sdk>/assembly/index";
//
//   function triage(b: Batch, out: Output): void {
//     for (let i = 0; i < b.messages.length; i++) {
//       const m = b.messages[i];
//       if (m.body.flag("fail")) out.retry(m.id, 30, "asked to fail");
//     }
//   }
//   handle(triage);
//
// Build with asc, the WASI shim's config and --exportStart _initialize
// (see examples/as-triage). Every message the handler does not fail is
// acked.

// ---- JSON values ----

export enum Kind { Null, Bool, Number, String, Array, Object }

// A JSON value. Objects keep their members in keys/items, in input order.
export class Value {
  kind: Kind = Kind.Null;
  bool: bool = false;
  // A number's JSON text (read it with isInteger/toI64 or toF64).
  number: string = "";
  str: string = "";
  items: Value[] = [];
  keys: string[] = [];

  // get returns member key of an object (the last one when it repeats), or
  // null for other values and missing members.
  get(key: string): Value | null {
    if (this.kind != Kind.Object) return null;
    for (let i = this.keys.length - 1; i >= 0; i--) {
      if (this.keys[i] == key) return this.items[i];
    }
    return null;
  }
  // flag reports whether member key of an object is true.
  flag(key: string): bool {
    const v = this.get(key);
    return v != null && v.kind == Kind.Bool && v.bool;
  }
  isNull(): bool { return this.kind == Kind.Null; }
  isString(): bool { return this.kind == Kind.String; }
  // isInteger reports whether the value is a number without fraction or
  // exponent that fits an i64.
  isInteger(): bool {
    if (this.kind != Kind.Number) return false;
    const s = this.number;
    const neg = s.charCodeAt(0) == 45;
    const digits = s.length - (neg ? 1 : 0);
    if (digits > 18) return false; // keeps i64 arithmetic exact
    for (let i = neg ? 1 : 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 48 || c > 57) return false;
    }
    return true;
  }
  toI64(): i64 {
    const s = this.number;
    const neg = s.charCodeAt(0) == 45;
    let n: i64 = 0;
    for (let i = neg ? 1 : 0; i < s.length; i++) n = n * 10 + <i64>(s.charCodeAt(i) - 48);
    return neg ? -n : n;
  }
  toF64(): f64 { return parseFloat(this.number); }

  // toJSON returns the value as compact JSON.
  toJSON(): string {
    switch (this.kind) {
      case Kind.Null: return "null";
      case Kind.Bool: return this.bool ? "true" : "false";
      case Kind.Number: return this.number;
      case Kind.String: return quote(this.str);
      case Kind.Array: {
        const parts = new Array<string>(this.items.length);
        for (let i = 0; i < this.items.length; i++) parts[i] = this.items[i].toJSON();
        return "[" + parts.join(",") + "]";
      }
      default: {
        const parts = new Array<string>(this.items.length);
        for (let i = 0; i < this.items.length; i++) parts[i] = quote(this.keys[i]) + ":" + this.items[i].toJSON();
        return "{" + parts.join(",") + "}";
      }
    }
  }
}

const HEX = "0123456789abcdef";

// quote returns s as a JSON string.
export function quote(s: string): string {
  let out = "\"";
  let run = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0x20 && c != 34 && c != 92) continue;
    out += s.substring(run, i);
    if (c == 34) out += "\\\"";
    else if (c == 92) out += "\\\\";
    else if (c == 10) out += "\\n";
    else if (c == 13) out += "\\r";
    else if (c == 9) out += "\\t";
    else out += "\\u00" + HEX.charAt(c >> 4) + HEX.charAt(c & 15);
    run = i + 1;
  }
  return out + s.substring(run) + "\"";
}

const MAX_DEPTH = 200;

// Parser reads JSON from linear memory [p, end); a syntax error aborts,
// which ends the instance and fails the batch.
class Parser {
  constructor(public p: usize, public end: usize) {}

  fail(what: string): void {
    throw new Error("sluice sdk: decode batch: " + what);
  }
  ws(): void {
    while (this.p < this.end) {
      const c = load<u8>(this.p);
      if (c != 32 && c != 9 && c != 10 && c != 13) return;
      this.p++;
    }
  }
  peek(): i32 { return this.p < this.end ? <i32>load<u8>(this.p) : -1; }
  eat(c: i32): bool {
    this.ws();
    if (this.peek() != c) return false;
    this.p++;
    return true;
  }
  value(depth: i32): Value {
    if (depth > MAX_DEPTH) this.fail("JSON nested too deeply");
    this.ws();
    const v = new Value();
    const c = this.peek();
    if (c == 123) { // {
      this.p++;
      v.kind = Kind.Object;
      if (this.eat(125)) return v;
      while (true) {
        this.ws();
        v.keys.push(this.string());
        if (!this.eat(58)) this.fail("expected ':'");
        v.items.push(this.value(depth + 1));
        if (this.eat(125)) return v;
        if (!this.eat(44)) this.fail("expected ',' or '}'");
      }
    } else if (c == 91) { // [
      this.p++;
      v.kind = Kind.Array;
      if (this.eat(93)) return v;
      while (true) {
        v.items.push(this.value(depth + 1));
        if (this.eat(93)) return v;
        if (!this.eat(44)) this.fail("expected ',' or ']'");
      }
    } else if (c == 34) {
      v.kind = Kind.String;
      v.str = this.string();
    } else if (c == 116) {
      this.literal("true");
      v.kind = Kind.Bool;
      v.bool = true;
    } else if (c == 102) {
      this.literal("false");
      v.kind = Kind.Bool;
    } else if (c == 110) {
      this.literal("null");
    } else if (c == 45 || c >= 48 && c <= 57) {
      v.kind = Kind.Number;
      v.number = this.num();
    } else {
      this.fail("expected a JSON value");
    }
    return v;
  }
  literal(w: string): void {
    for (let i = 0; i < w.length; i++) {
      if (this.peek() != w.charCodeAt(i)) this.fail("invalid literal");
      this.p++;
    }
  }
  digits(): bool {
    const start = this.p;
    while (this.peek() >= 48 && this.peek() <= 57) this.p++;
    return this.p > start;
  }
  num(): string {
    const start = this.p;
    if (this.peek() == 45) this.p++;
    if (this.peek() == 48) this.p++;
    else if (!this.digits()) this.fail("invalid number");
    if (this.peek() == 46) {
      this.p++;
      if (!this.digits()) this.fail("invalid number");
    }
    if (this.peek() == 101 || this.peek() == 69) {
      this.p++;
      if (this.peek() == 43 || this.peek() == 45) this.p++;
      if (!this.digits()) this.fail("invalid number");
    }
    return String.UTF8.decodeUnsafe(start, this.p - start);
  }
  hex4(): i32 {
    if (this.end - this.p < 4) this.fail("short \\u escape");
    let v = 0;
    for (let i = 0; i < 4; i++) {
      const c = <i32>load<u8>(this.p++);
      let h = -1;
      if (c >= 48 && c <= 57) h = c - 48;
      else if (c >= 97 && c <= 102) h = c - 87;
      else if (c >= 65 && c <= 70) h = c - 55;
      if (h < 0) this.fail("invalid \\u escape");
      v = v << 4 | h;
    }
    return v;
  }
  string(): string {
    if (this.peek() != 34) this.fail("expected a string");
    this.p++;
    let out = "";
    let run = this.p;
    while (true) {
      if (this.p >= this.end) this.fail("unterminated string");
      const c = <i32>load<u8>(this.p);
      if (c == 34) {
        out += String.UTF8.decodeUnsafe(run, this.p - run);
        this.p++;
        return out;
      }
      if (c < 0x20) this.fail("control character in string");
      if (c != 92) {
        this.p++;
        continue;
      }
      out += String.UTF8.decodeUnsafe(run, this.p - run);
      this.p++;
      const e = this.peek();
      this.p++;
      if (e == 34) out += "\"";
      else if (e == 92) out += "\\";
      else if (e == 47) out += "/";
      else if (e == 98) out += "\b";
      else if (e == 102) out += "\f";
      else if (e == 110) out += "\n";
      else if (e == 114) out += "\r";
      else if (e == 116) out += "\t";
      else if (e == 117) out += String.fromCharCode(this.hex4()); // UTF-16 units, so surrogate pairs join
      else this.fail("invalid escape");
      run = this.p;
    }
  }
}

// parse reads one JSON document from linear memory [ptr, ptr+len).
export function parse(ptr: usize, len: usize): Value {
  const p = new Parser(ptr, ptr + len);
  const v = p.value(0);
  p.ws();
  if (p.p != p.end) p.fail("data after the JSON value");
  return v;
}

// ---- the batch ----

export class Message {
  id: string = "";
  attempt: i64 = 0;
  createdAt: string = "";
  headers: Value = new Value();
  body: Value = new Value();
}

export class Batch {
  version: i64 = 0;
  functionName: string = "";
  functionVersion: i64 = 0;
  triggerType: string = "";
  triggerSource: string = "";
  messages: Message[] = [];
}

function str(v: Value | null, what: string): string {
  if (v == null || v.kind == Kind.Null) return "";
  if (v.kind != Kind.String) throw new Error("sluice sdk: decode batch: " + what + " is not a string");
  return v.str;
}

function int(v: Value | null, what: string): i64 {
  if (v == null) return 0;
  if (!v.isInteger()) throw new Error("sluice sdk: decode batch: " + what + " is not an integer");
  return v.toI64();
}

// decodeBatch turns an input document into a Batch.
export function decodeBatch(doc: Value): Batch {
  if (doc.kind != Kind.Object) throw new Error("sluice sdk: decode batch: input is not a JSON object");
  const b = new Batch();
  b.version = int(doc.get("version"), "version");
  if (b.version != 1) throw new Error("sluice sdk: decode batch: unsupported ABI version " + b.version.toString());
  const f = doc.get("function");
  if (f != null) {
    b.functionName = str(f.get("name"), "function name");
    b.functionVersion = int(f.get("version"), "function version");
  }
  const t = doc.get("trigger");
  if (t != null) {
    b.triggerType = str(t.get("type"), "trigger type");
    b.triggerSource = str(t.get("source"), "trigger source");
  }
  const ms = doc.get("messages");
  if (ms == null || ms.kind != Kind.Array) throw new Error("sluice sdk: decode batch: messages is not an array");
  for (let i = 0; i < ms.items.length; i++) {
    const v = ms.items[i];
    if (v.kind != Kind.Object) throw new Error("sluice sdk: decode batch: a message is not an object");
    const m = new Message();
    m.id = str(v.get("id"), "message id");
    if (m.id.length == 0) throw new Error("sluice sdk: decode batch: a message has no id");
    m.attempt = int(v.get("attempt"), "message attempt");
    m.createdAt = str(v.get("created_at"), "message created_at");
    const h = v.get("headers");
    if (h != null) m.headers = h;
    const body = v.get("body");
    if (body != null) m.body = body;
    b.messages.push(m);
  }
  return b;
}

// ---- the output ----

// Output collects the failed messages of a batch; the others are acked.
export class Output {
  parts: string[] = [];

  // retry fails message id: it is delivered again after afterSeconds (0: at
  // once), counting toward the queue's receive limit.
  retry(id: string, afterSeconds: i64, error: string): void {
    let s = "{\"itemIdentifier\":" + quote(id);
    if (afterSeconds > 0) s += ",\"retryAfterSeconds\":" + afterSeconds.toString();
    if (error.length > 0) s += ",\"error\":" + quote(error);
    this.parts.push(s + "}");
  }
  // permanent fails message id for good: it moves to the dead-letter queue.
  permanent(id: string, error: string): void {
    let s = "{\"itemIdentifier\":" + quote(id) + ",\"permanent\":true";
    if (error.length > 0) s += ",\"error\":" + quote(error);
    this.parts.push(s + "}");
  }
  // toJSON returns the output document ("" when nothing failed).
  toJSON(): string {
    if (this.parts.length == 0) return "";
    return "{\"batchItemFailures\":[" + this.parts.join(",") + "]}";
  }
}

// log writes one JSON log line to stderr: level, message and string fields
// given as [key, value, key, value, ...].
export function log(level: string, message: string, fields: string[] = []): void {
  let line = "{\"level\":" + quote(level) + ",\"message\":" + quote(message);
  for (let i = 0; i + 1 < fields.length; i += 2) line += "," + quote(fields[i]) + ":" + quote(fields[i + 1]);
  process.stderr.write(line + "}\n");
}

// ---- the reactor ABI ----

let handler: ((b: Batch, out: Output) => void) | null = null;
let input: ArrayBuffer | null = null; // the buffer handed out by sluice_alloc
let output: ArrayBuffer | null = null; // the last output, kept for the host

// handle registers the function's handler; call it at the top level of the
// entry file.
export function handle(h: (b: Batch, out: Output) => void): void {
  handler = h;
}

// Importing sched_yield lets the host preempt the module with a cheap
// countdown instead of a check at every loop (docs/function-abi.md).
@external("wasi_snapshot_preview1", "sched_yield")
declare function sched_yield(): u16;

export function sluice_alloc(n: u32): u32 {
  output = null;
  input = new ArrayBuffer(<i32>n);
  return <u32>changetype<usize>(input);
}

export function sluice_handle(ptr: u32, n: u32): u64 {
  const buf = input;
  if (buf == null || <usize>ptr != changetype<usize>(buf) || <i32>n > buf.byteLength) {
    throw new Error("sluice sdk: sluice_handle does not name the buffer from sluice_alloc");
  }
  const h = handler;
  if (h == null) throw new Error("sluice sdk: no handler registered (call handle)");
  sched_yield();
  const b = decodeBatch(parse(<usize>ptr, <usize>n));
  const out = new Output();
  h(b, out);
  input = null;
  const doc = out.toJSON();
  if (doc.length == 0) {
    output = null;
    return 0;
  }
  const enc = String.UTF8.encode(doc);
  output = enc;
  return (<u64>changetype<usize>(enc) << 32) | <u64>enc.byteLength;
}
