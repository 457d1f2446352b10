// host-calls in AssemblyScript: the v1.1 host imports through the SDK's
// assembly/host module (see host.c for what it does and logs).
import { Batch, Output, handle, log } from "../../sdk/assemblyscript/assembly/index";
import { httpRequest, Store, lastErrno, lastError } from "../../sdk/assemblyscript/assembly/host";
export { sluice_alloc, sluice_handle } from "../../sdk/assemblyscript/assembly/index";

function str(b: Batch, i: i32, key: string): string {
  const v = b.messages[i].body.get(key);
  return v != null && v.isString() ? v.str : "";
}

function run(b: Batch, out: Output): void {
  for (let i = 0; i < b.messages.length; i++) {
    const s: string[] = [];
    const r = httpRequest("POST", str(b, i, "url"), "{\"X-Test\":[\"as\"]}", "ping");
    s.push(r != null ? "http=" + r.status.toString() + ":" + r.text() : "http=error:" + lastError());
    httpRequest("", str(b, i, "denied_url"));
    s.push("denied=" + lastErrno().toString());
    const counts = Store.open("counts");
    if (counts != null) {
      const n = counts.increment("hits", 2);
      s.push(lastErrno() == 0 ? "inc=" + n.toString() : "inc=-" + lastErrno().toString());
    }
    const sessions = Store.open("sessions");
    if (sessions != null) {
      sessions.set("k", "v1");
      const v = sessions.get("k");
      if (v != null) s.push("get=" + v);
      s.push("cas=" + sessions.compareAndSet("k", "v1", "v2", 60000).toString());
      s.push("cas2=" + sessions.compareAndSet("k", "v1", "v3").toString());
      s.push("absent=" + sessions.compareAndSet("k", null, "v4").toString());
      s.push("del=" + sessions.delete("k").toString());
      sessions.get("k");
      s.push("get2=" + lastErrno().toString());
    }
    Store.open("other");
    s.push("open=" + lastErrno().toString());
    log("info", "host", ["id", b.messages[i].id, "summary", s.join(" ")]);
  }
}

handle(run);
