//! The toolkit: every source assembled into one name-sorted set of tools,
//! rendered and executed by name (CONTRACT.md §3–§5).

use crate::adapter;
use crate::config::ToolkitConfig;
pub use crate::error::panic_message;
use crate::error::{Error, ErrorCode, Result};
use crate::json::{normalize_args, normalized_args, type_name};
use crate::skill;
use crate::source::build_cancelled;
use crate::source::{Build, SOURCES};
pub use crate::source::{BuildOptions, SkillProvider, Status, SKILL_PROVIDER_KEY};
use crate::style::Style;
use crate::tool::{ExecContext, Tool, ToolResult};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};

/// The tools of each source of [`SOURCES`], in its order (lowest
/// precedence first; the host functions' layer stays empty, they are in
/// `Toolkit::native`). Shared with every snapshot (a rebuild copies
/// pointers, not declarations).
type Layers = Vec<Vec<Arc<Tool>>>;

/// The merged tools at one moment, with their provider renderings computed
/// on first use: the tool set only changes when a host tool is registered,
/// which makes a new snapshot, so a rendering never goes stale.
#[derive(Default)]
struct Snapshot {
    /// Which rebuild made it (0: none yet): what a cache of something made
    /// from the tools (a gateway's `tools/list`) compares.
    generation: u64,
    tools: BTreeMap<String, Arc<Tool>>,
    rendered: [OnceLock<Vec<u8>>; 3],
    /// The OpenAI declarations as values, made on first use and shared by
    /// every run of this snapshot's tools (a client run used to build them
    /// again, schemas copied, for each run).
    declared: OnceLock<Arc<Vec<Value>>>,
}

impl std::ops::Deref for Snapshot {
    type Target = BTreeMap<String, Arc<Tool>>;
    fn deref(&self) -> &Self::Target {
        &self.tools
    }
}

impl Snapshot {
    /// The provider's rendering: written once and kept, then copied out.
    /// `p` is one [`adapter::style_of`] gives (any other renders nothing).
    fn render(&self, p: Style) -> Vec<u8> {
        let slot = match p {
            Style::OpenAi => 0,
            Style::Anthropic => 1,
            Style::Gemini => 2,
            Style::Responses => return Vec::new(),
        };
        let text = self.rendered[slot].get_or_init(|| {
            let tools: Vec<&Tool> = self.tools.values().map(|t| &**t).collect();
            adapter::render_bytes(p, &tools).unwrap_or_default()
        });
        // A copy with room for the NUL a C caller gets (`clone` would leave
        // none, and handing it out would move all of it once more).
        let mut copy = Vec::with_capacity(text.len() + 1);
        copy.extend_from_slice(text);
        copy
    }
}

/// A built toolkit. Every method takes `&self` and is safe to call from many
/// threads at once; no lock is held while a tool runs.
pub struct Toolkit {
    layers: Layers,
    native: Mutex<Vec<Arc<Tool>>>,
    /// Tools added to the A2A layer after the build (`add_agent`).
    grown: Mutex<Vec<Arc<Tool>>>,
    tools: RwLock<Arc<Snapshot>>,
    disable_tools: Vec<String>,
    max_part_bytes: Option<u64>,
    catalog: Option<Arc<skill::Catalog>>,
    status: Status,
    /// The MCP sessions; dropping the toolkit closes them and ends every
    /// child process tree.
    sessions: Mutex<crate::mcp::McpSessions>,
    /// The MCP layer as the servers list it now (their `list_changed`
    /// changes it), and the tools generation the snapshot was made from.
    mcp_live: Option<Arc<crate::mcp::Live>>,
    mcp_seen: AtomicU64,
    /// How many snapshots were made (each one's [`Snapshot::generation`]).
    rebuilds: AtomicU64,
    /// Naming warnings of a gateway serving this toolkit (its
    /// `mcpServer.unprefixed` names), as of its last look at the tools.
    served_warnings: Mutex<Vec<String>>,
}

impl std::fmt::Debug for Toolkit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Toolkit")
            .field("tools", &self.tool_names())
            .finish()
    }
}

impl Toolkit {
    /// Builds a toolkit from config JSON text.
    pub fn build_from_json(text: &str) -> Result<Toolkit> {
        Toolkit::build(&ToolkitConfig::from_json_text(text)?)
    }

