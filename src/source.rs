//! Tool sources (issue 24, item 4): every place tools come from implements
//! [`ToolSource`], and [`SOURCES`] lists them in their precedence (CONTRACT
//! §3: when two sources offer one name, MCP wins over host functions, over
//! HTTP tools, over skills, over builtins). `Toolkit::build_with` walks the
//! list; adding a source (A2A, agents) is one module implementing the trait
//! and one line in the list.

use crate::builtin;
use crate::cancel::CancelToken;
use crate::config::{self, ToolkitConfig};
use crate::error::{panic_message, Error, ErrorCode, Result};
use crate::json::type_name;
use crate::mcp::{McpConfig, McpSessions};
use crate::skill;
use crate::tool::Tool;
use serde_json::Value;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// What `tn_render(tk, "status")` reports.
#[derive(Debug, Default, Clone)]
pub struct Status {
    pub statuses: Vec<(String, String)>,
    pub errors: Vec<(String, String)>,
    pub warnings: Vec<String>,
    /// connected MCP server → the protocol revision it negotiated.
    pub protocols: Vec<(String, String)>,
}

/// A host callback supplying skills as data at build time (SPEC §3 S1): it
/// answers a JSON array of skill objects, the shape the `skills` config key
/// takes (`{name, description?, content?, resources?, base?}`), or a message
/// saying why it could not. Called once per build, on the building thread.
pub type SkillProvider = Arc<dyn Fn() -> std::result::Result<Value, String> + Send + Sync>;

/// What a host adds to a build beyond the config (`Toolkit::build_with`).
/// `Default` is a plain build; new fields keep that meaning when unset.
#[derive(Clone, Default)]
pub struct BuildOptions {
    /// Triggered from any thread, it ends the build promptly with the
    /// `cancelled` error: MCP connects in flight are dropped (each child
    /// process group killed and reaped, each request ended) and skill
    /// loading stops.
    pub cancel: Option<CancelToken>,
    /// Skills supplied by the host, loaded after the `skills` config entries
    /// (directory skills first, then `skills`, then these; the first of a
    /// name wins). A provider that fails or panics fails neither the build
    /// nor the other skill sources: its message is the status error
    /// `skillProvider`.
    pub skill_provider: Option<SkillProvider>,
    /// The host's §10 `waitFor` for the MCP elicitation bridge (SPEC §2,
    /// [`crate::mcp::elicit`]): with one, every MCP server is told the client
    /// supports `elicitation` (form and URL mode), and a server's question
    /// during a tool call is answered through it while the call waits;
    /// without one the capability is not advertised.
    pub wait_for: Option<crate::mcp::WaitFor>,
    /// The host's `authorize` for MCP authorization (OAuth 2.1,
    /// [`crate::mcp::auth`]): the browser step — the authorization URL in
    /// the event `{server, url, redirectUri, resource}`, the URL the
    /// authorization server redirected to as the answer. With one, a remote
    /// server that answers `401` is authorized (servers with an `auth`
    /// setting are either way); [`crate::mcp::auth::headless`] completes it
    /// without a browser for servers that consent at once.
    pub authorize: Option<crate::mcp::Authorize>,
    /// The host's `toolsChanged`: after an MCP server announced
    /// `notifications/tools/list_changed` and its tools, listed again,
    /// differ from those served, the event `{server, added, removed,
    /// tools, generation}` (toolkit names; [`crate::mcp::ToolsChanged`]).
    pub tools_changed: Option<crate::mcp::ToolsChanged>,
}

impl BuildOptions {
    pub fn with_cancel(mut self, cancel: CancelToken) -> Self {
        self.cancel = Some(cancel);
        self
    }

    pub fn with_skill_provider(
        mut self,
        provider: impl Fn() -> std::result::Result<Value, String> + Send + Sync + 'static,
    ) -> Self {
        self.skill_provider = Some(Arc::new(provider));
        self
    }

