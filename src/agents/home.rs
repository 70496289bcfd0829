//! SPEC §7E agent home: a directory is a persona. Its bootstrap files
//! compose the soul (in a fixed order, each under a size cap), a file-backed
//! `memory` tool writes what should load next session, and a heartbeat on
//! the runtime clock wakes the agent, staying silent on `HEARTBEAT_OK`.

use super::def::AgentDef;
use super::inbox::InboxItem;
use super::runtime::Runtime;
use super::state::State;
use crate::native::native_tool;
use crate::tool::{ExecContext, Tool, ToolResult};
use serde_json::{json, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

/// The bootstrap files, in the order their sections appear.
pub const BOOTSTRAP_ORDER: [&str; 7] = [
    "AGENTS.md",
    "SOUL.md",
    "IDENTITY.md",
    "USER.md",
    "TOOLS.md",
    "HEARTBEAT.md",
    "MEMORY.md",
];

/// The most read of one bootstrap file.
pub const MAX_BOOTSTRAP_FILE_BYTES: u64 = 2_097_152;

/// What a truncated file ends with.
pub const TRUNCATED_NOTICE: &str = "\n[truncated: exceeds 2 MB bootstrap cap]";

/// The reply that keeps a heartbeat silent.
pub const HEARTBEAT_OK: &str = "HEARTBEAT_OK";

/// The prompt of a heartbeat turn.
pub const HEARTBEAT_PROMPT: &str = "Heartbeat. Read your HEARTBEAT.md section and follow it. If nothing needs attention, reply HEARTBEAT_OK.";

/// The memory tool's description (the same text in every upstream port).
pub const MEMORY_DESCRIPTION: &str = "Persist durable memory. action=add appends an entry; replace swaps an existing substring; remove deletes one. target=self (MEMORY.md, default) or user (USER.md). Writes persist to disk and load at the START of your next session — they do NOT change your current context.";

/// A file's text, cut at the cap (a partial UTF-8 character dropped) with
/// the notice; `None` when the file is absent.
fn read_capped(path: &Path) -> std::io::Result<Option<String>> {
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut buf = Vec::new();
    file.take(MAX_BOOTSTRAP_FILE_BYTES + 1)
        .read_to_end(&mut buf)?;
    let over = buf.len() as u64 > MAX_BOOTSTRAP_FILE_BYTES;
    if over {
        buf.truncate(MAX_BOOTSTRAP_FILE_BYTES as usize);
    }
    let text = match String::from_utf8(buf) {
        Ok(s) => s,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8(bytes).unwrap_or_default()
        }
    };
    Ok(Some(if over {
        format!("{text}{TRUNCATED_NOTICE}")
    } else {
        text
    }))
}

/// The soul of a home directory: `## <file>\n\n<trimmed body>` per
/// bootstrap file present, joined by blank lines; and the files found.
pub fn compose_soul(dir: &Path) -> std::io::Result<(String, Vec<String>)> {
    let mut sections = Vec::new();
    let mut found = Vec::new();
    for name in BOOTSTRAP_ORDER {
        if let Some(body) = read_capped(&dir.join(name))? {
            sections.push(format!("## {name}\n\n{}", body.trim()));
            found.push(name.to_string());
        }
    }
    Ok((sections.join("\n\n"), found))
}

fn memory_call(dir: &Path, args: &Value) -> ToolResult {
    let action = args.get("action").and_then(Value::as_str).unwrap_or("");
    let Some(text) = args.get("text").and_then(Value::as_str) else {
        return ToolResult::error("memory: text must be a string");
    };
    let file = match args.get("target").and_then(Value::as_str) {
        None | Some("self") => "MEMORY.md",
        Some("user") => "USER.md",
        Some(other) => return ToolResult::error(format!("unknown target: {other}")),
    };
    let path = dir.join(file);
    let current = match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return ToolResult::error(format!("memory: {file}: {e}")),
    };
    let next = match action {
        "add" => format!("{}\n- {text}\n", current.trim_end())
            .trim_start()
            .to_string(),
        "replace" | "remove" => {
            if !current.contains(text) {
                return ToolResult::error(format!("not found: {text}"));
            }
            let with = if action == "replace" {
                args.get("with").and_then(Value::as_str).unwrap_or("")
            } else {
                ""
            };
            current.replacen(text, with, 1)
        }
        other => return ToolResult::error(format!("unknown action: {other}")),
    };
    if let Err(e) = std::fs::create_dir_all(dir).and_then(|()| std::fs::write(&path, next)) {
        return ToolResult::error(format!("memory: {file}: {e}"));
    }
    ToolResult::ok(format!("ok ({action} → {file}); loads next session"))
}