    /// Builds a toolkit. A failing source never fails the build: it shows up
    /// in the status.
    pub fn build(cfg: &ToolkitConfig) -> Result<Toolkit> {
        Toolkit::build_with(cfg, &BuildOptions::default())
    }

    /// [`Toolkit::build`] with host extensions: a cancel token, a skill
    /// provider and a `waitFor` for MCP elicitation (see [`BuildOptions`]).
    /// A cancelled build is the `cancelled` error, and leaves nothing
    /// running.
    pub fn build_with(cfg: &ToolkitConfig, opts: &BuildOptions) -> Result<Toolkit> {
        if opts.cancelled() {
            return Err(build_cancelled("before it started"));
        }
        let mut build = Build::new(cfg, opts);
        let mut layers = Vec::with_capacity(SOURCES.len());
        for source in SOURCES {
            layers.push(source.load(&mut build)?);
        }
        let Build {
            status,
            catalog,
            sessions,
            ..
        } = build;
        let mcp_live = sessions.live();
        let tk = Toolkit {
            layers,
            native: Mutex::new(Vec::new()),
            grown: Mutex::new(Vec::new()),
            tools: RwLock::new(Arc::new(Snapshot::default())),
            disable_tools: cfg.disable_tools.clone(),
            max_part_bytes: cfg.max_part_bytes,
            catalog,
            status,
            sessions: Mutex::new(sessions),
            mcp_live,
            mcp_seen: AtomicU64::new(0),
            rebuilds: AtomicU64::new(0),
            served_warnings: Mutex::new(Vec::new()),
        };
        tk.rebuild();
        Ok(tk)
    }

    /// Recomputes the merged, name-sorted tool map: each source of
    /// [`SOURCES`] in turn, a later one winning a name (builtin < skill <
    /// http < relay < a2a < native < mcp), then `disableTools` removed.
    /// The MCP layer comes from the live one (see [`Toolkit::snapshot`]).
    /// Rebuilds are serialized by the host functions' lock.
    fn rebuild(&self) {
        let native = self.native.lock().unwrap_or_else(PoisonError::into_inner);
        let grown = self.grown.lock().unwrap_or_else(PoisonError::into_inner);
        let live = self.mcp_live.as_ref().map(|l| l.tools());
        let mut map = BTreeMap::new();
        for (source, layer) in SOURCES.iter().zip(&self.layers) {
            let tools = match &live {
                Some((_, tools)) if source.live() => &tools[..],
                _ if source.registered_later() => &native[..],
                _ => &layer[..],
            };
            let more = if source.grows_later() {
                &grown[..]
            } else {
                &[]
            };
            for t in tools.iter().chain(more) {
                map.insert(t.name.clone(), Arc::clone(t));
            }
        }
        for name in &self.disable_tools {
            map.remove(name);
        }
        *self.tools.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(Snapshot {
            generation: self.rebuilds.fetch_add(1, Ordering::Relaxed) + 1,
            tools: map,
            rendered: Default::default(),
            declared: OnceLock::new(),
        });
        if let Some((generation, _)) = live {
            self.mcp_seen.store(generation, Ordering::Release);
        }
    }

    /// Closes every MCP session now (also done on drop). Idempotent.
    pub fn close(&self) {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .close();
    }

    /// The live MCP servers, for the gateway to pass their resources,
    /// prompts, completions and logging through (empty once closed).
    pub fn mcp_upstreams(&self) -> crate::mcp::Upstreams {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .upstreams()
    }

