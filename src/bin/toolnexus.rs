//! `toolnexus`: the library from a terminal. Lists the resolved tools,
//! calls one, serves the whole toolkit as one MCP server over stdio or
//! streamable HTTP, runs the client loop as a REPL (SPEC §9), counts a
//! request's input tokens at the provider, and runs an agent and its
//! sub-agents on one prompt (SPEC §7D).
//!
//! Exit codes: 0 done; 1 the called tool answered `isError: true`; 2 a bad
//! command line (clap's own code); 3 bad input (a config file, a skills
//! folder, arguments JSON, an unknown tool, an address that cannot be
//! bound, a client config or a request to count); 4 the server, the run or
//! the provider call failed while running.

#[path = "toolnexus/elicit.rs"]
mod elicit;

use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use serde_json::{json, Map, Value};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use toolnexus::mcp_server::{Profile, ServeConfig, Transport};
use toolnexus::tool::ExecContext;
use toolnexus::toolkit::Toolkit;

const EXIT_TOOL_ERROR: u8 = 1;
const EXIT_BAD_INPUT: u8 = 3;
const EXIT_FAILED: u8 = 4;

#[derive(Parser)]
#[command(
    name = "toolnexus",
    version,
    about = "Every source of LLM tools (MCP servers, skills, builtins) as one toolkit: list it, call it, serve it as one MCP server.",
    propagate_version = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List the resolved tools and the status of each source.
    Tools {
        #[command(flatten)]
        toolkit: ToolkitArgs,
        /// How to print the tools: a table (name, source, description), the
        /// declarations a provider takes, or one name a line.
        #[arg(long, value_enum, default_value_t = Format::Table)]
        format: Format,
        /// Print `{"tools": [{name, source, description}], "status": {...}}`
        /// on stdout instead (overrides --format); failures are JSON too.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool and print its ToolResult JSON.
    Call {
        /// The tool's name, as `toolnexus tools` lists it.
        name: String,
        /// The arguments: a JSON object (default `{}`).
        args: Option<String>,
        #[command(flatten)]
        toolkit: ToolkitArgs,
        /// Stop the call after this many milliseconds.
        #[arg(long, value_name = "MS")]
        timeout_ms: Option<u64>,
        /// Failures as JSON on stdout too (the ToolResult always is JSON).
        #[arg(long)]
        json: bool,
    },
    /// Serve the toolkit as one MCP server (stdio by default).
    Serve {
        #[command(flatten)]
        toolkit: ToolkitArgs,
        /// JSON-RPC lines on stdin/stdout (what Claude Desktop and IDEs
        /// spawn). Nothing else is written to stdout.
        #[arg(long, conflicts_with = "http")]
        stdio: bool,
        /// Streamable HTTP (stateless) at http://ADDR/mcp, e.g.
        /// 127.0.0.1:8080 (port 0 picks a free one). The URL is printed on
        /// stdout once listening.
        #[arg(long, value_name = "ADDR")]
        http: Option<String>,
        /// The advertised server name (overrides the config's mcpServer.name).
        #[arg(long)]
        name: Option<String>,
        /// The advertised server version (overrides mcpServer.version).
        #[arg(long, value_name = "VERSION")]
        server_version: Option<String>,
        /// Expose only this tool (repeatable; overrides mcpServer.tools).
        #[arg(long = "tool", value_name = "NAME")]
        tools: Vec<String>,
        /// Worker threads of the I/O runtime. One (the default) keeps every
        /// hop of a call (the request, the proxied server's answer, the
        /// reply) on one thread; tools other than MCP ones run on a
        /// separate blocking pool either way.
        #[arg(long, value_name = "N", default_value_t = 1,
              value_parser = clap::value_parser!(u16).range(1..=256))]
        io_threads: u16,
        /// With --http, print `{"url": ...}` on stdout once listening;
        /// failures as JSON on stdout.
        #[arg(long)]
        json: bool,
        /// Also serve the toolkit as an A2A agent beside /mcp (needs --http
        /// and --client): the a2a block as JSON, e.g. '{}' or
        /// '{"name":"helper","store":"sqlite:a2a.db","protocol":"1.0"}'.
        #[arg(long, value_name = "JSON", requires_all = ["http", "client"])]
        a2a: Option<String>,
        /// The client that fulfils the A2A agent's tasks, as the client
        /// config JSON (baseUrl, model, style, apiKey, ...).
        #[arg(long, value_name = "JSON", requires = "a2a")]
        client: Option<String>,
    },
    /// An agent at the terminal (SPEC §9): each line read is one run of the
    /// client loop over the toolkit; the answer is printed. Ctrl-D or `exit`
    /// quits.
    Run {
        #[command(flatten)]
        toolkit: ToolkitArgs,
        /// The provider's base URL, e.g. https://openrouter.ai/api/v1.
        #[arg(long, value_name = "URL")]
        base_url: String,
        /// The provider's wire style.
        #[arg(long, value_enum, default_value_t = Style::Openai)]
        style: Style,
        /// The model id, e.g. openai/gpt-4o-mini.
        #[arg(long)]
        model: String,
        /// A system prompt (the skills catalog follows it).
        #[arg(long, value_name = "TEXT")]
        system: Option<String>,
        /// The API key (else OPENROUTER_API_KEY, OPENAI_API_KEY or
        /// ANTHROPIC_API_KEY from the environment).
        #[arg(long, value_name = "KEY")]
        api_key: Option<String>,
        /// At most this many model turns per prompt (default 10).
        #[arg(long, value_name = "N")]
        max_turns: Option<u32>,
        /// Run this one prompt, print the answer and exit (no REPL).
        #[arg(long, value_name = "PROMPT")]
        once: Option<String>,
        /// The most one prompt's run may take, retries and their waits
        /// included (a provider's Retry-After never holds the terminal
        /// longer); 0 waits without a limit.
        #[arg(long, value_name = "MS", default_value_t = DEFAULT_RUN_TIMEOUT_MS)]
        timeout_ms: u64,
        /// Print only the answer: no tool-call lines, no source status on
        /// stderr.
        #[arg(long)]
        quiet: bool,
        /// Print each event of a prompt's run as one JSON line on stdout
        /// (`text`, `tool_call`, `tool_result`, `pending`, `usage`, and
        /// `done` with the RunResult) instead of the answer; a failed prompt
        /// is an `error` line.
        #[arg(long)]
        json: bool,
    },
    /// Ask the provider how many input tokens a request is, at its style's
    /// counting endpoint (nothing is generated), and print
    /// `{"inputTokens", "style", "model"}` on stdout.
    CountTokens {
        #[command(flatten)]
        toolkit: ToolkitArgs,
        /// The client config as JSON (baseUrl, style, model, apiKey,
        /// headers, retries, requestParams, or upstreams for failover); the
        /// flags below override its keys.
        #[arg(long, value_name = "JSON")]
        client: Option<String>,
        /// The provider's base URL, e.g. https://api.anthropic.com.
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// The provider's wire style (default openai, or the --client's).
        #[arg(long, value_enum)]
        style: Option<Style>,
        /// The model id, e.g. claude-sonnet-4-5.
        #[arg(long)]
        model: Option<String>,
        /// The API key (else OPENROUTER_API_KEY, OPENAI_API_KEY or
        /// ANTHROPIC_API_KEY from the environment; not for a --client with
        /// upstreams, whose entries carry their own).
        #[arg(long, value_name = "KEY")]
        api_key: Option<String>,
        /// The request: a file holding translate's OpenAI-shaped request
        /// ({messages, system?, tools?, toolChoice?, ...}), or `-` for stdin
        /// (the default when stdin is not a terminal).
        #[arg(long, value_name = "FILE")]
        request: Option<PathBuf>,
        /// Count this one user message instead of a request.
        #[arg(long, value_name = "TEXT", conflicts_with = "request")]
        prompt: Option<String>,
        /// The most the call may take, retries included (default 600000, or
        /// the --client's timeoutMs).
        #[arg(long, value_name = "MS")]
        timeout_ms: Option<u64>,
        /// Failures as JSON on stdout too (the answer always is JSON).
        #[arg(long)]
        json: bool,
    },
    /// Sub-agents (SPEC §7D): agents defined as data, run as a tree.
    Agents {
        #[command(subcommand)]
        command: AgentsCommand,
    },
    /// Print the shell completion script for SHELL on stdout, e.g.
    /// `toolnexus completions bash > ~/.local/share/bash-completion/completions/toolnexus`
    /// (scripts/install.sh installs the bash, zsh and fish ones).
    Completions {
        /// The shell to complete in.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
        /// Print `{"shell": ..., "script": ...}` instead.
        #[arg(long)]
        json: bool,
    },
    /// Print the man page (roff) on stdout, or write one page per command
    /// (toolnexus.1, toolnexus-tools.1, ...) into DIR.
    Man {
        /// Write toolnexus.1 and a page for each subcommand into this folder.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
        /// Print `{"page": ...}`, or with --out-dir `{"written": [paths]}`.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum AgentsCommand {
    /// Run one agent on one prompt and print its answer: spawned under the
    /// root, woken with the prompt, waited for. The agents it delegates to
    /// through its `task` tool run as its sub-agents.
    Run {
        /// The runtime config: a JSON object with `agents` (name →
        /// {does, soul?, model?, tools?, team?, budget?, ...}) and `client`
        /// (the provider: baseUrl, style, model, apiKey?, ...; the API key
        /// else comes from OPENROUTER_API_KEY, OPENAI_API_KEY or
        /// ANTHROPIC_API_KEY), and optionally inboxCap,
        /// maxConcurrentTurns, shutdownMs.
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
        /// The agent to run (a name under `agents`).
        #[arg(long, value_name = "NAME")]
        agent: String,
        /// Its prompt.
        #[arg(long, value_name = "TEXT")]
        prompt: String,
        /// Print `{id, result, trace}` as JSON instead of the answer's text.
        #[arg(long)]
        json: bool,
        /// Print the transitions of the tree (`<id>: from→to (why)`) on
        /// stderr.
        #[arg(long)]
        trace: bool,
        /// An MCP config file (mcp.json) whose tools agents may name.
        #[arg(long, value_name = "FILE")]
        tools_config: Option<PathBuf>,
        /// A skills folder (repeatable).
        #[arg(long, value_name = "DIR")]
        skills: Vec<PathBuf>,
        /// Leave the ten built-in tools out.
        #[arg(long)]
        no_builtins: bool,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Style {
    Openai,
    Anthropic,
    Gemini,
    Responses,
}

impl Style {
    /// The client config's `style` value.
    fn name(self) -> &'static str {
        match self {
            Style::Openai => "openai",
            Style::Anthropic => "anthropic",
            Style::Gemini => "gemini",
            Style::Responses => "responses",
        }
    }
}

#[derive(Args, Clone)]
struct ToolkitArgs {
    /// An MCP config file (mcp.json: `mcpServers` / `servers` / `mcp`, plus
    /// the reserved `builtins` and `mcpServer` blocks).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// A skills folder: every SKILL.md below it is a skill (repeatable).
    #[arg(long, value_name = "DIR")]
    skills: Vec<PathBuf>,
    /// Leave the ten built-in tools out.
    #[arg(long)]
    no_builtins: bool,
    /// How an MCP server's OAuth authorization (a `401`) is completed:
    /// `browser` prints the authorization URL (and opens a browser), then
    /// waits for the redirect on a loopback redirect URI or for the URL to
    /// be pasted; `headless` fetches the URL and takes its redirect as the
    /// answer (servers that consent at once, as test servers do); `none`
    /// only completes what needs no browser (client_credentials, tokens
    /// already stored). Default: `browser` when stderr is a terminal, else
    /// `none`.
    #[arg(long, value_enum, value_name = "MODE")]
    authorize: Option<AuthorizeMode>,
    /// How an MCP server's question in the middle of a call (elicitation)
    /// is answered: `terminal` asks it at the terminal (`/dev/tty`), field
    /// by field; `decline` declines every question; `none` does not offer
    /// elicitation (a server that asks anyway gets an error). Default:
    /// `terminal` when the process has a terminal, else `none`; for
    /// `serve`, `none` (the gateway's own client answers).
    #[arg(long, value_enum, value_name = "MODE")]
    elicit: Option<ElicitMode>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ElicitMode {
    Terminal,
    Decline,
    None,
}

/// The terminal the CLI asks questions on.
const TTY: &str = "/dev/tty";

/// The build's `waitFor` for `mode` (see `ToolkitArgs::elicit`).
fn elicit_with(mode: Option<ElicitMode>) -> Option<toolnexus::mcp::WaitFor> {
    let open = || std::fs::OpenOptions::new().read(true).write(true).open(TTY);
    let mode = mode.unwrap_or(if open().is_ok() {
        ElicitMode::Terminal
    } else {
        ElicitMode::None
    });
    match mode {
        ElicitMode::None => None,
        ElicitMode::Decline => Some(Arc::new(|_: &Value, _: &toolnexus::cancel::CancelToken| {
            Ok(elicit::declined())
        })),
        ElicitMode::Terminal => {
            // One question at a time on the one terminal.
            let asking = Arc::new(std::sync::Mutex::new(()));
            Some(Arc::new(
                move |request: &Value, _: &toolnexus::cancel::CancelToken| {
                    let _one = asking
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner);
                    let tty = open().map_err(|e| format!("{TTY}: {e}"))?;
                    let mut out = tty.try_clone().map_err(|e| format!("{TTY}: {e}"))?;
                    let mut input = std::io::BufReader::new(tty);
                    Ok(elicit::ask(request, &mut input, &mut out))
                },
            ))
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum AuthorizeMode {
    Browser,
    Headless,
    None,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Table,
    Openai,
    Anthropic,
    Gemini,
    Names,
}

/// A failure with the exit code it means and the sentence for stderr.
struct Failure {
    code: u8,
    message: String,
}

fn bad_input(message: impl Into<String>) -> Failure {
    Failure {
        code: EXIT_BAD_INPUT,
        message: message.into(),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json_errors = match &cli.command {
        Command::Tools { json, .. }
        | Command::Call { json, .. }
        | Command::Serve { json, .. }
        | Command::Run { json, .. }
        | Command::CountTokens { json, .. }
        | Command::Completions { json, .. }
        | Command::Man { json, .. }
        | Command::Agents {
            command: AgentsCommand::Run { json, .. },
        } => *json,
    };
    let outcome = match cli.command {
        Command::Tools {
            toolkit,
            format,
            json,
        } => tools(&toolkit, format, json),
        Command::Call {
            name,
            args,
            toolkit,
            timeout_ms,
            json: _,
        } => call(&toolkit, &name, args.as_deref(), timeout_ms),
        Command::Serve {
            toolkit,
            stdio: _,
            http,
            name,
            server_version,
            tools,
            io_threads,
            json,
            a2a,
            client,
        } => {
            // Before anything starts the runtime (building the toolkit does).
            toolnexus::runtime::set_worker_threads(usize::from(io_threads));
            let served = Served {
                http,
                name,
                version: server_version,
                tools,
                json,
                a2a,
                client,
            };
            serve(&toolkit, served)
        }
        Command::Run {
            toolkit,
            base_url,
            style,
            model,
            system,
            api_key,
            max_turns,
            once,
            timeout_ms,
            quiet,
            json,
        } => {
            let client = RunClient {
                base_url,
                style,
                model,
                system,
                api_key,
                max_turns,
                timeout_ms,
            };
            let show = Show { quiet, json };
            run(&toolkit, &client, once.as_deref(), show)
        }
        Command::CountTokens {
            toolkit,
            client,
            base_url,
            style,
            model,
            api_key,
            request,
            prompt,
            timeout_ms,
            json,
        } => {
            let provider = CountClient {
                client,
                base_url,
                style,
                model,
                api_key,
                timeout_ms,
            };
            let asked = CountRequest { request, prompt };
            count_tokens(&toolkit, provider, &asked, json)
        }
        Command::Agents {
            command:
                AgentsCommand::Run {
                    config,
                    agent,
                    prompt,
                    json,
                    trace,
                    tools_config,
                    skills,
                    no_builtins,
                },
        } => {
            let toolkit = ToolkitArgs {
                config: tools_config,
                skills,
                no_builtins,
                authorize: None,
                elicit: None,
            };
            let out = AgentsOutput { json, trace };
            agents_run(&toolkit, &config, &agent, &prompt, out)
        }
        Command::Completions { shell, json } => completions(shell, json),
        Command::Man { out_dir, json } => man(out_dir, json),
    };
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            if json_errors {
                print_out(&(failure_json(&f).to_string() + "\n"));
            } else {
                eprintln!("toolnexus: {}", f.message);
            }
            ExitCode::from(f.code)
        }
    }
}

/// A failure as scripts read it with `--json`:
/// `{"error": {"code": "bad_input" | "failed", "exit": N, "message": ...}}`.
fn failure_json(f: &Failure) -> Value {
    let code = if f.code == EXIT_BAD_INPUT {
        "bad_input"
    } else {
        "failed"
    };
    json!({"error": {"code": code, "exit": f.code, "message": f.message}})
}

/// Writes generated text to stdout; a closed pipe or a full disk is named.
fn print_generated(what: &str, text: &[u8]) -> Result<u8, Failure> {
    let mut out = std::io::stdout().lock();
    out.write_all(text)
        .and_then(|()| out.flush())
        .map(|()| 0)
        .map_err(|e| Failure {
            code: EXIT_FAILED,
            message: format!("{what}: {e}"),
        })
}

/// `toolnexus completions SHELL`: generated into memory first, as
/// clap_complete panics on a failed write.
fn completions(shell: clap_complete::Shell, json: bool) -> Result<u8, Failure> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "toolnexus", &mut script);
    if json {
        let v = json!({"shell": shell.to_string(), "script": String::from_utf8_lossy(&script)});
        return print_generated("completions", (v.to_string() + "\n").as_bytes());
    }
    print_generated("completions", &script)
}

/// `toolnexus man`: the top page on stdout, or every page into a folder.
fn man(out_dir: Option<PathBuf>, json: bool) -> Result<u8, Failure> {
    let cmd = Cli::command();
    let Some(dir) = out_dir else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd)
            .render(&mut page)
            .map_err(|e| Failure {
                code: EXIT_FAILED,
                message: format!("man: {e}"),
            })?;
        if json {
            let v = json!({"page": String::from_utf8_lossy(&page)});
            return print_generated("man", (v.to_string() + "\n").as_bytes());
        }
        return print_generated("man", &page);
    };
    std::fs::create_dir_all(&dir)
        .and_then(|()| clap_mangen::generate_to(cmd, &dir))
        .map_err(|e| Failure {
            code: EXIT_FAILED,
            message: format!("man --out-dir {}: {e}", dir.display()),
        })?;
    if json {
        let mut written: Vec<String> = std::fs::read_dir(&dir)
            .map(|entries| {
                entries
                    .filter_map(|e| e.ok())
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "1"))
                    .map(|p| p.display().to_string())
                    .collect()
            })
            .unwrap_or_default();
        written.sort();
        return print_generated(
            "man",
            (json!({"written": written}).to_string() + "\n").as_bytes(),
        );
    }
    Ok(0)
}

