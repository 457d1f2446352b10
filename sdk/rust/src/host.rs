//! Wrappers for the v1.1 host imports of module `sluice`: outbound HTTP
//! and key-value stores (docs/function-abi.md, section 8). A module that
//! calls none of them stays a plain v1 module.
//!
//! ```no_run
//! use sluice::host::{self, Store};
//! let resp = host::http_request("POST", "https://api.example.com/v1/charges",
//!     &[("Content-Type", "application/json")], br#"{"amount":42}"#)?;
//! let counts = Store::open("counts")?;
//! let n = counts.increment("hits", 1)?;
//! # Ok::<(), host::Error>(())
//! ```

use crate::json::{self, Value};
use std::fmt;

/// What a failed host call's errno means.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Errno {
    /// Not allowed by the function's manifest.
    Denied = 1,
    /// Malformed arguments.
    Invalid = 2,
    /// A cap was hit (requests per invocation, body or value size).
    Limit = 3,
    /// The call failed (network error, timeout, store error).
    Failed = 4,
    /// No such key.
    NotFound = 5,
    /// A compare-and-set found another value.
    Conflict = 6,
}

/// A failed host call: its errno and the host's one-line message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub errno: Errno,
    pub message: String,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

/// An HTTP response: status, headers (name, value) and body.
#[derive(Clone, Debug, Default)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

#[cfg(target_arch = "wasm32")]
mod imports {
    #[link(wasm_import_module = "sluice")]
    extern "C" {
        pub fn result_read(buf: *mut u8, len: u32) -> i32;
        pub fn http_request(req: *const u8, len: u32, resp_len: *mut u32) -> u32;
        pub fn kv_open(name: *const u8, len: u32, handle: *mut i32) -> u32;
        pub fn kv_get(store: i32, key: *const u8, key_len: u32, val_len: *mut u32) -> u32;
        pub fn kv_set(store: i32, key: *const u8, key_len: u32, val: *const u8, val_len: u32, ttl_ms: i64) -> u32;
        pub fn kv_delete(store: i32, key: *const u8, key_len: u32) -> u32;
        pub fn kv_increment(store: i32, key: *const u8, key_len: u32, delta: i64, value: *mut i64) -> u32;
        pub fn kv_compare_and_set(
            store: i32, key: *const u8, key_len: u32, old: *const u8, old_len: u32,
            val: *const u8, val_len: u32, flags: u32, ttl_ms: i64,
        ) -> u32;
    }
}

/// Off WebAssembly (the SDK's own tests on the build machine) every call
/// fails: there is no host.
#[cfg(not(target_arch = "wasm32"))]
#[allow(clippy::missing_safety_doc)]
mod imports {
    const NO_HOST: u32 = 4;
    pub unsafe fn result_read(_: *mut u8, _: u32) -> i32 { 0 }
    pub unsafe fn http_request(_: *const u8, _: u32, _: *mut u32) -> u32 { NO_HOST }
    pub unsafe fn kv_open(_: *const u8, _: u32, _: *mut i32) -> u32 { NO_HOST }
    pub unsafe fn kv_get(_: i32, _: *const u8, _: u32, _: *mut u32) -> u32 { NO_HOST }
    pub unsafe fn kv_set(_: i32, _: *const u8, _: u32, _: *const u8, _: u32, _: i64) -> u32 { NO_HOST }
    pub unsafe fn kv_delete(_: i32, _: *const u8, _: u32) -> u32 { NO_HOST }
    pub unsafe fn kv_increment(_: i32, _: *const u8, _: u32, _: i64, _: *mut i64) -> u32 { NO_HOST }
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn kv_compare_and_set(_: i32, _: *const u8, _: u32, _: *const u8, _: u32, _: *const u8, _: u32, _: u32, _: i64) -> u32 { NO_HOST }
}

/// The last call's result (its output, or the message of a failure).
fn result() -> Vec<u8> {
    unsafe {
        let n = imports::result_read(std::ptr::null_mut(), 0);
        if n <= 0 {
            return Vec::new();
        }
        let mut buf = vec![0u8; n as usize];
        imports::result_read(buf.as_mut_ptr(), n as u32);
        buf
    }
}

fn check(errno: u32) -> Result<(), Error> {
    let e = match errno {
        0 => return Ok(()),
        1 => Errno::Denied,
        2 => Errno::Invalid,
        3 => Errno::Limit,
        5 => Errno::NotFound,
        6 => Errno::Conflict,
        _ => Errno::Failed,
    };
    let mut message = String::from_utf8_lossy(&result()).into_owned();
    if message.is_empty() {
        message = format!("sluice host: {:?}", e);
    }
    Err(Error { errno: e, message })
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64(b: &[u8]) -> String {
    let mut s = String::with_capacity((b.len() + 2) / 3 * 4);
    for c in b.chunks(3) {
        let v = (c[0] as u32) << 16 | (*c.get(1).unwrap_or(&0) as u32) << 8 | *c.get(2).unwrap_or(&0) as u32;
        s.push(B64[(v >> 18) as usize & 63] as char);
        s.push(B64[(v >> 12) as usize & 63] as char);
        s.push(if c.len() > 1 { B64[(v >> 6) as usize & 63] as char } else { '=' });
        s.push(if c.len() > 2 { B64[v as usize & 63] as char } else { '=' });
    }
    s
}

fn unbase64(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() / 4 * 3);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes().take_while(|&c| c != b'=') {
        if let Some(v) = B64.iter().position(|&x| x == c) {
            acc = acc << 6 | v as u32;
            bits += 6;
            if bits >= 8 {
                bits -= 8;
                out.push((acc >> bits) as u8);
            }
        }
    }
    out
}