    pub fn with_wait_for(
        mut self,
        wait_for: impl Fn(&Value, &CancelToken) -> std::result::Result<Value, String>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.wait_for = Some(Arc::new(wait_for));
        self
    }

    pub fn with_authorize(
        mut self,
        authorize: impl Fn(&Value, &CancelToken) -> std::result::Result<String, String>
            + Send
            + Sync
            + 'static,
    ) -> Self {
        self.authorize = Some(Arc::new(authorize));
        self
    }

    pub fn with_tools_changed(mut self, f: impl Fn(&Value) + Send + Sync + 'static) -> Self {
        self.tools_changed = Some(Arc::new(f));
        self
    }

    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.as_ref().is_some_and(CancelToken::is_cancelled)
    }
}

impl std::fmt::Debug for BuildOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BuildOptions")
            .field("cancel", &self.cancel)
            .field("skill_provider", &self.skill_provider.is_some())
            .field("wait_for", &self.wait_for.is_some())
            .field("authorize", &self.authorize.is_some())
            .field("tools_changed", &self.tools_changed.is_some())
            .finish()
    }
}

/// The error of a cancelled build.
pub(crate) fn build_cancelled(during: &str) -> Error {
    Error::new(
        ErrorCode::Cancelled,
        format!("the toolkit build was cancelled ({during})"),
    )
}

/// The status error key of a failing skill provider.
pub const SKILL_PROVIDER_KEY: &str = "skillProvider";

/// Calls the provider and checks its answer's shape; a panic is a failure.
pub(crate) fn provided_skills(provider: &SkillProvider) -> std::result::Result<Vec<Value>, String> {
    let answer = match catch_unwind(AssertUnwindSafe(|| provider())) {
        Ok(Ok(v)) => v,
        Ok(Err(message)) => return Err(format!("skill provider failed: {message}")),
        Err(panic) => {
            return Err(format!(
                "skill provider failed: it panicked: {}",
                panic_message(&panic)
            ))
        }
    };
    let items = match answer {
        Value::Array(items) => items,
        Value::Null => return Ok(Vec::new()),
        other => {
            return Err(format!(
                "skill provider: expected an array of skill objects, got {}",
                type_name(&other)
            ))
        }
    };
    if let Some((i, bad)) = items.iter().enumerate().find(|(_, d)| !d.is_object()) {
        return Err(format!(
            "skill provider: skills[{i}]: expected an object, got {}",
            type_name(bad)
        ));
    }
    Ok(items)
}

/// What the sources of one build share: the config and options, the
/// parsed MCP config (read by two sources), and what the toolkit keeps
/// besides the tools.
pub(crate) struct Build<'a> {
    pub cfg: &'a ToolkitConfig,
    pub opts: &'a BuildOptions,
    pub mcp: Option<McpConfig>,
    pub status: Status,
    pub catalog: Option<Arc<skill::Catalog>>,
    pub sessions: McpSessions,
}

impl<'a> Build<'a> {
    /// Parses the MCP config first: its top-level `builtins` key applies
    /// when the toolkit config has none (divergences.json).
    pub fn new(cfg: &'a ToolkitConfig, opts: &'a BuildOptions) -> Build<'a> {
        let mut status = Status::default();
        let mcp = match &cfg.mcp_config {
            None => None,
            Some(v) => match crate::mcp::parse_config(v) {
                Ok(mut c) => {
                    c.set_wait_for(opts.wait_for.clone());
                    c.set_authorize(opts.authorize.clone());
                    Some(c)
                }
                Err(e) => {
                    status.errors.push(("<config>".into(), e.message));
                    None
                }
            },
        };
        Build {
            cfg,
            opts,
            mcp,
            status,
            catalog: None,
            sessions: McpSessions::default(),
        }
    }
}

