//! The caps, each defined once. The size caps are 64 MiB: large enough for
//! any honest answer, small enough that no server, provider, pipe or file can
//! make a call hold unbounded memory in the host's process. Passing a cap
//! fails the one call (or skips the one line) as soon as the cap is passed,
//! without ever holding more than it.

/// One HTTP response body read whole: an HTTP tool's answer, a provider's
/// answer (translate and the client loop), a webfetch page, an MCP
/// streamable-HTTP JSON response; also the text an ACP agent's turn
/// gathers from its message chunks (`provider::acp`).
pub const RESPONSE_BODY_BYTES: usize = 64 << 20;

/// One server-sent event (or one line of it): the client loop's provider
/// stream and MCP's SSE legs.
pub const EVENT_BYTES: usize = 64 << 20;

/// One JSON-RPC line on a stdio pipe, either direction: what the MCP client
/// keeps of a server's line and what the served toolkit accepts; a longer
/// line is dropped (the server answers it as invalid). An ACP agent's
/// lines (`provider::acp`) are held to it too: a longer one is skipped.
pub const LINE_BYTES: usize = 64 << 20;

/// The most bytes the file tools (`read`, `edit`, `apply_patch`) load from
/// one file; a larger file is an error result. `toolnexus count-tokens`
/// reads its request (a file or stdin) to this cap too.
pub const FILE_BYTES: u64 = 64 << 20;

/// One request body to the routes served beside `/mcp` (the A2A agent's
/// JSON-RPC, whose messages may carry files); a larger one is answered 413
/// without being held whole. A server's `maxRequestBytes`, when the host
/// sets it, lowers this cap too (`ServeLimits::beside_bytes`).
pub const SERVED_REQUEST_BYTES: usize = 64 << 20;

/// One request body to the served toolkit's `/mcp` by default, and the most
/// `maxRequestBytes` raises it to over HTTP: rmcp's own limit, which the
/// plain path keeps too. On stdio the cap is [`LINE_BYTES`].
pub const HTTP_REQUEST_BYTES: usize = 4 << 20;

/// The `tools/call`s a served toolkit runs at once by default
/// (`maxCallsInFlight`); one past it is answered "server busy" at once.
pub const CALLS_IN_FLIGHT: usize = 64;

/// The redirects one HTTP request follows (an HTTP tool, a provider call,
/// webfetch) before it fails.
pub const REDIRECTS: usize = 10;

/// The longest path a file builtin takes (`path` of read, write, edit, grep
/// and glob; bash's `workdir`): Linux's PATH_MAX. A longer one names no
/// file, and is refused with its first bytes only, so an error never
/// echoes a path of megabytes back to the model.
pub const PATH_BYTES: usize = 4096;

/// How long a thread of the library's pool (`runtime::run_pooled`: the
/// agent runtime's turns) waits for its next job before it ends.
pub const POOLED_THREAD_IDLE: std::time::Duration = std::time::Duration::from_secs(5);

/// The most threads of that pool waiting for a job at once; one more that
/// finishes its job ends.
pub const POOLED_THREADS_IDLE: usize = 64;

/// How long a turn's first helper for its other tool calls waits before a
/// pooled thread takes it (`runtime::run_pooled_later`): calls that end
/// sooner all run on the turn's own thread, one after another, and no
/// thread is woken for them; a call that waits longer than this (or that
/// blocks in the library's I/O, which hands the helper over at once) has
/// its siblings running beside it from then on. A wake-up of a thread on
/// another core costs more CPU than a quick call does (bench/README.md).
pub const HELPER_DELAY: std::time::Duration = std::time::Duration::from_micros(500);

/// How long the thread that hands over delayed helpers goes on looking
/// every [`HELPER_DELAY`] after the last one was handed to it, before it
/// ends: turns that follow each other closely then hand theirs over
/// without waking it.
pub const HELPER_WATCH_LINGER: std::time::Duration = std::time::Duration::from_millis(5);

/// How many sub-agent turns one thread runs inside each other: a `task`
/// call runs the child's turn on its own thread (which would only wait for
/// it otherwise) while fewer than this many are already running there; a
/// deeper child's turn goes to a pooled thread, so a deep team chain never
/// runs out of one thread's stack.
pub const AGENT_INLINE_TURNS: usize = 4;

/// The Gemini declarations translate keeps made (a tool's schema cleaned
/// for Gemini, by the tool's JSON text: `provider::gemini`); a full memo
/// starts over empty.
pub const GEMINI_MEMO_TOOLS: usize = 512;