    /// `(toolkit name, the tool's own name on its MCP server)` of every MCP
    /// tool.
    pub fn mcp_origins(&self) -> Vec<(String, String)> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .origins()
    }

    /// How many times the MCP tools changed since the build (0 without MCP
    /// servers): what a cache of something made from them is keyed on.
    pub fn mcp_tools_generation(&self) -> u64 {
        self.mcp_live.as_ref().map_or(0, |l| l.tools_generation())
    }

    /// Sets the naming warnings of a gateway serving this toolkit, shown in
    /// `status.warnings` (replacing the ones it set before).
    pub fn set_served_warnings(&self, warnings: Vec<String>) {
        *self
            .served_warnings
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = warnings;
    }

    /// The process ids of the MCP servers this toolkit started and still owns.
    pub fn mcp_pids(&self) -> Vec<u32> {
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pids()
    }

    /// Adds (or replaces) a host-registered tool.
    pub fn register(&self, tool: Tool) {
        {
            let mut native = self.native.lock().unwrap_or_else(PoisonError::into_inner);
            native.retain(|t| t.name != tool.name);
            native.push(Arc::new(tool));
        }
        self.rebuild();
    }

    /// Registers a remote A2A agent's tools on the built toolkit (SPEC §7A
    /// `addAgent`): the card is fetched now, and a tool whose name the
    /// toolkit already has is skipped (the first of a name wins). Answers
    /// `{"agent", "added": [names], "skipped": [names], "warnings": [..]}`;
    /// a card that cannot be fetched or read is the `invalid_argument`
    /// error, a cancelled fetch the `cancelled` one.
    pub fn add_agent(
        &self,
        agent: &crate::a2a_tool::Agent,
        cancel: Option<&crate::cancel::CancelToken>,
    ) -> Result<Value> {
        let loaded = crate::a2a_tool::agent_tools(agent, cancel);
        if cancel.is_some_and(crate::cancel::CancelToken::is_cancelled) {
            return Err(Error::new(
                ErrorCode::Cancelled,
                format!("adding the agent {} was cancelled", agent.card),
            ));
        }
        let loaded = loaded.map_err(Error::invalid_argument)?;
        let (mut added, mut skipped) = (Vec::new(), Vec::new());
        {
            let have = self.snapshot();
            let mut grown = self.grown.lock().unwrap_or_else(PoisonError::into_inner);
            for tool in loaded.tools {
                if have.contains_key(&tool.name) || grown.iter().any(|t| t.name == tool.name) {
                    skipped.push(tool.name);
                } else {
                    added.push(tool.name.clone());
                    grown.push(Arc::new(tool));
                }
            }
        }
        self.rebuild();
        Ok(serde_json::json!({
            "agent": agent.card,
            "added": added,
            "skipped": skipped,
            "warnings": loaded.warnings,
        }))
    }

    /// The tools now: made again first when an MCP server's tools changed
    /// since the last one (one atomic load per call otherwise).
    fn snapshot(&self) -> Arc<Snapshot> {
        if let Some(live) = &self.mcp_live {
            if live.tools_generation() != self.mcp_seen.load(Ordering::Acquire) {
                self.rebuild();
            }
        }
        Arc::clone(&self.tools.read().unwrap_or_else(PoisonError::into_inner))
    }

    /// How many times each kind of MCP list changed since the build, and a
    /// receiver that hears every later change (the gateway passes them on
    /// to its clients); `None` without MCP servers.
    pub fn mcp_changes(&self) -> Option<tokio::sync::watch::Receiver<crate::mcp::Generations>> {
        self.mcp_live.as_ref().map(|l| l.subscribe())
    }

    /// Tool names in code-point order.
    pub fn tool_names(&self) -> Vec<String> {
        self.snapshot().keys().cloned().collect()
    }

    /// Every tool in name order, as the toolkit has them now.
    pub fn tools(&self) -> Vec<Tool> {
        self.snapshot().values().map(|t| Tool::clone(t)).collect()
    }

    /// Every tool in name order, shared (no copy of any), with the
    /// generation of the tool set they come from: a later registration,
    /// removal or MCP list change gives another generation.
    pub fn tools_shared(&self) -> (u64, Vec<Arc<Tool>>) {
        let snap = self.snapshot();
        (snap.generation, snap.values().cloned().collect())
    }

    /// The generation [`Toolkit::tools_shared`] gives for the tools now.
    pub fn tools_generation(&self) -> u64 {
        self.snapshot().generation
    }

    /// The skills the skill source serves, in its order: `(name,
    /// description or "")` (what a served A2A card advertises, SPEC §7B).
    pub fn skill_infos(&self) -> Vec<(String, String)> {
        self.catalog.as_ref().map_or_else(Vec::new, |c| {
            c.loaded()
                .map(|s| (s.name.clone(), s.description.clone().unwrap_or_default()))
                .collect()
        })
    }

    /// The skills prompt (SPEC §3).
    pub fn skills_prompt(&self) -> String {
        match &self.catalog {
            Some(c) => c.prompt(),
            None => skill::NO_SKILLS.to_string(),
        }
    }

    /// Whether the toolkit was given a skill source (`skillsDir` or `skills`),
    /// even one that loaded no skill.
    pub fn has_skill_source(&self) -> bool {
        self.catalog.is_some()
    }

    /// The OpenAI declarations of every tool, for translate.
    pub fn openai_declarations(&self) -> Vec<Value> {
        Vec::clone(&self.openai_declared())
    }

    /// [`Toolkit::openai_declarations`], made once per tool set (a
    /// registration or an MCP list change makes a new one) and shared.
    pub fn openai_declared(&self) -> Arc<Vec<Value>> {
        let snap = self.snapshot();
        let made = snap.declared.get_or_init(|| {
            let tools: Vec<&Tool> = snap.values().map(|t| &**t).collect();
            Arc::new(adapter::openai_values(&tools))
        });
        Arc::clone(made)
    }

    /// `tn_render`: a format name, or JSON text `{"format": F, "tools": [names]}`
    /// rendering exactly those tools in that order.
    pub fn render(&self, format: &str) -> Result<String> {
        if let Some(p) = adapter::style_of(format) {
            let text = self.snapshot().render(p);
            // Always UTF-8 (see `adapter::render_bytes`).
            return Ok(String::from_utf8(text)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()));
        }
        self.render_other(format)
    }

    /// [`Toolkit::render`] as the bytes of its UTF-8 text, for `tn_render`:
    /// a provider rendering goes out as written, with no second pass over
    /// it to check what the writer guarantees.
    pub fn render_bytes(&self, format: &str) -> Result<Vec<u8>> {
        match adapter::style_of(format) {
            Some(p) => Ok(self.snapshot().render(p)),
            None => self.render_other(format).map(String::into_bytes),
        }
    }

    /// Every format but a bare provider name.
    fn render_other(&self, format: &str) -> Result<String> {
        if format.trim_start().starts_with('{') {
            return self.render_subset(format);
        }
        let snap = self.snapshot();
        let v = match format {
            "toolNames" => json!(snap.keys().collect::<Vec<_>>()),
            "skillsPrompt" => json!(self.skills_prompt()),
            "tools" => Value::Array(snap.values().map(|t| t.declaration()).collect()),
            "status" => self.status_json(),
            "skills" => match &self.catalog {
                Some(c) => c.loaded_json(),
                None => skill::Catalog::default().loaded_json(),
            },
            "skillsInventory" => match &self.catalog {
                Some(c) => c.inventory_json(),
                None => skill::Catalog::default().inventory_json(),
            },
            other => {
                return Err(Error::new(
                    ErrorCode::UnknownFormat,
                    format!(
                        "unknown render format '{other}' (expected openai, anthropic, gemini, \
                         toolNames, skillsPrompt, tools, status, skills or skillsInventory)"
                    ),
                ))
            }
        };
        Ok(v.to_string())
    }

    fn render_subset(&self, spec: &str) -> Result<String> {
        let v: Value =
            serde_json::from_str(spec).map_err(|e| Error::invalid_json("render format", &e))?;
        let format = match v.get("format") {
            Some(Value::String(s)) => s.as_str(),
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "format: expected a string, got {}",
                    type_name(other)
                )))
            }
            None => return Err(Error::invalid_argument("format: missing")),
        };
        if let Some(k) = v
            .as_object()
            .and_then(|o| o.keys().find(|k| *k != "format" && *k != "tools"))
        {
            return Err(Error::invalid_argument(format!(
                "unknown key '{k}' in render format (expected format, tools)"
            )));
        }
        let Some(provider) = adapter::style_of(format) else {
            if v.get("tools").is_none() {
                return self.render(format);
            }
            return Err(Error::new(
                ErrorCode::UnknownFormat,
                format!(
                    "an explicit tool list renders as openai, anthropic or gemini, not '{format}'"
                ),
            ));
        };
        let snap = self.snapshot();
        let tools: Vec<&Tool> = match v.get("tools") {
            None | Some(Value::Null) => snap.values().map(|t| &**t).collect(),
            Some(Value::Array(names)) => names
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let name = n.as_str().ok_or_else(|| {
                        Error::invalid_argument(format!(
                            "tools[{i}]: expected a tool name, got {}",
                            type_name(n)
                        ))
                    })?;
                    snap.get(name).map(|t| &**t).ok_or_else(|| {
                        Error::invalid_argument(format!("tools[{i}]: no tool named '{name}'"))
                    })
                })
                .collect::<Result<_>>()?,
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "tools: expected an array of tool names, got {}",
                    type_name(other)
                )))
            }
        };
        Ok(adapter::render(provider, &tools).unwrap_or_default())
    }

    fn status_json(&self) -> Value {
        let pairs = |v: &[(String, String)]| {
            Value::Object(
                v.iter()
                    .map(|(k, s)| (k.clone(), Value::String(s.clone())))
                    .collect::<Map<_, _>>(),
            )
        };
        let skipped: Vec<Value> = self
            .catalog
            .as_ref()
            .map(|c| c.skipped.iter().map(skill::Skip::to_json).collect())
            .unwrap_or_default();
        let mut errors = self.status.errors.clone();
        let mut warnings = self.status.warnings.clone();
        let mut generation = 0;
        if let Some(live) = &self.mcp_live {
            // A re-list that failed (its tools kept) is the server's error
            // until one answers; naming warnings of the tools served now.
            for (server, message) in live.failures() {
                errors.retain(|(k, _)| *k != server);
                errors.push((server, message));
            }
            for w in live.warnings() {
                if !warnings.contains(&w) {
                    warnings.push(w);
                }
            }
            generation = live.tools_generation();
        }
        for w in self
            .served_warnings
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            if !warnings.contains(w) {
                warnings.push(w.clone());
            }
        }
        json!({
            "statuses": pairs(&self.status.statuses),
            "errors": pairs(&errors),
            "skipped": skipped,
            "warnings": warnings,
            "protocolVersions": pairs(&self.status.protocols),
            "toolsGeneration": generation,
        })
    }

    /// The source of the tool `name`, if the toolkit has one of that name
    /// (what the §8 `tool` metric is labelled with).
    pub fn source_of(&self, name: &str) -> Option<crate::tool::Source> {
        self.snapshot().get(name).map(|t| t.source)
    }

    /// Runs the tool `name`. An unknown name, and a tool that panics, are
    /// isError results.
    pub fn execute(&self, name: &str, args: Value, ctx: &ExecContext) -> ToolResult {
        self.execute_borrowed(name, &args, ctx)
    }

    /// [`Toolkit::execute`] of borrowed arguments, which are not copied
    /// when they are an object (the loop keeps its calls' arguments for
    /// its hooks and its transcript).
    pub fn execute_borrowed(&self, name: &str, args: &Value, ctx: &ExecContext) -> ToolResult {
        // Hold the snapshot (not the lock) for the call and borrow the tool
        // from it: no lock across the call, and no copy of the declaration.
        let tools = self.snapshot();
        let Some(tool) = tools.get(name) else {
            return ToolResult::error(format!("unknown tool: {name}"));
        };
        self.run_args(tool, args, ctx)
    }

    /// The tool called `name`, as the toolkit has it now, held for one call
    /// ([`Toolkit::execute_found`], [`Toolkit::execute_found_text`]).
    pub fn find(&self, name: &str) -> Option<Arc<Tool>> {
        self.snapshot().get(name).cloned()
    }

    /// [`Toolkit::execute`] of a tool [`Toolkit::find`] gave.
    pub fn execute_found(&self, tool: &Tool, args: Value, ctx: &ExecContext) -> ToolResult {
        self.run_args(tool, &args, ctx)
    }

    /// Runs `tool` on `args` normalized (borrowed when already an object),
    /// its deadline counted from here.
    fn run_args(&self, tool: &Tool, args: &Value, ctx: &ExecContext) -> ToolResult {
        self.run(tool, &normalized_args(args), &ctx.armed())
    }

    /// The ToolResult JSON text of [`Toolkit::execute_found`] for arguments
    /// given as JSON text, when the tool writes it straight from the text
    /// ([`crate::tool::Execute::execute_json_text`]); `None` when it does
    /// not, and the caller parses the text and calls `execute_found`.
    pub fn execute_found_text(
        &self,
        tool: &Tool,
        args: &str,
        ctx: &ExecContext,
    ) -> Option<Vec<u8>> {
        let ctx = ctx.armed();
        match catch_unwind(AssertUnwindSafe(|| tool.exec.execute_json_text(args, &ctx))) {
            Ok(text) => text,
            Err(panic) => Some(failed(tool, &panic).into_json_bytes()),
        }
    }

    /// Runs `tool` with arguments already normalized and a deadline already
    /// fixed; a panic is an isError result.
    fn run(&self, tool: &Tool, args: &Value, ctx: &ExecContext) -> ToolResult {
        match catch_unwind(AssertUnwindSafe(|| tool.exec.execute(args, ctx))) {
            Ok(r) => self.limit_parts(r),
            Err(panic) => failed(tool, &panic),
        }
    }
}

