//! Guest SDK for Sluice functions written in Rust: Function ABI v1 over
//! WASI preview 1 (see docs/function-abi.md in the Sluice repository).
//!
//! ```no_run
//! fn main() {
//!     sluice::run(|batch, out| {
//!         for m in &batch.messages {
//!             if m.body.get("fail").and_then(|v| v.as_bool()) == Some(true) {
//!                 out.retry(&m.id, 30, "asked to fail");
//!             }
//!         }
//!     });
//! }
//! ```
//!
//! Build with `cargo build --release --target wasm32-wasi`: the module is
//! a command (a fresh instance per batch). Every message the handler does
//! not fail is acked.

pub mod host;
pub mod json;

pub use json::Value;

use std::fmt::Write as _;
use std::io::{Read, Write};

/// One invocation's input.
#[derive(Clone, Debug, Default)]
pub struct Batch {
    /// The ABI version, 1.
    pub version: i64,
    pub function: Function,
    pub trigger: Trigger,
    /// The messages, in delivery order.
    pub messages: Vec<Message>,
}

/// The deployed function being run.
#[derive(Clone, Debug, Default)]
pub struct Function {
    pub name: String,
    pub version: i64,
}

/// What produced the batch.
#[derive(Clone, Debug, Default)]
pub struct Trigger {
    /// "queue", "webhook", "cron" or "invoke" (the document's "type").
    pub kind: String,
    /// The queue, hook or schedule name.
    pub source: String,
}

/// One message of a batch.
#[derive(Clone, Debug)]
pub struct Message {
    /// Identifies the message in the output.
    pub id: String,
    /// 1 on the first delivery.
    pub attempt: i64,
    /// When the message was sent, RFC 3339 in UTC.
    pub created_at: String,
    /// The headers object, or Null.
    pub headers: Value,
    pub body: Value,
}

/// The failed messages of a batch; the others are acked.
#[derive(Clone, Debug, Default)]
pub struct Output {
    out: String,
}

impl Output {
    /// Fails message `id`: it is delivered again after `after_seconds`
    /// (0: at once), counting toward the queue's receive limit.
    pub fn retry(&mut self, id: &str, after_seconds: u64, error: &str) {
        self.fail(id, Some(after_seconds), error)
    }

    /// Fails message `id` for good: it moves to the dead-letter queue.
    pub fn permanent(&mut self, id: &str, error: &str) {
        self.fail(id, None, error)
    }

    fn fail(&mut self, id: &str, after: Option<u64>, error: &str) {
        let o = &mut self.out;
        o.push_str(if o.is_empty() { "{\"batchItemFailures\":[" } else { "," });
        o.push_str("{\"itemIdentifier\":");
        let _ = json::write_string(o, id);
        match after {
            None => o.push_str(",\"permanent\":true"),
            Some(0) => {}
            Some(s) => {
                let _ = write!(o, ",\"retryAfterSeconds\":{}", s);
            }
        }
        if !error.is_empty() {
            o.push_str(",\"error\":");
            let _ = json::write_string(o, error);
        }
        o.push('}');
    }

    /// The output document (empty when nothing failed).
    pub fn into_bytes(mut self) -> Vec<u8> {
        if !self.out.is_empty() {
            self.out.push_str("]}");
        }
        self.out.into_bytes()
    }
}

/// Writes one JSON log line to stderr: level, message and string fields.
pub fn log(level: &str, message: &str, fields: &[(&str, &str)]) {
    let mut line = String::from("{\"level\":");
    let _ = json::write_string(&mut line, level);
    line.push_str(",\"message\":");
    let _ = json::write_string(&mut line, message);
    for (k, v) in fields {
        line.push(',');
        let _ = json::write_string(&mut line, k);
        line.push(':');
        let _ = json::write_string(&mut line, v);
    }
    line.push_str("}\n");
    let _ = std::io::stderr().write_all(line.as_bytes());
}

