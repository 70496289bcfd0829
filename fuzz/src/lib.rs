//! What the fuzz targets share: calling the C ABI with fuzzed text and
//! checking what every call promises (JSON out, a status that matches the
//! error code it carries), a scratch directory to work in, and the filter
//! that keeps fuzzed configs and arguments inside it.

use serde_json::Value;
use std::ffi::{c_char, CStr, CString};
use std::path::PathBuf;
use std::sync::OnceLock;
use toolnexus::ffi::{tn_string_free, tn_toolkit, tn_toolkit_build, tn_toolkit_free};

/// A C string of fuzzed bytes: cut at the first NUL, as C would see it.
pub fn c_text(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).expect("no NUL before end")
}

/// Takes a string the library handed out, checks it is UTF-8 JSON, frees it.
pub fn take_json(ptr: *mut c_char, what: &str) -> Value {
    assert!(!ptr.is_null(), "{what}: the library wrote NULL");
    // SAFETY: a NUL-terminated string this library just handed out.
    let text = unsafe { CStr::from_ptr(ptr) }
        .to_str()
        .unwrap_or_else(|e| panic!("{what}: output is not UTF-8: {e}"))
        .to_owned();
    // SAFETY: freed once, by the library's own free.
    unsafe { tn_string_free(ptr) };
    serde_json::from_str(&text)
        .unwrap_or_else(|e| panic!("{what}: output is not JSON ({e}): {text}"))
}

/// The error code a status stands for (CONTRACT.md's numbering).
fn code_of(status: i32) -> &'static str {
    match status {
        1 => "null_argument",
        2 => "invalid_utf8",
        3 => "invalid_json",
        4 => "invalid_config",
        5 => "invalid_argument",
        6 => "unknown_format",
        7 => "provider_error",
        8 => "timeout",
        9 => "cancelled",
        10 => "internal",
        other => panic!("status {other} is no status of the ABI"),
    }
}

/// Checks the outcome of a call: on success the JSON itself comes back; on
/// failure an error JSON whose code is the status's, with a message. An
/// `internal` status is a caught panic, which is a bug.
pub fn check(status: i32, out: *mut c_char, what: &str) -> Option<Value> {
    let v = take_json(out, what);
    if status == 0 {
        return Some(v);
    }
    let code = code_of(status);
    assert_ne!(code, "internal", "{what}: a panic was caught: {v}");
    assert_eq!(v["error"]["code"].as_str(), Some(code), "{what}: {v}");
    assert!(v["error"]["message"].is_string(), "{what}: {v}");
    None
}

/// A fresh scratch directory made the process's working directory, with a
/// few files and two skills in it. Made once per process.
pub fn scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("tn-fuzz-{}", std::process::id()));
        let files: [(&str, &str); 7] = [
            (
                "t.txt",
                "line one\nline two\nline three\nline four\nline five\n",
            ),
            ("a/b.txt", "alpha\nbeta TODO\ngamma\n"),
            ("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n"),
            ("empty.txt", ""),
            ("bin.dat", "\u{0}\u{1}\u{2}binary"),
            (
                "skills/hello/SKILL.md",
                "---\nname: hello\ndescription: Says hello.\n---\n\n# Hello\nBody.\n",
            ),
            (
                "skills/other/SKILL.md",
                "---\nname: other\ndescription: \"quoted: yes\"\n---\nText\n",
            ),
        ];
        for (path, text) in files {
            let p = dir.join(path);
            if let Some(parent) = p.parent() {
                std::fs::create_dir_all(parent).expect("scratch dir");
            }
            std::fs::write(&p, text).expect("scratch file");
        }
        std::fs::write(dir.join("skills/hello/notes.md"), "notes\n").expect("scratch file");
        std::env::set_current_dir(&dir).expect("cd scratch");
        dir
    })
}

/// True when every string in `v` (keys too) stays inside the working
/// directory as a path: not absolute, no `~`, no `..`, no `$`. Fuzzed
/// configs and arguments that fail it are not run, so a run never reads
/// outside the scratch directory (or walks the whole disk).
pub fn stays_inside(v: &Value) -> bool {
    let ok = |s: &str| {
        !(s.starts_with('/') || s.starts_with('~') || s.contains("..") || s.contains('$'))
    };
    match v {
        Value::String(s) => ok(s),
        Value::Array(items) => items.iter().all(stays_inside),
        Value::Object(m) => m.iter().all(|(k, v)| ok(k) && stays_inside(v)),
        _ => true,
    }
}

/// An owned toolkit, freed on drop.
pub struct Toolkit(pub *mut tn_toolkit);

impl Drop for Toolkit {
    fn drop(&mut self) {
        // SAFETY: a toolkit from tn_toolkit_build, freed once.
        unsafe { tn_toolkit_free(self.0) };
    }
}

// SAFETY: the library's toolkits may be used from any thread.
unsafe impl Send for Toolkit {}
// SAFETY: as above.
unsafe impl Sync for Toolkit {}

/// Builds a toolkit from config text through the C ABI; `None` (with the
/// error checked) when the library refuses it.
pub fn build(config: &CString) -> Option<Toolkit> {
    let mut tk = std::ptr::null_mut();
    let mut err = std::ptr::null_mut();
    // SAFETY: a NUL-terminated config and pointers to locals.
    let status = unsafe { tn_toolkit_build(config.as_ptr(), &mut tk, &mut err) };
    if status == 0 {
        assert!(err.is_null(), "build succeeded but wrote an error");
        assert!(!tk.is_null(), "build succeeded without a toolkit");
        return Some(Toolkit(tk));
    }
    assert!(tk.is_null(), "build failed but wrote a toolkit");
    check(status, err, "tn_toolkit_build");
    None
}

/// The fixed toolkit the render and execute targets use: the builtins, the
/// scratch directory's skills and two inline ones, and an HTTP tool (never
/// called).
pub fn fixed_toolkit() -> &'static Toolkit {
    static TK: OnceLock<Toolkit> = OnceLock::new();
    TK.get_or_init(|| {
        scratch();
        let config = c_text(
            br#"{"skillsDir": "skills",
                 "skills": [{"name": "inline", "description": "An inline skill.", "content": "Do the thing."},
                            {"name": "x y", "description": "odd name", "content": ""}],
                 "httpTools": [{"name": "users", "description": "get a user", "method": "GET",
                                "url": "http://127.0.0.1:9/users/{id}",
                                "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}}}]}"#,
        );
        build(&config).expect("the fixed toolkit builds")
    })
}