/// The isError result of a tool that panicked.
fn failed(tool: &Tool, panic: &Box<dyn std::any::Any + Send>) -> ToolResult {
    ToolResult::error(format!(
        "{}: the tool failed unexpectedly: {}",
        tool.name,
        panic_message(panic)
    ))
}

impl Toolkit {
    /// [`Toolkit::execute`] for a caller on the library's runtime (the
    /// served toolkit): a tool with an async form (an MCP tool) is awaited
    /// right here, with no thread hop; any other tool runs on the runtime's
    /// blocking pool, so a slow one never holds up a runtime thread. Same
    /// results as `execute`: an unknown name and a panic are isError results.
    pub async fn execute_on_runtime(
        self: &Arc<Self>,
        name: &str,
        args: Value,
        ctx: &ExecContext,
    ) -> ToolResult {
        let tools = self.snapshot();
        let Some(tool) = tools.get(name) else {
            return ToolResult::error(format!("unknown tool: {name}"));
        };
        // Shared with the blocking pool when the tool has no async form.
        let args = Arc::new(normalize_args(args));
        let armed = ctx.armed();
        let ctx: &ExecContext = &armed;
        let failed = |panic: &Box<dyn std::any::Any + Send>| {
            ToolResult::error(format!(
                "{name}: the tool failed unexpectedly: {}",
                panic_message(panic)
            ))
        };
        let offered = catch_unwind(AssertUnwindSafe(|| tool.exec.execute_async(&args, ctx)));
        let call = match offered {
            Ok(Some(call)) => call,
            Ok(None) => {
                let (toolkit, tools) = (Arc::clone(self), Arc::clone(&tools));
                let (tool, args, ctx) = (name.to_string(), Arc::clone(&args), ctx.clone());
                let job = tokio::task::spawn_blocking(move || match tools.get(&tool) {
                    Some(t) => toolkit.run(t, &args, &ctx),
                    None => ToolResult::error(format!("unknown tool: {tool}")),
                });
                return job.await.unwrap_or_else(|e| {
                    ToolResult::error(format!("{name}: the tool failed unexpectedly: {e}"))
                });
            }
            Err(panic) => return failed(&panic),
        };
        match CatchUnwind(call).await {
            Ok(r) => self.limit_parts(r),
            Err(panic) => failed(&panic),
        }
    }