/// The longest tool (its JSON text) whose Gemini declaration is kept: a
/// larger one is made afresh each time, so the memo holds at most
/// `GEMINI_MEMO_TOOLS` × this much source text (8 MiB) and what it made of
/// it (smaller: cleaning drops keywords).
pub const GEMINI_MEMO_TOOL_BYTES: usize = 16 << 10;

/// How long dropping an agents runtime waits for the writes its store still
/// has queued (transcripts, checkpoints: `agents::durable`); a store that
/// has not answered by then keeps its writer thread, which ends when it does.
pub const AGENT_STORE_FLUSH: std::time::Duration = std::time::Duration::from_secs(10);

/// The most suspended trees an agents store keeps aside, as
/// `root.unrestored.<n>`, for runtimes that could not restore them; with
/// all of these taken, a runtime leaves the record where it is and saves
/// no tree of its own.
pub const AGENT_UNRESTORED_TREES: u32 = 1000;

/// The most A2A tasks a served agent runs at once, each on a thread of its
/// own (a run holds a thread for as long as its model and tools take).
pub const SERVED_TASKS: usize = 32;

/// The most A2A tasks a served agent keeps waiting for one of its
/// [`SERVED_TASKS`] slots (acknowledged `submitted`, run in order). A send
/// beyond them is refused with a JSON-RPC error (-32000, "server busy"),
/// and nothing is stored for it.
pub const SERVED_TASKS_QUEUED: usize = 1024;

/// The most finished A2A tasks (completed, failed, canceled, rejected) the
/// memory store keeps; past it the one that finished longest ago is
/// forgotten (a GetTask for it is then an unknown task). Tasks still
/// running or waiting for input are never dropped.
pub const MEMORY_STORE_FINISHED_TASKS: usize = 10_000;

/// The most conversations (A2A `contextId`s) the memory store keeps; past
/// it the one saved longest ago is forgotten, and its context starts anew.
pub const MEMORY_STORE_CONVERSATIONS: usize = 1_000;

/// The closed agent handles an agent runtime remembers; past it, the one
/// closed longest ago is forgotten with its subtree (once no turn of it or
/// of its parent is still out and nobody waits on it; a closed handle
/// under a parent still open is forgotten with that parent): its
/// transcript and unread inbox are let go of, and `inspect`, `wait` and
/// the verbs answer for it as for an unknown handle. Its transcript is
/// then what the runtime's store holds, or nothing without one. A closed
/// handle never runs again, so nothing it could still do is lost; a
/// long-lived runtime that closes what it spawns stays bounded.
pub const AGENT_CLOSED_KEPT: usize = 1_000;

/// The transition trace lines an agent runtime keeps; past it, the oldest
/// line is dropped for each new one (a long-lived runtime's trace is its
/// latest lines, not its whole life).
pub const AGENT_TRACE_LINES: usize = 100_000;

/// The most label sets one metric family of a client keeps (tools by name
/// and source, models by name): past it, a new one is counted under
/// [`METRIC_OTHER`], so a model that calls ever new tool names cannot grow
/// a long-lived client's metrics without bound.
pub const METRIC_SERIES: usize = 1_024;

/// The longest label value a metric series is kept under; a longer one
/// (a tool name a model made up) is counted under [`METRIC_OTHER`].
pub const METRIC_LABEL_BYTES: usize = 256;

/// Every label value of the series that counts what
/// [`METRIC_SERIES`] and [`METRIC_LABEL_BYTES`] turn away.
pub const METRIC_OTHER: &str = "(other)";

/// The most answers the served toolkit gives one JSON-RPC batch (each an
/// invalid request: MCP has no batches): a batch that would get more is
/// answered by one error, so a line of a few bytes per item never makes
/// the gateway hold a hundred times its size in answers.
pub const BATCH_ANSWERS: usize = 1024;

/// How long an MCP server must stay quiet after `notifications/tools/list_changed`
/// before its tools are listed again: a burst of announcements is one
/// re-list.
pub const LIST_CHANGED_QUIET: std::time::Duration = std::time::Duration::from_millis(100);

/// The longest a stream of announcements that never goes quiet defers the
/// re-list it asks for.
pub const LIST_CHANGED_MAX_DELAY: std::time::Duration = std::time::Duration::from_secs(1);

/// The least time between the starts of two re-lists of one server's
/// tools: however fast a server announces changes, it is listed at most
/// twice a second, and what waits meanwhile is one flag, never a queue.
pub const LIST_CHANGED_MIN_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

/// The list-change messages waiting for one `GET /mcp` stream of the HTTP
/// gateway. A client that does not read holds its own stream back, and the
/// changes meanwhile are one (a `watch` of the generations), so nothing
/// grows past this.
pub const GET_STREAM_QUEUED: usize = 4;