/// The most a `--config` file may hold: a toolkit config is a few kilobytes,
/// and a path such as /dev/zero must not be read without end.
const MAX_CONFIG_BYTES: u64 = 16 << 20;

/// The config file's JSON object (named in every error). Only a regular file
/// is read: it is opened without blocking (a FIFO with no writer would hold
/// the command forever) and checked before a byte is read, and at most
/// [`MAX_CONFIG_BYTES`] are taken from it.
fn read_config(path: &std::path::Path) -> Result<Map<String, Value>, Failure> {
    let named = |what: String| bad_input(format!("--config {}: {what}", path.display()));
    let bytes = read_regular_file(path, MAX_CONFIG_BYTES, "a config", &named)?;
    json_object(bytes, &named)
}

/// A regular file's bytes, at most `cap` of them (`what` names the file in
/// the too-large error): opened without blocking and checked to be a
/// regular file before a byte is read.
fn read_regular_file(
    path: &std::path::Path,
    cap: u64,
    what: &str,
    named: &dyn Fn(String) -> Failure,
) -> Result<Vec<u8>, Failure> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(|e| named(format!("cannot read it: {e}")))?;
    let meta = file
        .metadata()
        .map_err(|e| named(format!("cannot read it: {e}")))?;
    if !meta.is_file() {
        return Err(named(format!(
            "not a regular file (a {})",
            file_kind(&meta.file_type())
        )));
    }
    read_capped(file, cap, what, named)
}

