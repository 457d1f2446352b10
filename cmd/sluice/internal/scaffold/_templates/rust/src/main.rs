//! {{.Name}}: a Sluice function in Rust. A message whose body has
//! "permanent": true goes to the dead-letter queue at once; one with
//! "fail": true is retried after "retry_after" seconds (default 60);
//! every other message is acked. Each decision is logged to stderr.

fn main() {
    sluice::run(|batch, out| {
        for m in &batch.messages {
            let flag = |k: &str| m.body.get(k).and_then(|v| v.as_bool()) == Some(true);
            let why = m.body.get("error").and_then(|v| v.as_str());
            if flag("permanent") {
                out.permanent(&m.id, why.unwrap_or("asked to fail permanently"));
                sluice::log("error", "permanent", &[("id", &m.id)]);
            } else if flag("fail") {
                let after = m.body.get("retry_after").and_then(|v| v.as_i64()).unwrap_or(60);
                out.retry(&m.id, after.max(0) as u64, why.unwrap_or("asked to fail"));
                sluice::log("warn", "retry", &[("id", &m.id)]);
            } else {
                sluice::log("info", "acked", &[("id", &m.id)]);
            }
        }
    });
}