    /// Runs several calls at once on the calling thread, when every one is
    /// a tool that runs as a future ([`crate::tool::Execute::execute_async`]:
    /// MCP tools): no thread per call, one wait for all of them. Each result
    /// comes as [`Toolkit::execute`] would give it, with the instant it was
    /// ready, in call order. `None` — nothing has run then — when a name is
    /// unknown, a tool has no future form, or the caller is a thread of the
    /// library's runtime; the caller runs the calls its own way.
    pub fn execute_concurrently(
        &self,
        calls: &[(&str, &Value)],
        ctx: &ExecContext,
    ) -> Option<Vec<(ToolResult, std::time::Instant)>> {
        if tokio::runtime::Handle::try_current().is_ok() {
            return None;
        }
        let tools = self.snapshot();
        let ctx = &*ctx.armed();
        let mut picked = Vec::with_capacity(calls.len());
        for (name, args) in calls {
            picked.push((tools.get(*name)?, normalized_args(args)));
        }
        let mut futures = Vec::with_capacity(calls.len());
        for (tool, args) in &picked {
            let future = catch_unwind(AssertUnwindSafe(|| tool.exec.execute_async(args, ctx)));
            futures.push(future.ok().flatten()?);
        }
        let outcomes = crate::runtime::block_on(join_in_order(futures));
        Some(
            calls
                .iter()
                .zip(outcomes)
                .map(|((name, _), (outcome, ready))| {
                    let result = match outcome {
                        Ok(r) => self.limit_parts(r),
                        Err(panic) => ToolResult::error(format!(
                            "{name}: the tool failed unexpectedly: {}",
                            panic_message(&panic)
                        )),
                    };
                    (result, ready)
                })
                .collect(),
        )
    }