/// At most `cap` bytes from `from`; more is an error naming the cap.
fn read_capped(
    from: impl std::io::Read,
    cap: u64,
    what: &str,
    named: &dyn Fn(String) -> Failure,
) -> Result<Vec<u8>, Failure> {
    use std::io::Read;
    let mut bytes = Vec::new();
    from.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| named(format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > cap {
        return Err(named(format!(
            "larger than {} MiB, the most {what} may hold",
            cap >> 20
        )));
    }
    Ok(bytes)
}

/// `bytes` as one JSON object, or an error saying what they are instead.
fn json_object(
    bytes: Vec<u8>,
    named: &dyn Fn(String) -> Failure,
) -> Result<Map<String, Value>, Failure> {
    let text = String::from_utf8(bytes).map_err(|e| named(format!("not UTF-8 text: {e}")))?;
    match serde_json::from_str::<Value>(&text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(named("expected a JSON object".into())),
        Err(e) => Err(named(format!("not valid JSON: {e}"))),
    }
}

/// What a path that is not a regular file is, for an error message.
fn file_kind(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "directory"
    } else if t.is_fifo() {
        "FIFO"
    } else if t.is_char_device() {
        "character device"
    } else if t.is_block_device() {
        "block device"
    } else if t.is_socket() {
        "socket"
    } else {
        "special file"
    }
}

