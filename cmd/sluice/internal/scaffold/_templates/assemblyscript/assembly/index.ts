// {{.Name}}: a Sluice function in AssemblyScript. A message whose body has
// "permanent": true goes to the dead-letter queue at once; one with
// "fail": true is retried after "retry_after" seconds (default 60); every
// other message is acked. Each decision is logged to stderr.
import { Batch, Output, handle, log } from "../sluice-sdk/index";
export { sluice_alloc, sluice_handle } from "../sluice-sdk/index";

function triage(b: Batch, out: Output): void {
  for (let i = 0; i < b.messages.length; i++) {
    const m = b.messages[i];
    const e = m.body.get("error");
    const why = e != null && e.isString() ? e.str : "";
    if (m.body.flag("permanent")) {
      out.permanent(m.id, why.length > 0 ? why : "asked to fail permanently");
      log("error", "permanent", ["id", m.id]);
    } else if (m.body.flag("fail")) {
      const ra = m.body.get("retry_after");
      const after: i64 = ra != null && ra.isInteger() ? ra.toI64() : 60;
      out.retry(m.id, after, why.length > 0 ? why : "asked to fail");
      log("warn", "retry", ["id", m.id]);
    } else {
      log("info", "acked", ["id", m.id]);
    }
  }
}

handle(triage);