/// A place tools come from.
pub(crate) trait ToolSource: Sync {
    /// The tools this source offers to the build. A failing source fails
    /// no build (it writes to `build.status`); `Err` is a bad config or a
    /// cancelled build.
    fn load(&self, build: &mut Build<'_>) -> Result<Vec<Arc<Tool>>>;

    /// Whether this source's tools are the host functions registered on
    /// the built toolkit (none at build time).
    fn registered_later(&self) -> bool {
        false
    }

    /// Whether tools may join this source's layer on the built toolkit
    /// (`Toolkit::add_agent`).
    fn grows_later(&self) -> bool {
        false
    }

    /// Whether this source's layer is the MCP servers' live one (their
    /// `list_changed` replaces it on the built toolkit).
    fn live(&self) -> bool {
        false
    }
}

/// Every source, lowest precedence first; a later one wins a name.
pub(crate) static SOURCES: [&dyn ToolSource; 7] = [
    &Builtins,
    &Skills,
    &HttpTools,
    &RelayTools,
    &A2a,
    &HostFunctions,
    &Mcp,
];

/// The built-in tools (SPEC §4A).
struct Builtins;

impl ToolSource for Builtins {
    fn load(&self, build: &mut Build<'_>) -> Result<Vec<Arc<Tool>>> {
        let builtins = build
            .cfg
            .builtins
            .as_ref()
            .or_else(|| build.mcp.as_ref().and_then(|m| m.builtins()));
        let selection = match builtins {
            Some(v) => config::builtin_selection(v)?,
            None => builtin::Selection::default(),
        };
        let tools = builtin::tools(&selection)
            .map_err(Error::invalid_config)?
            .into_iter()
            .map(Arc::new)
            .collect();
        let state = if selection.source_on {
            "connected"
        } else {
            "disabled"
        };
        build.status.statuses.push(("builtin".into(), state.into()));
        Ok(tools)
    }
}

/// The skills (SPEC §3): `skillsDir`, `skills` and the host's skill
/// provider, served by the one `skill` tool.
struct Skills;

impl ToolSource for Skills {
    fn load(&self, build: &mut Build<'_>) -> Result<Vec<Arc<Tool>>> {
        let opts = build.opts;
        let mut skill_opts = build.cfg.skills.clone();
        if let Some(provider) = &opts.skill_provider {
            let skill_opts = skill_opts.get_or_insert_with(skill::Options::default);
            match provided_skills(provider) {
                Ok(defs) => skill_opts.defs.extend(defs),
                Err(message) => {
                    crate::log::emit(crate::log::Level::Warn, "skills", || message.clone());
                    build
                        .status
                        .errors
                        .push((SKILL_PROVIDER_KEY.into(), message));
                }
            }
            if opts.cancelled() {
                return Err(build_cancelled("while the skill provider ran"));
            }
        }
        let Some(o) = &skill_opts else {
            return Ok(Vec::new());
        };
        let Some(cat) = skill::load_until(o, &|| opts.cancelled()) else {
            return Err(build_cancelled("while loading skills"));
        };
        let cat = Arc::new(cat);
        let status = &mut build.status;
        status.warnings.extend(cat.root_warnings.iter().cloned());
        for name in &cat.filter_unmatched {
            status
                .warnings
                .push(format!("skill filter name \"{name}\" matched no skill"));
        }
        build.catalog = Some(Arc::clone(&cat));
        Ok(vec![Arc::new(skill::tool(cat))])
    }
}

/// The declared HTTP endpoints (SPEC §7 `httpTools`).
struct HttpTools;

impl ToolSource for HttpTools {
    fn load(&self, build: &mut Build<'_>) -> Result<Vec<Arc<Tool>>> {
        let mut tools = Vec::new();
        for (i, decl) in build.cfg.http_tools.iter().enumerate() {
            match crate::http_tool::http_tool(i, decl) {
                Ok(t) => tools.push(Arc::new(t)),
                Err(e) => build
                    .status
                    .errors
                    .push((format!("httpTools[{i}]"), e.message)),
            }
        }
        Ok(tools)
    }
}

/// The declaration-only tools (SPEC §10 addendum `relayTools`): a bad
/// declaration, or one named like a built-in tool, fails the build (a relay
/// tool that silently went missing would leave the model calling nothing).
struct RelayTools;

impl ToolSource for RelayTools {
    fn load(&self, build: &mut Build<'_>) -> Result<Vec<Arc<Tool>>> {
        let tools = build
            .cfg
            .relay_tools
            .iter()
            .enumerate()
            .map(|(i, decl)| crate::relay_tool::relay_tool(i, decl))
            .collect::<Result<Vec<_>>>()?;
        crate::relay_tool::check_collisions(tools.iter().map(|t| t.name.as_str()))?;
        Ok(tools.into_iter().map(Arc::new).collect())
    }
}

/// The remote A2A agents (SPEC §7A): each card fetched (all at once, each
/// within its agent's timeout), one tool per skill. A failing agent is a
/// status error under its key and contributes no tools.
struct A2a;

impl ToolSource for A2a {
    fn load(&self, build: &mut Build<'_>) -> Result<Vec<Arc<Tool>>> {
        let agents = &build.cfg.agents;
        if agents.is_empty() {
            return Ok(Vec::new());
        }
        let cancel = build.opts.cancel.as_ref();
        let loaded: Vec<_> = std::thread::scope(|scope| {
            let jobs: Vec<_> = agents
                .iter()
                .map(|a| scope.spawn(move || crate::a2a_tool::agent_tools(a, cancel)))
                .collect();
            jobs.into_iter()
                .map(|j| {
                    j.join()
                        .unwrap_or_else(|p| Err(format!("it panicked: {}", panic_message(&p))))
                })
                .collect()
        });
        if build.opts.cancelled() {
            return Err(build_cancelled("while fetching A2A agent cards"));
        }
        let mut tools = Vec::new();
        for (agent, got) in agents.iter().zip(loaded) {
            match got {
                Ok(l) => {
                    build
                        .status
                        .statuses
                        .push((agent.key.clone(), "connected".into()));
                    build.status.warnings.extend(l.warnings);
                    tools.extend(l.tools.into_iter().map(Arc::new));
                }
                Err(message) => {
                    crate::log::emit(crate::log::Level::Warn, "a2a", || {
                        format!("{}: {message}", agent.key)
                    });
                    build
                        .status
                        .statuses
                        .push((agent.key.clone(), "failed".into()));
                    build.status.errors.push((agent.key.clone(), message));
                }
            }
        }
        Ok(tools)
    }