/// The `memory` tool of a home directory. It writes the files on disk and
/// never touches the live prompt.
pub fn memory_tool(dir: &Path) -> Tool {
    let dir: PathBuf = dir.to_path_buf();
    let schema = json!({
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["add", "replace", "remove"]},
            "target": {"type": "string", "enum": ["self", "user"]},
            "text": {"type": "string"},
            "with": {"type": "string"}
        },
        "required": ["action", "text"]
    });
    native_tool(
        "memory",
        MEMORY_DESCRIPTION,
        Some(schema),
        Arc::new(move |args: &Value, _: &ExecContext| memory_call(&dir, args)),
    )
}

/// A persona: its definition, and the tools it names (to register in the
/// runtime's toolkit).
#[derive(Debug, Clone)]
pub struct Persona {
    pub def: AgentDef,
    pub tools: Vec<Tool>,
    /// The bootstrap files its soul was composed from, in order.
    pub found: Vec<String>,
}

/// An agent from a home directory: named after it, its soul composed now
/// (a frozen snapshot), the `memory` tool unless `memory` is false.
pub fn from_dir(dir: &Path, model: Option<&str>, memory: bool) -> std::io::Result<Persona> {
    let (soul, found) = compose_soul(dir)?;
    let name = dir.file_name().map_or_else(
        || "persona".to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let mut tools = Vec::new();
    if memory {
        tools.push(memory_tool(dir));
    }
    Ok(Persona {
        def: AgentDef {
            name,
            does: format!("persona agent from {}", dir.display()),
            soul,
            model: model.filter(|m| *m != "inherit").map(str::to_string),
            tools: tools.iter().map(|t| t.name.clone()).collect(),
            ..AgentDef::default()
        },
        tools,
        found,
    })
}

/// Called with the text of each beat that speaks.
pub type OnBeat = Arc<dyn Fn(&str) + Send + Sync>;

/// A persona running on a heartbeat.
pub struct StartedAgent {
    pub handle: String,
    runtime: Runtime,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for StartedAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartedAgent")
            .field("handle", &self.handle)
            .finish()
    }
}

/// Spawns `def` under the root and beats every `every_ms` on the runtime's
/// clock: a `tick` posted to its inbox, and, when it is idle, a wake with
/// [`HEARTBEAT_PROMPT`]; a result that is no error and does not contain
/// [`HEARTBEAT_OK`] goes to `on_beat`. Ticks that land during a running
/// beat coalesce into the next turn.
pub fn start_agent(
    runtime: &Runtime,
    def: &str,
    every_ms: u64,
    on_beat: OnBeat,
) -> Result<StartedAgent, String> {
    if every_ms == 0 {
        return Err("everyMs must be 1 or more".into());
    }
    let handle = runtime.spawn("root", def, None)?;
    // The first beat is due `every_ms` after the start, fixed now.
    let first = runtime.inner.clock.now_ms().saturating_add(every_ms);
    let stop = Arc::new(AtomicBool::new(false));
    let (rt, id, stopped) = (runtime.clone(), handle.clone(), Arc::clone(&stop));
    let thread = std::thread::Builder::new()
        .name("toolnexus-heartbeat".into())
        .spawn(move || beat_loop(&rt, &id, first, every_ms, &stopped, &on_beat))
        .map_err(|e| format!("cannot start the heartbeat: {e}"))?;
    Ok(StartedAgent {
        handle,
        runtime: runtime.clone(),
        stop,
        thread: Mutex::new(Some(thread)),
    })
}