/// The toolkit the flags describe, and the config file's `mcpServer` block.
fn build(args: &ToolkitArgs) -> Result<(Toolkit, Option<Value>), Failure> {
    let mut cfg = Map::new();
    let mut profile = None;
    if let Some(path) = &args.config {
        let file = read_config(path)?;
        profile = file.get("mcpServer").cloned();
        cfg.insert("mcpConfig".into(), Value::Object(file));
    }
    for dir in &args.skills {
        if !dir.is_dir() {
            let what = if dir.exists() {
                "not a directory (a skills folder holds SKILL.md files below it)"
            } else {
                "no such directory"
            };
            return Err(bad_input(format!("--skills {}: {what}", dir.display())));
        }
    }
    if !args.skills.is_empty() {
        let dirs: Vec<Value> = args
            .skills
            .iter()
            .map(|d| Value::String(d.to_string_lossy().into_owned()))
            .collect();
        cfg.insert("skillsDir".into(), Value::Array(dirs));
    }
    if args.no_builtins {
        cfg.insert("builtins".into(), Value::Bool(false));
    }
    let mode = args.authorize.unwrap_or_else(|| {
        use std::io::IsTerminal;
        if std::io::stderr().is_terminal() {
            AuthorizeMode::Browser
        } else {
            AuthorizeMode::None
        }
    });
    let authorize: Option<toolnexus::mcp::Authorize> = match mode {
        AuthorizeMode::Browser => Some(Arc::new(toolnexus::mcp::auth::browser)),
        AuthorizeMode::Headless => Some(Arc::new(toolnexus::mcp::auth::headless)),
        AuthorizeMode::None => None,
    };
    let opts = toolnexus::toolkit::BuildOptions {
        authorize,
        wait_for: elicit_with(args.elicit),
        ..Default::default()
    };
    let text = Value::Object(cfg).to_string();
    let built = toolnexus::config::ToolkitConfig::from_json_text(&text)
        .and_then(|c| Toolkit::build_with(&c, &opts));
    let tk = built.map_err(|e| {
        let what = args
            .config
            .as_ref()
            .map(|p| format!("--config {}: ", p.display()))
            .unwrap_or_default();
        bad_input(format!("{what}{}", e.message))
    })?;
    Ok((tk, profile))
}