    fn grows_later(&self) -> bool {
        true
    }
}

/// The host functions (CONTRACT §7): registered on the built toolkit.
struct HostFunctions;

impl ToolSource for HostFunctions {
    fn load(&self, _: &mut Build<'_>) -> Result<Vec<Arc<Tool>>> {
        Ok(Vec::new())
    }

    fn registered_later(&self) -> bool {
        true
    }
}

/// The MCP servers' tools (SPEC §6).
struct Mcp;

impl ToolSource for Mcp {
    fn load(&self, build: &mut Build<'_>) -> Result<Vec<Arc<Tool>>> {
        if build.opts.cancelled() {
            return Err(build_cancelled("before connecting MCP servers"));
        }
        let Some(m) = &build.mcp else {
            return Ok(Vec::new());
        };
        let opts = build.opts;
        let connected =
            crate::mcp::connect_cancellable(m, opts.cancel.as_ref(), opts.tools_changed.clone());
        let Some(src) = connected else {
            return Err(build_cancelled("while connecting MCP servers"));
        };
        build.status.statuses.extend(src.statuses);
        build.status.errors.extend(src.errors);
        build.status.protocols.extend(src.protocols);
        build.status.warnings.extend(src.warnings);
        build.sessions = src.sessions;
        Ok(src.tools.into_iter().map(Arc::new).collect())
    }

    fn live(&self) -> bool {
        true
    }
}