/// Decodes an input document.
pub fn parse_batch(input: &[u8]) -> Result<Batch, String> {
    let doc = json::parse(input)?;
    let str_of = |v: Option<&Value>, what: &str| -> Result<String, String> {
        match v {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("{} is not a string", what)),
        }
    };
    let int_of = |v: Option<&Value>, what: &str| -> Result<i64, String> {
        match v {
            None => Ok(0),
            Some(v) => v.as_i64().ok_or_else(|| format!("{} is not an integer", what)),
        }
    };
    if !matches!(doc, Value::Object(_)) {
        return Err("input is not a JSON object".into());
    }
    let version = int_of(doc.get("version"), "version")?;
    if version != 1 {
        return Err(format!("unsupported ABI version {}", version));
    }
    let f = doc.get("function");
    let t = doc.get("trigger");
    let mut b = Batch {
        version,
        function: Function {
            name: str_of(f.and_then(|f| f.get("name")), "function name")?,
            version: int_of(f.and_then(|f| f.get("version")), "function version")?,
        },
        trigger: Trigger {
            kind: str_of(t.and_then(|t| t.get("type")), "trigger type")?,
            source: str_of(t.and_then(|t| t.get("source")), "trigger source")?,
        },
        messages: Vec::new(),
    };
    let msgs = match doc.get("messages") {
        Some(Value::Array(a)) => a,
        _ => return Err("messages is not an array".into()),
    };
    for m in msgs {
        if !matches!(m, Value::Object(_)) {
            return Err("a message is not an object".into());
        }
        let id = str_of(m.get("id"), "message id")?;
        if id.is_empty() {
            return Err("a message has no id".into());
        }
        b.messages.push(Message {
            attempt: int_of(m.get("attempt"), "message attempt")?,
            created_at: str_of(m.get("created_at"), "message created_at")?,
            headers: m.get("headers").cloned().unwrap_or(Value::Null),
            body: m.get("body").cloned().unwrap_or(Value::Null),
            id,
        });
    }
    Ok(b)
}

/// Runs handler on one input document and returns the output document.
pub fn handle<F: FnOnce(&Batch, &mut Output)>(input: &[u8], handler: F) -> Result<Vec<u8>, String> {
    let batch = parse_batch(input).map_err(|e| format!("decode batch: {}", e))?;
    let mut out = Output::default();
    handler(&batch, &mut out);
    Ok(out.into_bytes())
}

/// The function's main: reads the batch from stdin, runs handler and
/// writes the output to stdout. A batch it cannot read makes the process
/// exit with status 1, failing the whole batch.
pub fn run<F: FnOnce(&Batch, &mut Output)>(handler: F) {
    // Importing sched_yield lets the host preempt the module with a cheap
    // countdown instead of a check at every loop (docs/function-abi.md).
    std::thread::yield_now();
    let mut input = Vec::new();
    let result = std::io::stdin()
        .read_to_end(&mut input)
        .map_err(|e| format!("read batch from stdin: {}", e))
        .and_then(|_| handle(&input, handler))
        .and_then(|out| {
            let mut so = std::io::stdout();
            so.write_all(&out).and_then(|_| so.flush()).map_err(|e| format!("write output: {}", e))
        });
    if let Err(e) = result {
        eprintln!("sluice sdk: {}", e);
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_and_output() {
        let input = br#"{"version":1,"function":{"name":"f","version":2},"trigger":{"type":"queue","source":"q"},
            "messages":[{"id":"1","attempt":1,"created_at":"2026-11-30T12:00:00Z","headers":null,"body":{"fail":true}},
                        {"id":"2\"","attempt":3,"created_at":"2026-11-30T12:00:00Z","headers":{"h":"v"},"body":[1]}]}"#;
        let out = handle(input, |b, out| {
            assert_eq!(b.trigger.source, "q");
            out.retry(&b.messages[0].id, 5, "no");
            out.permanent(&b.messages[1].id, "");
        })
        .unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"batchItemFailures":[{"itemIdentifier":"1","retryAfterSeconds":5,"error":"no"},{"itemIdentifier":"2\"","permanent":true}]}"#
        );
        assert!(handle(br#"{"version":1,"messages":[]}"#, |_, _| {}).unwrap().is_empty());
        assert!(handle(b"{}", |_, _| {}).is_err());
    }
}