/// One line per source on stderr: `source NAME: STATUS[: error]`.
fn report_status(tk: &Toolkit) {
    let status: Value = tk
        .render("status")
        .ok()
        .and_then(|s| serde_json::from_str(&s).ok())
        .unwrap_or_default();
    let errors = status["errors"].as_object().cloned().unwrap_or_default();
    let mut err = std::io::stderr().lock();
    if let Some(statuses) = status["statuses"].as_object() {
        for (name, st) in statuses {
            let st = st.as_str().unwrap_or_default();
            match errors.get(name).and_then(Value::as_str) {
                Some(e) => {
                    let _ = writeln!(err, "source {name}: {st}: {e}");
                }
                None => {
                    let _ = writeln!(err, "source {name}: {st}");
                }
            }
        }
    }
    for (name, e) in &errors {
        if status["statuses"].get(name).is_none() {
            let _ = writeln!(
                err,
                "source {name}: error: {}",
                e.as_str().unwrap_or_default()
            );
        }
    }
    for s in status["skipped"].as_array().into_iter().flatten() {
        let _ = writeln!(
            err,
            "skipped {}: {}",
            s["location"].as_str().unwrap_or_default(),
            s["reason"].as_str().unwrap_or_default()
        );
    }
    for w in status["warnings"].as_array().into_iter().flatten() {
        let _ = writeln!(err, "warning: {}", w.as_str().unwrap_or_default());
    }
}

fn tools(args: &ToolkitArgs, format: Format, json: bool) -> Result<u8, Failure> {
    let (tk, _) = build(args)?;
    if json {
        let list: Vec<Value> = tk
            .tools()
            .iter()
            .map(|t| json!({"name": t.name, "source": t.source.as_str(), "description": t.description}))
            .collect();
        let status: Value = tk
            .render("status")
            .ok()
            .and_then(|s| serde_json::from_str(&s).ok())
            .unwrap_or_default();
        print_out(&(json!({"tools": list, "status": status}).to_string() + "\n"));
        tk.close();
        return Ok(0);
    }
    report_status(&tk);
    let text = match format {
        Format::Names => tk.tool_names().join("\n") + "\n",
        Format::Table => table(&tk),
        Format::Openai | Format::Anthropic | Format::Gemini => {
            let name = match format {
                Format::Openai => "openai",
                Format::Anthropic => "anthropic",
                _ => "gemini",
            };
            let rendered = tk.render(name).map_err(|e| Failure {
                code: EXIT_FAILED,
                message: e.message,
            })?;
            let v: Value = serde_json::from_str(&rendered).unwrap_or_default();
            serde_json::to_string_pretty(&v).unwrap_or(rendered) + "\n"
        }
    };
    print_out(&text);
    tk.close();
    Ok(0)
}

/// `NAME  SOURCE  first line of the description`, aligned.
fn table(tk: &Toolkit) -> String {
    let tools = tk.tools();
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    let mut out = format!("{:width$}  {:7}  DESCRIPTION\n", "NAME", "SOURCE");
    for t in &tools {
        let first = t.description.lines().next().unwrap_or_default();
        let first: String = first.chars().take(100).collect();
        out.push_str(&format!(
            "{:width$}  {:7}  {first}\n",
            t.name,
            t.source.as_str()
        ));
    }
    out
}

fn print_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

fn call(
    args: &ToolkitArgs,
    name: &str,
    json_args: Option<&str>,
    timeout_ms: Option<u64>,
) -> Result<u8, Failure> {
    let call_args = match json_args {
        None => json!({}),
        Some(text) => match serde_json::from_str::<Value>(text) {
            Ok(v @ Value::Object(_)) => v,
            Ok(_) => return Err(bad_input("ARGS_JSON: expected a JSON object")),
            Err(e) => return Err(bad_input(format!("ARGS_JSON: not valid JSON: {e}"))),
        },
    };
    let (tk, _) = build(args)?;
    if tk.source_of(name).is_none() {
        report_status(&tk);
        return Err(bad_input(format!(
            "unknown tool '{name}' (`toolnexus tools` lists them)"
        )));
    }
    let ctx = ExecContext {
        timeout_ms,
        ..ExecContext::default()
    };
    let result = tk.execute(name, call_args, &ctx);
    print_out(&(result.to_json_string() + "\n"));
    tk.close();
    Ok(if result.is_error { EXIT_TOOL_ERROR } else { 0 })
}

/// What `toolnexus serve` was asked for besides the toolkit.
struct Served {
    http: Option<String>,
    name: Option<String>,
    version: Option<String>,
    tools: Vec<String>,
    json: bool,
    a2a: Option<String>,
    client: Option<String>,
}