fn beat_loop(rt: &Runtime, id: &str, first: u64, every: u64, stop: &AtomicBool, on_beat: &OnBeat) {
    let inner = &rt.inner;
    let mut next = first;
    loop {
        {
            let mut st = inner.lock();
            while !stop.load(Ordering::SeqCst) && inner.clock.now_ms() < next {
                st = inner.sleep(st, Some(next));
            }
        }
        if stop.load(Ordering::SeqCst) {
            return;
        }
        next = next.saturating_add(every);
        if rt
            .post(id, InboxItem::new("clock", "timer", "tick"))
            .is_err()
            && rt.inspect(id).is_none_or(|v| v.state == State::Closed)
        {
            return;
        }
        if rt.inspect(id).is_some_and(|v| v.state == State::Idle)
            && rt.wake(id, Some(HEARTBEAT_PROMPT)).is_ok()
        {
            let (rt, id, on_beat) = (rt.clone(), id.to_string(), Arc::clone(on_beat));
            std::thread::spawn(move || {
                let r = rt.wait(&id, None);
                if !r.is_error && r.status == "done" && !r.text.contains(HEARTBEAT_OK) {
                    on_beat(&r.text);
                }
            });
        }
    }
}

impl StartedAgent {
    pub fn runtime(&self) -> &Runtime {
        &self.runtime
    }

    /// Ends the heartbeat and closes the handle.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        {
            let st = self.runtime.inner.lock();
            self.runtime.inner.notify_everyone(&st);
        }
        let t = self
            .thread
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(t) = t {
            let _ = t.join();
        }
        let _ = self.runtime.close(&self.handle, true, None);
    }
}

impl Drop for StartedAgent {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soul_is_composed_in_bootstrap_order_and_capped() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("MEMORY.md"), "- m\n").expect("write");
        std::fs::write(dir.path().join("SOUL.md"), "  I am.  ").expect("write");
        let (soul, found) = compose_soul(dir.path()).expect("soul");
        assert_eq!(found, vec!["SOUL.md", "MEMORY.md"]);
        assert_eq!(soul, "## SOUL.md\n\nI am.\n\n## MEMORY.md\n\n- m");
        let big = "é".repeat(1_500_000);
        std::fs::write(dir.path().join("SOUL.md"), &big).expect("write");
        let (soul, _) = compose_soul(dir.path()).expect("soul");
        assert!(soul.contains(TRUNCATED_NOTICE));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("SOUL.md")).expect("read"),
            big
        );
    }

    #[test]
    fn memory_adds_replaces_and_removes_on_disk() {
        let dir = tempfile::tempdir().expect("tempdir");
        let tool = memory_tool(dir.path());
        let call = |a: Value| tool.exec.execute(&a, &ExecContext::default());
        let r = call(json!({"action": "add", "text": "likes tea"}));
        assert_eq!(r.output, "ok (add → MEMORY.md); loads next session");
        let file = || std::fs::read_to_string(dir.path().join("MEMORY.md")).expect("read");
        assert_eq!(file(), "- likes tea\n");
        call(json!({"action": "replace", "text": "tea", "with": "coffee"}));
        assert_eq!(file(), "- likes coffee\n");
        let miss = call(json!({"action": "remove", "text": "juice"}));
        assert!(miss.is_error && miss.output == "not found: juice");
        assert_eq!(file(), "- likes coffee\n");
        call(json!({"action": "remove", "text": "- likes coffee\n"}));
        assert_eq!(file(), "");
        call(json!({"action": "add", "target": "user", "text": "Prefers dark roast"}));
        let user = std::fs::read_to_string(dir.path().join("USER.md")).expect("read");
        assert!(user.contains("Prefers dark roast"));
        assert!(call(json!({"action": "shout", "text": "x"}))
            .output
            .contains("unknown action: shout"));
    }
}