/// Performs one HTTP request through the host. The URL must match the
/// manifest's allowed_outbound_hosts; a non-2xx status is a response like
/// any other.
pub fn http_request(method: &str, url: &str, headers: &[(&str, &str)], body: &[u8]) -> Result<Response, Error> {
    let mut req = String::from("{\"method\":");
    let _ = json::write_string(&mut req, if method.is_empty() { "GET" } else { method });
    req.push_str(",\"url\":");
    let _ = json::write_string(&mut req, url);
    if !headers.is_empty() {
        req.push_str(",\"headers\":{");
        for (i, (k, v)) in headers.iter().enumerate() {
            if i > 0 {
                req.push(',');
            }
            let _ = json::write_string(&mut req, k);
            req.push_str(":[");
            let _ = json::write_string(&mut req, v);
            req.push(']');
        }
        req.push('}');
    }
    if !body.is_empty() {
        req.push_str(",\"body\":\"");
        req.push_str(&base64(body));
        req.push('"');
    }
    req.push('}');
    let mut n = 0u32;
    check(unsafe { imports::http_request(req.as_ptr(), req.len() as u32, &mut n) })?;
    let doc = json::parse(&result()).map_err(|e| Error { errno: Errno::Failed, message: format!("sluice http: response document: {}", e) })?;
    let mut resp = Response {
        status: doc.get("status").and_then(|v| v.as_i64()).unwrap_or(0) as u16,
        ..Response::default()
    };
    if let Some(Value::Object(hs)) = doc.get("headers") {
        for (k, vs) in hs {
            for v in vs.as_array().unwrap_or(&[]) {
                resp.headers.push((k.clone(), v.as_str().unwrap_or("").to_string()));
            }
        }
    }
    if let Some(b) = doc.get("body").and_then(|v| v.as_str()) {
        resp.body = unbase64(b);
    }
    Ok(resp)
}

/// An open key-value store of the function's account. Handles stay valid
/// across batches.
#[derive(Clone, Copy, Debug)]
pub struct Store {
    handle: i32,
}

impl Store {
    /// Opens store `name`, which the manifest must list under stores.
    pub fn open(name: &str) -> Result<Store, Error> {
        let mut handle = 0i32;
        check(unsafe { imports::kv_open(name.as_ptr(), name.len() as u32, &mut handle) })?;
        Ok(Store { handle })
    }

    /// The value of key; an error with Errno::NotFound when it is absent.
    pub fn get(&self, key: impl AsRef<[u8]>) -> Result<Vec<u8>, Error> {
        let k = key.as_ref();
        let mut n = 0u32;
        check(unsafe { imports::kv_get(self.handle, k.as_ptr(), k.len() as u32, &mut n) })?;
        Ok(result())
    }

    /// Stores value at key, expiring after ttl_ms milliseconds (0: never).
    pub fn set(&self, key: impl AsRef<[u8]>, value: impl AsRef<[u8]>, ttl_ms: i64) -> Result<(), Error> {
        let (k, v) = (key.as_ref(), value.as_ref());
        check(unsafe { imports::kv_set(self.handle, k.as_ptr(), k.len() as u32, v.as_ptr(), v.len() as u32, ttl_ms) })
    }

    /// Removes key; an error with Errno::NotFound when it was absent.
    pub fn delete(&self, key: impl AsRef<[u8]>) -> Result<(), Error> {
        let k = key.as_ref();
        check(unsafe { imports::kv_delete(self.handle, k.as_ptr(), k.len() as u32) })
    }

    /// Adds delta to the decimal integer at key (absent: 0) and returns
    /// the new value.
    pub fn increment(&self, key: impl AsRef<[u8]>, delta: i64) -> Result<i64, Error> {
        let k = key.as_ref();
        let mut v = 0i64;
        check(unsafe { imports::kv_increment(self.handle, k.as_ptr(), k.len() as u32, delta, &mut v) })?;
        Ok(v)
    }

    /// Sets key to value only if it holds `old` (None: only if key is
    /// absent); an error with Errno::Conflict otherwise.
    pub fn compare_and_set(&self, key: impl AsRef<[u8]>, old: Option<&[u8]>, value: impl AsRef<[u8]>, ttl_ms: i64) -> Result<(), Error> {
        let (k, v) = (key.as_ref(), value.as_ref());
        let (o, flags) = match old {
            Some(o) => (o, 0),
            None => (&[][..], 1),
        };
        check(unsafe {
            imports::kv_compare_and_set(self.handle, k.as_ptr(), k.len() as u32, o.as_ptr(), o.len() as u32, v.as_ptr(), v.len() as u32, flags, ttl_ms)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip() {
        for s in [&b""[..], b"f", b"fo", b"foo", b"foob", b"fooba", b"foobar", &[0, 255, 128, 7]] {
            assert_eq!(unbase64(&base64(s)), s);
        }
        assert_eq!(base64(b"ping"), "cGluZw==");
    }

    #[test]
    fn no_host_off_wasm() {
        assert_eq!(Store::open("s").unwrap_err().errno, Errno::Failed);
    }
}
