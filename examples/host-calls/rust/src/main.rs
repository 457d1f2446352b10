//! host-calls in Rust: the v1.1 host imports through the Rust SDK's
//! `sluice::host` (see ../host.c for what it does and logs).
use sluice::host::{self, Store};

fn code<T>(r: Result<T, host::Error>) -> i64 {
    match r {
        Ok(_) => 0,
        Err(e) => e.errno as i64,
    }
}

fn main() {
    sluice::run(|batch, _out| {
        for m in &batch.messages {
            let url = m.body.get("url").and_then(|v| v.as_str()).unwrap_or("");
            let denied = m.body.get("denied_url").and_then(|v| v.as_str()).unwrap_or("");
            let mut s: Vec<String> = Vec::new();
            match host::http_request("POST", url, &[("X-Test", "rust")], b"ping") {
                Ok(r) => s.push(format!("http={}:{}", r.status, String::from_utf8_lossy(&r.body))),
                Err(e) => s.push(format!("http=error:{}", e)),
            }
            s.push(format!("denied={}", code(host::http_request("", denied, &[], b""))));
            let counts = Store::open("counts");
            s.push(match counts.and_then(|c| c.increment("hits", 2)) {
                Ok(n) => format!("inc={}", n),
                Err(e) => format!("inc=-{}", e.errno as i64),
            });
            if let Ok(sessions) = Store::open("sessions") {
                let _ = sessions.set("k", "v1", 0);
                if let Ok(v) = sessions.get("k") {
                    s.push(format!("get={}", String::from_utf8_lossy(&v)));
                }
                s.push(format!("cas={}", code(sessions.compare_and_set("k", Some(b"v1"), "v2", 60000))));
                s.push(format!("cas2={}", code(sessions.compare_and_set("k", Some(b"v1"), "v3", 0))));
                s.push(format!("absent={}", code(sessions.compare_and_set("k", None, "v4", 0))));
                s.push(format!("del={}", code(sessions.delete("k"))));
                s.push(format!("get2={}", code(sessions.get("k"))));
            }
            s.push(format!("open={}", code(Store::open("other"))));
            sluice::log("info", "host", &[("id", &m.id), ("summary", &s.join(" "))]);
        }
    });
}