    /// `maxPartBytes` (SPEC §1B): a part over the limit is taken out of the
    /// result, and the output says which and why; the rest of the result is
    /// kept as the tool gave it.
    fn limit_parts(&self, mut r: ToolResult) -> ToolResult {
        let Some(limit) = self.max_part_bytes else {
            return r;
        };
        if r.parts.iter().all(|p| p.byte_len() as u64 <= limit) {
            return r;
        }
        let mut notes = Vec::new();
        let mut parts = std::mem::take(&mut r.parts).into_vec();
        parts.retain(|p| {
            let keep = p.byte_len() as u64 <= limit;
            if !keep {
                notes.push(format!(
                    "[{} part dropped: {}]",
                    p.kind.as_str(),
                    crate::parts::over_limit_message(p.byte_len(), limit)
                ));
            }
            keep
        });
        r.parts = parts.into_boxed_slice();
        for note in notes {
            if !r.output.is_empty() {
                r.output.push('\n');
            }
            r.output.push_str(&note);
        }
        r
    }
}

/// What one future of [`join_in_order`] came to: its output or its panic,
/// and when.
type Joined = (std::thread::Result<ToolResult>, std::time::Instant);

/// Polls every future until all are ready (a panic in one ends only that
/// one); the outcomes in the futures' order.
async fn join_in_order(mut futures: Vec<crate::tool::ToolFuture<'_>>) -> Vec<Joined> {
    use std::task::Poll;
    let mut done: Vec<Option<Joined>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut waiting = false;
        for (future, slot) in futures.iter_mut().zip(done.iter_mut()) {
            if slot.is_some() {
                continue;
            }
            match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
                Ok(Poll::Pending) => waiting = true,
                Ok(Poll::Ready(r)) => *slot = Some((Ok(r), std::time::Instant::now())),
                Err(panic) => *slot = Some((Err(panic), std::time::Instant::now())),
            }
        }
        if waiting {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    done.into_iter().flatten().collect()
}