fn serve(args: &ToolkitArgs, served: Served) -> Result<u8, Failure> {
    let Served {
        http,
        name,
        version,
        tools,
        json,
        a2a,
        client,
    } = served;
    let json_flag = |flag: &str, text: &str| -> Result<Value, Failure> {
        serde_json::from_str(text).map_err(|e| bad_input(format!("--{flag}: not JSON: {e}")))
    };
    let a2a = a2a.map(|t| json_flag("a2a", &t)).transpose()?;
    let client = match client {
        None => None,
        Some(t) => Some(Arc::new(
            toolnexus::client::Client::from_json(&json_flag("client", &t)?)
                .map_err(|e| bad_input(format!("--client: {}", e.message)))?,
        )),
    };
    // A gateway passes a proxied server's questions to its own client; the
    // terminal answers them only when asked to (`--elicit terminal`).
    let args = &ToolkitArgs {
        elicit: Some(args.elicit.unwrap_or(ElicitMode::None)),
        ..args.clone()
    };
    let (tk, block) = build(args)?;
    let mut profile = match &block {
        Some(v) => Profile::from_value(v, "mcpServer").map_err(|e| {
            let file = args
                .config
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default();
            bad_input(format!("--config {file}: {}", e.message))
        })?,
        None => Profile::default(),
    };
    if let Some(n) = name {
        profile.name = n;
    }
    if let Some(v) = version {
        profile.version = v;
    }
    if !tools.is_empty() {
        profile.tools = Some(tools);
    }
    report_status(&tk);
    let transport = match &http {
        Some(addr) => Transport::Http { addr: addr.clone() },
        None => Transport::Stdio,
    };
    let tk = Arc::new(tk);
    let with_a2a = a2a.is_some();
    let config = ServeConfig {
        transport,
        profile,
        a2a,
        limits: Default::default(),
    };
    let runner = client.map(|c| toolnexus::a2a::client_runner(c, Arc::clone(&tk)));
    let server =
        toolnexus::a2a::serve(Arc::clone(&tk), &config, None, runner, None).map_err(|e| {
            bad_input(match &http {
                Some(addr) => format!("--http {addr}: {}", e.message),
                None => e.message,
            })
        })?;
    if let Some(url) = server.url() {
        if json {
            print_out(&(json!({ "url": url }).to_string() + "\n"));
        } else {
            print_out(&format!("{url}\n"));
        }
        eprintln!("toolnexus: serving MCP at {url} (Ctrl-C stops)");
        if with_a2a {
            let base = url.strip_suffix("/mcp").unwrap_or(url);
            eprintln!(
                "toolnexus: serving A2A at {base}/ (card at {base}/.well-known/agent-card.json)"
            );
        }
    }
    let server = Arc::new(server);
    let ended = Arc::clone(&server);
    let stopped_by_signal = toolnexus::runtime::block_on(async move {
        let waiting = tokio::task::spawn_blocking(move || ended.wait());
        tokio::select! {
            _ = waiting => false,
            _ = termination() => true,
        }
    });
    server.stop();
    drop(server);
    tk.close();
    let _ = stopped_by_signal;
    Ok(0)
}

/// Resolves on SIGINT or SIGTERM.
async fn termination() {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = int.recv() => {}
        _ = term.recv() => {}
    }
}

struct RunClient {
    base_url: String,
    style: Style,
    model: String,
    system: Option<String>,
    api_key: Option<String>,
    max_turns: Option<u32>,
    timeout_ms: u64,
}

/// `run`'s default bound on one prompt: ten minutes.
const DEFAULT_RUN_TIMEOUT_MS: u64 = 600_000;