/// Parses the optional execute context `{"timeoutMs": n, "answer": {...}}`.
pub fn parse_context(text: Option<&str>) -> Result<ExecContext> {
    let Some(text) = text else {
        return Ok(ExecContext::default());
    };
    let v: Value =
        serde_json::from_str(text).map_err(|e| Error::invalid_json("execute context", &e))?;
    let obj = match &v {
        Value::Null => return Ok(ExecContext::default()),
        Value::Object(o) => o,
        other => {
            return Err(Error::invalid_argument(format!(
                "execute context: expected an object, got {}",
                type_name(other)
            )))
        }
    };
    let mut ctx = ExecContext::default();
    for (k, val) in obj {
        match k.as_str() {
            "timeoutMs" => match val {
                Value::Null => {}
                v => {
                    ctx.timeout_ms = Some(v.as_u64().ok_or_else(|| {
                        Error::invalid_argument(format!(
                            "timeoutMs: expected a non-negative integer, got {v}"
                        ))
                    })?)
                }
            },
            "answer" => match val {
                Value::Null => {}
                a @ Value::Object(_) => {
                    // An answer's output is a string (upstream D4, #89).
                    crate::answer::check(a)?;
                    ctx.answer = Some(a.clone());
                }
                other => {
                    return Err(Error::invalid_argument(format!(
                        "answer: expected an object {{id, ok, data?, reason?}}, got {}",
                        type_name(other)
                    )))
                }
            },
            other => {
                return Err(Error::invalid_argument(format!(
                    "unknown key '{other}' in execute context (expected timeoutMs, answer)"
                )))
            }
        }
    }
    Ok(ctx)
}

/// A tool's future with its panics caught: a tool that panics while it is
/// polled ends as an error result, as one that panics in `execute` does.
struct CatchUnwind<'a>(crate::tool::ToolFuture<'a>);

impl std::future::Future for CatchUnwind<'_> {
    type Output = std::result::Result<ToolResult, Box<dyn std::any::Any + Send>>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        let call = &mut self.get_mut().0;
        match catch_unwind(AssertUnwindSafe(|| call.as_mut().poll(cx))) {
            Ok(std::task::Poll::Ready(r)) => std::task::Poll::Ready(Ok(r)),
            Ok(std::task::Poll::Pending) => std::task::Poll::Pending,
            Err(panic) => std::task::Poll::Ready(Err(panic)),
        }
    }
}