/// The API key: the flag, else the first of the provider variables set.
fn api_key(flag: Option<&str>) -> Option<String> {
    if let Some(k) = flag {
        return Some(k.to_string());
    }
    ["OPENROUTER_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|k| !k.is_empty()))
}

/// How `run` shows a prompt's progress.
#[derive(Clone, Copy)]
struct Show {
    /// Only the answer: no tool lines, no source status.
    quiet: bool,
    /// Every event as one JSON line on stdout.
    json: bool,
}

/// What the `onEvent` callback of one prompt's streamed run prints: text
/// deltas on stdout as they arrive, each tool call on stderr as it starts and
/// ends (name, then ok/error and its time), or with `--json` every event as
/// one JSON line on stdout.
struct Progress {
    show: Show,
    /// When each tool call (by id) started.
    started: std::sync::Mutex<std::collections::HashMap<String, std::time::Instant>>,
    /// Whether any text delta was printed (and the last one's final char).
    streamed: std::sync::Mutex<Option<char>>,
}

impl Progress {
    fn new(show: Show) -> Progress {
        Progress {
            show,
            started: std::sync::Mutex::default(),
            streamed: std::sync::Mutex::default(),
        }
    }

    fn event(&self, ev: &Value) {
        if self.show.json {
            print_out(&(ev.to_string() + "\n"));
            return;
        }
        let name = ev["name"].as_str().unwrap_or_default();
        let id = ev["id"].as_str().unwrap_or_default().to_string();
        match ev["type"].as_str().unwrap_or_default() {
            "text" => {
                let delta = ev["delta"].as_str().unwrap_or_default();
                if let Some(last) = delta.chars().last() {
                    print_out(delta);
                    *self.streamed.lock().unwrap_or_else(|p| p.into_inner()) = Some(last);
                }
            }
            "tool_call" if !self.show.quiet => {
                self.end_line();
                self.started
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(id, std::time::Instant::now());
                eprintln!("tool {name} ...");
            }
            "tool_result" if !self.show.quiet => {
                let began = self
                    .started
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
                let ms = began.map_or(0, |t| t.elapsed().as_millis());
                let how = if ev["isError"] == true { "error" } else { "ok" };
                eprintln!("tool {name}: {how} ({ms} ms)");
            }
            "pending" if !self.show.quiet => {
                self.end_line();
                eprintln!(
                    "tool {}: waiting for an answer: {}",
                    ev["request"]["kind"].as_str().unwrap_or("question"),
                    ev["request"]["prompt"].as_str().unwrap_or_default()
                );
            }
            _ => {}
        }
    }

    /// Ends a line of streamed text, so a tool line starts on its own.
    fn end_line(&self) {
        let mut streamed = self.streamed.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(*streamed, Some(c) if c != '\n') {
            print_out("\n");
            *streamed = Some('\n');
        }
    }

    /// After the run: the answer's last newline, or the whole answer when
    /// nothing was streamed (a provider that answered with plain JSON).
    fn finish(&self, text: &str) {
        if self.show.json {
            return;
        }
        let mut streamed = self.streamed.lock().unwrap_or_else(|p| p.into_inner());
        match *streamed {
            None => print_out(&format!("{text}\n")),
            Some('\n') => {}
            Some(_) => print_out("\n"),
        }
        *streamed = None;
    }
}

fn run(args: &ToolkitArgs, c: &RunClient, once: Option<&str>, show: Show) -> Result<u8, Failure> {
    use toolnexus::cancel::CancelToken;
    use toolnexus::client::{AskRequest, Client, HostFn, RunData, Slot};
    let mut cfg = Map::new();
    cfg.insert("baseUrl".into(), json!(c.base_url));
    cfg.insert("style".into(), json!(c.style.name()));
    cfg.insert("model".into(), json!(c.model));
    if let Some(s) = &c.system {
        cfg.insert("systemPrompt".into(), json!(s));
    }
    if let Some(k) = api_key(c.api_key.as_deref()) {
        cfg.insert("apiKey".into(), json!(k));
    }
    if let Some(n) = c.max_turns {
        cfg.insert("maxTurns".into(), json!(n));
    }
    if c.timeout_ms > 0 {
        cfg.insert("timeoutMs".into(), json!(c.timeout_ms));
    }
    let client = Client::from_json(&Value::Object(cfg)).map_err(|e| {
        let flag = if e.message.contains("baseUrl") {
            "--base-url: "
        } else if e.message.contains("model") {
            "--model: "
        } else {
            ""
        };
        bad_input(format!("{flag}{}", e.message))
    })?;
    let (tk, _) = build(args)?;
    if !show.quiet && !show.json {
        report_status(&tk);
    }
    let progress = Arc::new(Progress::new(show));
    let on_event: HostFn = {
        let progress = Arc::clone(&progress);
        Arc::new(move |ev: &Value, _: RunData| {
            progress.event(ev);
            Ok(None)
        })
    };
    client.set_callback(Slot::OnEvent, Some(on_event));
    let cancel = CancelToken::new();
    let mut history: Vec<Value> = Vec::new();
    let mut ask = |prompt: &str| -> Result<(), Failure> {
        let request = AskRequest {
            prompt: prompt.to_string(),
            id: None,
            history: history.clone(),
        };
        let result = client
            .ask(&tk, &request, &cancel, RunData::default(), true)
            .map_err(|e| {
                progress.end_line();
                Failure {
                    code: EXIT_FAILED,
                    message: e.message,
                }
            })?;
        if let Some(m) = result["messages"].as_array() {
            history = m.clone();
        }
        progress.finish(result["text"].as_str().unwrap_or_default());
        if result["status"] == "incomplete" && !show.json {
            eprintln!(
                "toolnexus: the run stopped at its {} limit",
                result["limit"].as_str().unwrap_or("turn")
            );
        }
        Ok(())
    };
    let outcome = match once {
        Some(prompt) => ask(prompt).map(|()| 0),
        None => {
            let stdin = std::io::stdin();
            let mut line = String::new();
            loop {
                line.clear();
                match std::io::BufRead::read_line(&mut stdin.lock(), &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                let prompt = line.trim();
                if prompt == "exit" || prompt == "quit" {
                    break;
                }
                if prompt.is_empty() {
                    continue;
                }
                // One failed prompt does not end the session.
                if let Err(f) = ask(prompt) {
                    if show.json {
                        let mut line = failure_json(&f);
                        line["type"] = json!("error");
                        print_out(&(line.to_string() + "\n"));
                    } else {
                        eprintln!("toolnexus: {}", f.message);
                    }
                }
            }
            Ok(0)
        }
    };
    tk.close();
    outcome
}

/// The provider `count-tokens` asks: `--client`'s JSON with the flags on
/// top.
struct CountClient {
    client: Option<String>,
    base_url: Option<String>,
    style: Option<Style>,
    model: Option<String>,
    api_key: Option<String>,
    timeout_ms: Option<u64>,
}

impl CountClient {
    /// The client config JSON, checked as translate checks it.
    fn config(self) -> Result<Value, Failure> {
        let mut cfg = match self.client.as_deref().map(serde_json::from_str::<Value>) {
            None => Map::new(),
            Some(Ok(Value::Object(m))) => m,
            Some(Ok(_)) => return Err(bad_input("--client: expected a JSON object")),
            Some(Err(e)) => return Err(bad_input(format!("--client: not valid JSON: {e}"))),
        };
        if let Some(u) = self.base_url {
            cfg.insert("baseUrl".into(), json!(u));
        }
        if let Some(s) = self.style {
            cfg.insert("style".into(), json!(s.name()));
        }
        if let Some(m) = self.model {
            cfg.insert("model".into(), json!(m));
        }
        if let Some(k) = self.api_key {
            cfg.insert("apiKey".into(), json!(k));
        } else if !cfg.contains_key("apiKey") && !cfg.contains_key("upstreams") {
            // With upstreams each entry has its own key: none is added.
            if let Some(k) = api_key(None) {
                cfg.insert("apiKey".into(), json!(k));
            }
        }
        match self.timeout_ms {
            Some(ms) => {
                cfg.insert("timeoutMs".into(), json!(ms));
            }
            None => {
                cfg.entry("timeoutMs")
                    .or_insert_with(|| json!(DEFAULT_RUN_TIMEOUT_MS));
            }
        }
        let cfg = Value::Object(cfg);
        toolnexus::provider::ClientConfig::from_json(&cfg).map_err(|e| bad_input(e.message))?;
        Ok(cfg)
    }
}

/// What `count-tokens` counts: a request file (or stdin), or one prompt.
struct CountRequest {
    request: Option<PathBuf>,
    prompt: Option<String>,
}

impl CountRequest {
    /// Where the request comes from, as errors name it.
    fn source(&self) -> String {
        match (&self.prompt, &self.request) {
            (Some(_), _) => "--prompt".into(),
            (None, Some(path)) if path.as_os_str() != "-" => {
                format!("--request {}", path.display())
            }
            (None, _) => "the request on stdin".into(),
        }
    }

    /// The request's JSON text, read whole (at most
    /// [`toolnexus::limits::FILE_BYTES`]) and checked to be a JSON object.
    fn text(&self) -> Result<String, Failure> {
        use std::io::IsTerminal;
        let cap = toolnexus::limits::FILE_BYTES;
        if let Some(p) = &self.prompt {
            let message = json!({"role": "user", "content": p});
            return Ok(json!({ "messages": [message] }).to_string());
        }
        let source = self.source();
        let named = |what: String| bad_input(format!("{source}: {what}"));
        let bytes = match &self.request {
            Some(path) if path.as_os_str() != "-" => {
                read_regular_file(path, cap, "a request", &named)?
            }
            given => {
                if given.is_none() && std::io::stdin().is_terminal() {
                    return Err(bad_input(
                        "no request: give --request FILE, --prompt TEXT, or pipe the request's JSON on stdin",
                    ));
                }
                read_capped(std::io::stdin().lock(), cap, "a request", &named)?
            }
        };
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(named(
                "empty (the request's JSON, or --prompt TEXT, is what is counted)".into(),
            ));
        }
        json_object(bytes, &named).map(|m| Value::Object(m).to_string())
    }
}

/// `toolnexus count-tokens`: the client checked, the request read, the
/// toolkit built (its tools are declared before the request's own, as
/// `tn_count_tokens` declares a toolkit's), one counting call, its answer
/// on stdout. A bad client, request or toolkit is bad input (3); a
/// provider's error, a timeout or a call that fails is 4.
fn count_tokens(
    args: &ToolkitArgs,
    provider: CountClient,
    asked: &CountRequest,
    json: bool,
) -> Result<u8, Failure> {
    use toolnexus::error::ErrorCode;
    let client = provider.config()?;
    let request = asked.text()?;
    let (tk, _) = build(args)?;
    if !json {
        report_status(&tk);
    }
    let declared = tk.openai_declarations();
    let counted = toolnexus::translate::count_tokens_json(&client, &request, &declared, None);
    tk.close();
    match counted {
        Ok(answer) => {
            print_out(&(answer + "\n"));
            Ok(0)
        }
        // The client was checked above: what is left is the request's.
        Err(e) => Err(match e.code {
            ErrorCode::InvalidJson
            | ErrorCode::InvalidConfig
            | ErrorCode::InvalidArgument
            | ErrorCode::InvalidUtf8
            | ErrorCode::NullArgument
            | ErrorCode::UnknownFormat => bad_input(format!("{}: {}", asked.source(), e.message)),
            _ => Failure {
                code: EXIT_FAILED,
                message: e.message,
            },
        }),
    }
}

/// How `agents run` prints its outcome.
struct AgentsOutput {
    json: bool,
    trace: bool,
}

/// `toolnexus agents run`: one agent, one prompt, the tree it starts.
/// Exit 0 when the agent is done, 4 for any other ending (error,
/// incomplete, pending, ...), 3 for a bad config or agent.
fn agents_run(
    args: &ToolkitArgs,
    config: &std::path::Path,
    agent: &str,
    prompt: &str,
    out: AgentsOutput,
) -> Result<u8, Failure> {
    use toolnexus::agents::calls::Agents;
    let mut cfg = read_config(config)?;
    let named = |m: String| bad_input(format!("--config {}: {m}", config.display()));
    match cfg.get_mut("client") {
        Some(Value::Object(client)) => {
            if !client.contains_key("apiKey") {
                if let Some(k) = api_key(None) {
                    client.insert("apiKey".into(), json!(k));
                }
            }
        }
        _ => {
            return Err(named(
                "\"client\" (the provider: baseUrl, model, ...) is required".into(),
            ))
        }
    }
    let (tk, _) = build(args)?;
    report_status(&tk);
    let tk = Arc::new(tk);
    let agents = Agents::from_json(&Value::Object(cfg), Some(Arc::clone(&tk)), None)
        .map_err(|e| named(e.message))?;
    let rt = agents.runtime();
    let (id, result) = rt
        .run(agent, prompt)
        .map_err(|e| bad_input(format!("--agent {agent}: {e}")))?;
    let trace = rt.trace();
    if out.json {
        let v = json!({"id": id, "result": result, "trace": trace});
        print_out(&format!(
            "{}\n",
            serde_json::to_string_pretty(&v).unwrap_or_default()
        ));
    } else {
        if out.trace {
            let mut err = std::io::stderr().lock();
            for line in &trace {
                let _ = writeln!(err, "{line}");
            }
        }
        print_out(&format!("{}\n", result.text));
    }
    agents.shutdown();
    drop(agents);
    tk.close();
    if result.status == "done" {
        Ok(0)
    } else {
        if !out.json {
            eprintln!(
                "toolnexus: the agent ended {}{}",
                result.status,
                result
                    .limit
                    .as_deref()
                    .map(|l| format!(" (limit: {l})"))
                    .unwrap_or_default()
            );
        }
        Ok(EXIT_FAILED)
    }
}
