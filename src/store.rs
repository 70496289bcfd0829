//! Durable records behind one interface (issue 27): the tasks a served A2A
//! agent hands out, the conversations `ask` remembers, and the agent
//! runtime's checkpoints. Each record is a JSON value under a [`Kind`] and an
//! id; a later save of the same id replaces it.
//!
//! A store is chosen by a selector string ([`resolve`]):
//!
//! - `""` or `"memory"`: held in this process only;
//! - `"file:<dir>"`: one JSON file per record, written atomically (a temp
//!   file in the same folder, then a rename), tasks directly in `<dir>` as
//!   `<sanitize(id)>.json` (upstream's layout, SPEC §7B), the other kinds in
//!   a subfolder named after the kind;
//! - `"sqlite:<path>"`: one SQLite database (created when missing, WAL
//!   journal), which several processes on one machine can share;
//! - `"postgres://…"` / `"postgresql://…"`: a PostgreSQL database (the table
//!   is created when missing), which processes on several machines can share
//!   behind one load balancer;
//! - `"host:<name>"`: a store the host supplies ([`register`]; through the C
//!   ABI `tn_store_register`, its callbacks called for every get, save and
//!   delete).
//!
//! Any other selector is refused with upstream's pinned sentence
//! ([`unknown_selector`]).

use crate::error::{Error, Result};
use crate::tool::sanitize;
use serde_json::Value;
use std::collections::HashMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// A served A2A task (SPEC §7B).
    Task,
    /// An `ask` conversation, keyed by its id (an A2A `contextId`).
    Conversation,
    /// An agent-runtime checkpoint.
    Checkpoint,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Task => "task",
            Kind::Conversation => "conversation",
            Kind::Checkpoint => "checkpoint",
        }
    }
}

/// A place records live. Every method is safe from many threads at once.
/// `Err` is a failure of the store itself (a disk, a database), as a
/// sentence; an unknown id is `Ok(None)`.
pub trait Store: Send + Sync {
    fn get(&self, kind: Kind, id: &str) -> std::result::Result<Option<Value>, String>;
    fn save(&self, kind: Kind, id: &str, record: &Value) -> std::result::Result<(), String>;
    /// Removes a record; `true` when there was one.
    fn delete(&self, kind: Kind, id: &str) -> std::result::Result<bool, String>;
    /// The selector this store answers to (`memory`, `file:<dir>`, …).
    fn selector(&self) -> String;
}

/// Upstream's sentence for a selector no store answers to (Go and JS; the
/// Python port capitalises the first word).
pub fn unknown_selector(selector: &str) -> Error {
    let quoted = serde_json::to_string(selector).unwrap_or_default();
    Error::invalid_config(format!(
        "unknown A2A store: {quoted} (expected \"memory\" or \"file:<dir>\")"
    ))
}

/// The store a selector names; `None` is the memory store.
pub fn resolve(selector: Option<&str>) -> Result<Arc<dyn Store>> {
    let s = selector.unwrap_or("");
    if s.is_empty() || s == "memory" {
        return Ok(Arc::new(MemoryStore::default()));
    }
    if let Some(dir) = s.strip_prefix("file:") {
        return Ok(Arc::new(FileStore::open(dir)?));
    }
    if let Some(path) = s.strip_prefix("sqlite:") {
        return Ok(Arc::new(SqliteStore::open(path)?));
    }
    if s.starts_with("postgres://") || s.starts_with("postgresql://") {
        return Ok(Arc::new(PostgresStore::open(s)?));
    }
    if let Some(name) = s.strip_prefix("host:") {
        return registered(name);
    }
    Err(unknown_selector(s))
}

/// The stores hosts registered, by name. A store resolved from here is an
/// `Arc` of its own: unregistering the name leaves every user of the store
/// with it until the last one lets go.
static HOST_STORES: Mutex<Option<HashMap<String, Arc<dyn Store>>>> = Mutex::new(None);

fn host_stores() -> std::sync::MutexGuard<'static, Option<HashMap<String, Arc<dyn Store>>>> {
    HOST_STORES.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes `store` the one selector `host:<name>` names, from now on, in
/// this process. A name already registered is refused (unregister it
/// first); an empty name too.
pub fn register(name: &str, store: Arc<dyn Store>) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid_argument(
            "a host store needs a name (selector host:<name>)",
        ));
    }
    let mut stores = host_stores();
    let stores = stores.get_or_insert_with(HashMap::new);
    if stores.contains_key(name) {
        return Err(Error::invalid_argument(format!(
            "a host store named {} is already registered (unregister it first)",
            serde_json::to_string(name).unwrap_or_default()
        )));
    }
    stores.insert(name.to_string(), store);
    Ok(())
}

/// Forgets the store registered as `name`; `true` when there was one. The
/// agents already using it keep it (it is released when the last is done).
pub fn unregister(name: &str) -> bool {
    let removed = {
        let mut guard = host_stores();
        let removed = guard.as_mut().and_then(|stores| stores.remove(name));
        // An empty registry holds no memory (a leak checker sees none).
        if guard.as_ref().is_some_and(HashMap::is_empty) {
            *guard = None;
        }
        removed
    };
    // Released after the registry's lock: a store's last release runs the
    // host's finalizer, which may call back in.
    removed.is_some()
}

fn registered(name: &str) -> Result<Arc<dyn Store>> {
    let found = host_stores()
        .as_ref()
        .and_then(|stores| stores.get(name).cloned());
    found.ok_or_else(|| {
        Error::invalid_config(format!(
            "store \"host:{name}\": no host store is registered under that name"
        ))
    })
}

/// Records held in this process. A served agent's clients choose how many
/// tasks and conversations there are, so the memory store keeps a bounded
/// number: past [`crate::limits::MEMORY_STORE_FINISHED_TASKS`] finished
/// tasks (completed, failed, canceled, rejected) the one that finished
/// longest ago is forgotten, and past
/// [`crate::limits::MEMORY_STORE_CONVERSATIONS`] conversations the one saved
/// longest ago. A task still running or waiting for input is never dropped.
/// A store that must keep everything is `sqlite:` or `postgres://`.
pub struct MemoryStore {
    records: Mutex<Records>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::with_caps(
            crate::limits::MEMORY_STORE_FINISHED_TASKS,
            crate::limits::MEMORY_STORE_CONVERSATIONS,
        )
    }
}

/// The records, each with the number of the save that wrote it, and the
/// capped ones (finished tasks, conversations) in the order they were
/// saved.
struct Records {
    map: HashMap<(Kind, String), (u64, Value)>,
    saves: u64,
    finished: Queue,
    conversations: Queue,
}

/// The records of one kind that count against a cap, oldest first. An
/// entry whose save number no longer matches its record's (the record was
/// saved again or deleted since) is stale and skipped.
struct Queue {
    order: std::collections::VecDeque<(u64, String)>,
    /// How many entries are not stale.
    live: usize,
    cap: usize,
}

impl Queue {
    fn new(cap: usize) -> Queue {
        Queue {
            order: std::collections::VecDeque::new(),
            live: 0,
            cap,
        }
    }
}

/// A task state after which nothing changes (SPEC §7B; stored in upstream's
/// wire form whatever profile a client speaks).
fn finished(record: &Value) -> bool {
    matches!(
        record.pointer("/status/state").and_then(Value::as_str),
        Some("completed" | "failed" | "canceled" | "rejected")
    )
}

/// Whether the entry `(n, id)` of `kind`'s queue names the record stored.
fn live(map: &HashMap<(Kind, String), (u64, Value)>, kind: Kind, n: u64, id: &str) -> bool {
    // (A key built per check: eviction and compaction are rare.)
    map.get(&(kind, id.to_string()))
        .is_some_and(|(at, _)| *at == n)
}

impl Records {
    /// The queue `record`, stored under `kind`, counts in: finished tasks
    /// and every conversation; nothing else is capped.
    fn queue(&mut self, kind: Kind, record: &Value) -> Option<&mut Queue> {
        match kind {
            Kind::Task if finished(record) => Some(&mut self.finished),
            Kind::Conversation => Some(&mut self.conversations),
            _ => None,
        }
    }

    fn remove(&mut self, kind: Kind, id: &str) -> Option<Value> {
        let (_, old) = self.map.remove(&(kind, id.to_string()))?;
        if let Some(q) = self.queue(kind, &old) {
            q.live -= 1;
        }
        Some(old)
    }

    /// Forgets the oldest records of `kind`'s queue until no more than its
    /// cap are live, then drops the stale entries once they outnumber the
    /// live ones, so the queue stays bounded too.
    fn trim(&mut self, kind: Kind) {
        let Records {
            map,
            finished,
            conversations,
            ..
        } = self;
        let q = match kind {
            Kind::Task => finished,
            Kind::Conversation => conversations,
            Kind::Checkpoint => return,
        };
        while q.live > q.cap {
            let Some((n, id)) = q.order.pop_front() else {
                break;
            };
            if live(map, kind, n, &id) {
                map.remove(&(kind, id));
                q.live -= 1;
            }
        }
        if q.order.len() > 2 * q.live + 64 {
            q.order.retain(|(n, id)| live(map, kind, *n, id));
        }
    }
}

impl MemoryStore {
    /// A memory store keeping at most `finished_tasks` finished tasks and
    /// `conversations` conversations.
    pub fn with_caps(finished_tasks: usize, conversations: usize) -> Self {
        MemoryStore {
            records: Mutex::new(Records {
                map: HashMap::new(),
                saves: 0,
                finished: Queue::new(finished_tasks),
                conversations: Queue::new(conversations),
            }),
        }
    }

    fn records(&self) -> std::sync::MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Store for MemoryStore {
    fn get(&self, kind: Kind, id: &str) -> std::result::Result<Option<Value>, String> {
        let records = self.records();
        Ok(records
            .map
            .get(&(kind, id.to_string()))
            .map(|(_, v)| v.clone()))
    }

    fn save(&self, kind: Kind, id: &str, record: &Value) -> std::result::Result<(), String> {
        self.put(kind, id, record.clone());
        Ok(())
    }

    fn delete(&self, kind: Kind, id: &str) -> std::result::Result<bool, String> {
        let mut records = self.records();
        let removed = records.remove(kind, id).is_some();
        if removed {
            // (Compacts the queue the removal left a stale entry in.)
            records.trim(kind);
        }
        Ok(removed)
    }

    fn selector(&self) -> String {
        "memory".into()
    }
}

impl MemoryStore {
    /// [`Store::save`] of a record the caller gives up (no copy).
    pub fn put(&self, kind: Kind, id: &str, record: Value) {
        let mut records = self.records();
        records.remove(kind, id);
        records.saves += 1;
        let n = records.saves;
        if let Some(q) = records.queue(kind, &record) {
            q.order.push_back((n, id.to_string()));
            q.live += 1;
        }
        records.map.insert((kind, id.to_string()), (n, record));
        records.trim(kind);
    }
}

/// One JSON file per record under a folder.
pub struct FileStore {
    dir: PathBuf,
}

/// Distinguishes the temp files of concurrent saves in one process.
static TEMP_SEQ: AtomicU64 = AtomicU64::new(0);

impl FileStore {
    /// The store rooted at `dir`, created when missing.
    pub fn open(dir: &str) -> Result<FileStore> {
        if dir.is_empty() {
            return Err(Error::invalid_config(
                "store \"file:\": the folder is missing (file:<dir>)",
            ));
        }
        fs::create_dir_all(dir).map_err(|e| {
            Error::invalid_config(format!(
                "store \"file:{dir}\": cannot create the folder: {e}"
            ))
        })?;
        Ok(FileStore { dir: dir.into() })
    }

    fn folder(&self, kind: Kind) -> PathBuf {
        match kind {
            Kind::Task => self.dir.clone(),
            Kind::Conversation => self.dir.join("conversations"),
            Kind::Checkpoint => self.dir.join("checkpoints"),
        }
    }

    fn file(&self, kind: Kind, id: &str) -> PathBuf {
        self.folder(kind).join(format!("{}.json", sanitize(id)))
    }
}

impl Store for FileStore {
    /// A missing or unreadable file is an unknown id (upstream's file store
    /// swallows read errors the same way).
    fn get(&self, kind: Kind, id: &str) -> std::result::Result<Option<Value>, String> {
        let Ok(text) = fs::read(self.file(kind, id)) else {
            return Ok(None);
        };
        Ok(serde_json::from_slice(&text).ok())
    }

    fn save(&self, kind: Kind, id: &str, record: &Value) -> std::result::Result<(), String> {
        let folder = self.folder(kind);
        fs::create_dir_all(&folder).map_err(|e| format!("store: {}: {e}", folder.display()))?;
        let target = self.file(kind, id);
        let tmp = folder.join(format!(
            ".{}.{}.{}.tmp",
            sanitize(id),
            std::process::id(),
            TEMP_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let written = write_synced(&tmp, &serde_json::to_vec(record).unwrap_or_default())
            .and_then(|()| fs::rename(&tmp, &target));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(format!("store: {}: {e}", target.display()));
        }
        Ok(())
    }

    fn delete(&self, kind: Kind, id: &str) -> std::result::Result<bool, String> {
        match fs::remove_file(self.file(kind, id)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("store: {e}")),
        }
    }

    fn selector(&self) -> String {
        format!("file:{}", self.dir.display())
    }
}

fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = fs::File::create(path)?;
    f.write_all(bytes)?;
    f.sync_all()
}

/// Records in one SQLite database: a table `records(kind, id, body,
/// updated_ms)`, WAL journal, a 10 s busy wait so processes sharing the file
/// take turns instead of failing.
pub struct SqliteStore {
    path: String,
    conn: Mutex<rusqlite::Connection>,
}

impl SqliteStore {
    pub fn open(path: &str) -> Result<SqliteStore> {
        let bad = |e: rusqlite::Error| {
            Error::invalid_config(format!("store \"sqlite:{path}\": cannot open: {e}"))
        };
        if path.is_empty() {
            return Err(Error::invalid_config(
                "store \"sqlite:\": the database path is missing (sqlite:<path>)",
            ));
        }
        let conn = rusqlite::Connection::open(path).map_err(bad)?;
        conn.busy_timeout(Duration::from_secs(10)).map_err(bad)?;
        // A database on a file system without shared memory keeps its own
        // journal mode; WAL is a speed-up, not a requirement.
        let _ = conn.pragma_update(None, "journal_mode", "WAL");
        conn.execute_batch(
            "CREATE TABLE IF NOT EXISTS records (
                kind TEXT NOT NULL,
                id TEXT NOT NULL,
                body TEXT NOT NULL,
                updated_ms INTEGER NOT NULL,
                PRIMARY KEY (kind, id)
            )",
        )
        .map_err(bad)?;
        Ok(SqliteStore {
            path: path.into(),
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> std::sync::MutexGuard<'_, rusqlite::Connection> {
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

impl Store for SqliteStore {
    fn get(&self, kind: Kind, id: &str) -> std::result::Result<Option<Value>, String> {
        let conn = self.conn();
        let body: Option<String> = match conn.query_row(
            "SELECT body FROM records WHERE kind = ?1 AND id = ?2",
            (kind.as_str(), id),
            |row| row.get(0),
        ) {
            Ok(b) => Some(b),
            Err(rusqlite::Error::QueryReturnedNoRows) => None,
            Err(e) => return Err(format!("store: sqlite: {e}")),
        };
        Ok(body.and_then(|b| serde_json::from_str(&b).ok()))
    }

    fn save(&self, kind: Kind, id: &str, record: &Value) -> std::result::Result<(), String> {
        self.conn()
            .execute(
                "INSERT INTO records (kind, id, body, updated_ms) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body,
                 updated_ms = excluded.updated_ms",
                (kind.as_str(), id, record.to_string(), now_ms()),
            )
            .map(|_| ())
            .map_err(|e| format!("store: sqlite: {e}"))
    }

    fn delete(&self, kind: Kind, id: &str) -> std::result::Result<bool, String> {
        self.conn()
            .execute(
                "DELETE FROM records WHERE kind = ?1 AND id = ?2",
                (kind.as_str(), id),
            )
            .map(|n| n > 0)
            .map_err(|e| format!("store: sqlite: {e}"))
    }

    fn selector(&self) -> String {
        format!("sqlite:{}", self.path)
    }
}

/// Records in a PostgreSQL table `toolnexus_records(kind, id, body,
/// updated_ms)` (`body` is the JSON text as written: a `jsonb` column would
/// reorder keys that upstream's shapes pin). The connection lives on a
/// thread of its own (the synchronous client runs a runtime of its own,
/// which must not start, nor be dropped, on a thread of another); it is
/// made on first use and made again whenever it broke, so a database that
/// went away and came back is used again with nothing to restart. A save is
/// acknowledged only once the database has it.
///
/// Every call is bounded ([`PostgresStore::CALL_TIMEOUT`]): a database that
/// stops answering (a network that drops packets, a proxy that stalls) is
/// an error naming the store after that long, never a caller stuck for
/// good; the stuck connection's thread is then left to its fate and the
/// next call starts a fresh one.
pub struct PostgresStore {
    /// The URL with any password taken out (what `selector` answers).
    shown: String,
    url: String,
    timeout: Duration,
    /// The connection thread's queue, and its generation (bumped each time
    /// a stuck thread is replaced).
    jobs: Mutex<(u64, std::sync::mpsc::Sender<PgJob>)>,
}

type PgJob = Box<dyn FnOnce(&mut PgConn) + Send>;

/// The worker's side: the URL and the connection, if one is open.
struct PgConn {
    url: String,
    timeout: Duration,
    client: Option<postgres::Client>,
}

impl PgConn {
    fn run<T>(
        &mut self,
        f: &dyn Fn(&mut postgres::Client) -> std::result::Result<T, postgres::Error>,
    ) -> std::result::Result<T, String> {
        for attempt in 0..2 {
            if self.client.as_ref().is_none_or(postgres::Client::is_closed) {
                self.client = None;
                let mut config: postgres::Config = self.url.parse().map_err(|e| format!("{e}"))?;
                config
                    .connect_timeout(self.timeout)
                    .tcp_user_timeout(self.timeout)
                    .keepalives(true)
                    .keepalives_idle(Duration::from_secs(30));
                self.client = Some(
                    config
                        .connect(postgres::NoTls)
                        .map_err(|e| format!("cannot connect: {e}"))?,
                );
            }
            let Some(c) = self.client.as_mut() else {
                continue;
            };
            match f(c) {
                Ok(v) => return Ok(v),
                // An error the database did not report itself is the
                // connection's (closed, reset, broken): the connection is
                // dropped, and the call tried once more on a new one (every
                // statement here may run twice).
                Err(e) if e.as_db_error().is_none() || e.is_closed() || c.is_closed() => {
                    self.client = None;
                    if attempt > 0 {
                        return Err(format!("{e}"));
                    }
                }
                Err(e) => return Err(format!("{e}")),
            }
        }
        Err("the connection closed twice".into())
    }
}

impl PostgresStore {
    /// How long one call may take, connecting included.
    pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);

    pub fn open(url: &str) -> Result<PostgresStore> {
        PostgresStore::open_within(url, PostgresStore::CALL_TIMEOUT)
    }

    /// [`PostgresStore::open`] with calls bounded by `timeout`.
    pub fn open_within(url: &str, timeout: Duration) -> Result<PostgresStore> {
        let shown = match url::Url::parse(url) {
            Ok(mut u) => {
                if u.password().is_some() {
                    let _ = u.set_password(Some("***"));
                }
                u.to_string()
            }
            Err(_) => "postgres://…".into(),
        };
        let worker = PostgresStore::worker(url, timeout)
            .map_err(|e| Error::invalid_config(format!("store \"{shown}\": no thread: {e}")))?;
        let store = PostgresStore {
            shown,
            url: url.into(),
            timeout,
            jobs: Mutex::new((0, worker)),
        };
        store
            .with(|c| {
                c.batch_execute(
                    "CREATE TABLE IF NOT EXISTS toolnexus_records (
                        kind TEXT NOT NULL,
                        id TEXT NOT NULL,
                        body TEXT NOT NULL,
                        updated_ms BIGINT NOT NULL,
                        PRIMARY KEY (kind, id)
                    )",
                )
            })
            .map_err(Error::invalid_config)?;
        Ok(store)
    }

    /// A connection thread: it runs the jobs sent to it, one at a time,
    /// until the sender is dropped.
    fn worker(url: &str, timeout: Duration) -> std::io::Result<std::sync::mpsc::Sender<PgJob>> {
        let (tx, rx) = std::sync::mpsc::channel::<PgJob>();
        let mut conn = PgConn {
            url: url.into(),
            timeout,
            client: None,
        };
        std::thread::Builder::new()
            .name("toolnexus-postgres".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job(&mut conn);
                }
            })?;
        Ok(tx)
    }

    /// Runs `f` on the store's thread and waits for its answer, at most the
    /// store's timeout. A failure is a sentence naming the store.
    fn with<T: Send + 'static>(
        &self,
        f: impl Fn(&mut postgres::Client) -> std::result::Result<T, postgres::Error> + Send + 'static,
    ) -> std::result::Result<T, String> {
        let named = |e: String| format!("store \"{}\": {e}", self.shown);
        let (tx, rx) = std::sync::mpsc::channel();
        let job: PgJob = Box::new(move |conn: &mut PgConn| {
            let _ = tx.send(conn.run(&f));
        });
        let generation = {
            let jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
            jobs.1
                .send(job)
                .map_err(|_| named("the store's connection thread is gone".into()))?;
            jobs.0
        };
        // The connection's own timeouts come first; this one catches a
        // database that accepted the connection and then went silent.
        match rx.recv_timeout(self.timeout + Duration::from_millis(500)) {
            Ok(answer) => answer.map_err(named),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                self.replace_worker(generation);
                Err(named(format!(
                    "no answer within {} ms (the database may be unreachable)",
                    self.timeout.as_millis()
                )))
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                Err(named("the store's connection thread is gone".into()))
            }
        }
    }

    /// Gives the store a fresh connection thread in place of the one of
    /// `generation`, stuck on a silent database (once per generation,
    /// however many callers gave up on it).
    fn replace_worker(&self, generation: u64) {
        let mut jobs = self.jobs.lock().unwrap_or_else(|p| p.into_inner());
        if jobs.0 != generation {
            return;
        }
        if let Ok(fresh) = PostgresStore::worker(&self.url, self.timeout) {
            *jobs = (generation + 1, fresh);
        }
    }
}

impl Store for PostgresStore {
    fn get(&self, kind: Kind, id: &str) -> std::result::Result<Option<Value>, String> {
        let id = id.to_string();
        self.with(move |c| {
            c.query_opt(
                "SELECT body FROM toolnexus_records WHERE kind = $1 AND id = $2",
                &[&kind.as_str(), &id],
            )
            .map(|row| row.map(|r| r.get::<_, String>(0)))
        })
        .map(|body| body.and_then(|b| serde_json::from_str(&b).ok()))
    }

    fn save(&self, kind: Kind, id: &str, record: &Value) -> std::result::Result<(), String> {
        let (id, body) = (id.to_string(), record.to_string());
        self.with(move |c| {
            c.execute(
                "INSERT INTO toolnexus_records (kind, id, body, updated_ms)
                 VALUES ($1, $2, $3, $4)
                 ON CONFLICT (kind, id) DO UPDATE SET body = excluded.body,
                 updated_ms = excluded.updated_ms",
                &[&kind.as_str(), &id, &body, &now_ms()],
            )
        })
        .map(|_| ())
    }

    fn delete(&self, kind: Kind, id: &str) -> std::result::Result<bool, String> {
        let id = id.to_string();
        self.with(move |c| {
            c.execute(
                "DELETE FROM toolnexus_records WHERE kind = $1 AND id = $2",
                &[&kind.as_str(), &id],
            )
        })
        .map(|n| n > 0)
    }

    fn selector(&self) -> String {
        self.shown.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn round_trip(store: &dyn Store) {
        let task = json!({"id": "t/1", "status": {"state": "submitted"}});
        assert_eq!(store.get(Kind::Task, "t/1"), Ok(None));
        store.save(Kind::Task, "t/1", &task).expect("save");
        assert_eq!(store.get(Kind::Task, "t/1"), Ok(Some(task)));
        // The kinds are separate spaces of ids.
        assert_eq!(store.get(Kind::Conversation, "t/1"), Ok(None));
        let later = json!({"id": "t/1", "status": {"state": "completed"}});
        store.save(Kind::Task, "t/1", &later).expect("save again");
        assert_eq!(store.get(Kind::Task, "t/1"), Ok(Some(later)));
        let convo = json!([{"role": "user", "content": "hi"}]);
        store
            .save(Kind::Conversation, "ctx-1", &convo)
            .expect("save a conversation");
        store
            .save(Kind::Checkpoint, "ctx-1", &json!({"turn": 3}))
            .expect("save a checkpoint");
        assert_eq!(store.get(Kind::Conversation, "ctx-1"), Ok(Some(convo)));
        assert_eq!(
            store.get(Kind::Checkpoint, "ctx-1"),
            Ok(Some(json!({"turn": 3})))
        );
        assert_eq!(store.delete(Kind::Task, "t/1"), Ok(true));
        assert_eq!(store.delete(Kind::Task, "t/1"), Ok(false));
        assert_eq!(store.get(Kind::Task, "t/1"), Ok(None));
    }

    #[test]
    fn memory_round_trip() {
        let s = resolve(None).expect("memory");
        assert_eq!(s.selector(), "memory");
        round_trip(&*s);
        assert_eq!(
            resolve(Some("memory")).expect("memory").selector(),
            "memory"
        );
        assert_eq!(resolve(Some("")).expect("memory").selector(), "memory");
    }

    fn task(id: &str, state: &str) -> Value {
        json!({"id": id, "status": {"state": state}})
    }

    #[test]
    fn the_memory_store_forgets_the_oldest_finished_tasks_past_its_cap() {
        let s = MemoryStore::with_caps(3, 2);
        // Two tasks that never finish, then five that do.
        s.save(Kind::Task, "run", &task("run", "working"))
            .expect("save");
        s.save(Kind::Task, "ask", &task("ask", "input-required"))
            .expect("save");
        for (i, state) in ["completed", "failed", "canceled", "rejected", "completed"]
            .iter()
            .enumerate()
        {
            let id = format!("done{i}");
            s.save(Kind::Task, &id, &task(&id, "submitted"))
                .expect("save");
            s.save(Kind::Task, &id, &task(&id, state)).expect("save");
        }
        let kept = |id: &str| s.get(Kind::Task, id).expect("get").is_some();
        // The two that finished first are gone, the last three kept, and
        // the unfinished ones are never dropped.
        assert!(!kept("done0") && !kept("done1"));
        assert!(kept("done2") && kept("done3") && kept("done4"));
        assert!(kept("run") && kept("ask"));
        // A task saved again (finished again) counts as finishing now.
        s.save(Kind::Task, "done2", &task("done2", "completed"))
            .expect("save");
        s.save(Kind::Task, "later", &task("later", "completed"))
            .expect("save");
        assert!(!kept("done3") && kept("done2") && kept("later") && kept("done4"));
        // A deleted task frees its place.
        assert_eq!(s.delete(Kind::Task, "done4"), Ok(true));
        s.save(Kind::Task, "again", &task("again", "failed"))
            .expect("save");
        assert!(kept("done2") && kept("later") && kept("again"));
        // Checkpoints are never capped.
        for i in 0..10 {
            s.save(Kind::Checkpoint, &format!("c{i}"), &json!({"n": i}))
                .expect("save");
        }
        assert_eq!(s.get(Kind::Checkpoint, "c0"), Ok(Some(json!({"n": 0}))));
        // Many checkpoint saves and deletes leave the tasks' queue alone:
        // the next finished task still pushes out the oldest one.
        for _ in 0..200 {
            s.save(Kind::Checkpoint, "c", &json!({})).expect("save");
            assert_eq!(s.delete(Kind::Checkpoint, "c"), Ok(true));
        }
        s.save(Kind::Task, "last", &task("last", "completed"))
            .expect("save");
        assert!(!kept("done2") && kept("later") && kept("again") && kept("last"));
    }

    #[test]
    fn the_memory_store_forgets_the_least_recently_saved_conversation_past_its_cap() {
        let s = MemoryStore::with_caps(3, 2);
        s.save(Kind::Conversation, "a", &json!([1])).expect("save");
        s.save(Kind::Conversation, "b", &json!([2])).expect("save");
        // Saving `a` again makes `b` the one saved longest ago.
        s.save(Kind::Conversation, "a", &json!([1, 1]))
            .expect("save");
        s.save(Kind::Conversation, "c", &json!([3])).expect("save");
        assert_eq!(s.get(Kind::Conversation, "b"), Ok(None));
        assert_eq!(s.get(Kind::Conversation, "a"), Ok(Some(json!([1, 1]))));
        assert_eq!(s.get(Kind::Conversation, "c"), Ok(Some(json!([3]))));
    }

    #[test]
    fn the_memory_store_stays_bounded_under_many_saves_of_one_record() {
        let s = MemoryStore::with_caps(4, 4);
        for i in 0..10_000 {
            s.save(Kind::Conversation, "same", &json!([i]))
                .expect("save");
            s.save(Kind::Task, "t", &task("t", "completed"))
                .expect("save");
        }
        {
            let r = s.records();
            assert_eq!(r.map.len(), 2);
            // Stale entries are compacted away: the queues stay small.
            assert!(
                r.finished.order.len() <= 2 * r.finished.live + 65,
                "{}",
                r.finished.order.len()
            );
            assert!(r.conversations.order.len() <= 2 * r.conversations.live + 65);
        }
        assert_eq!(s.get(Kind::Conversation, "same"), Ok(Some(json!([9999]))));
    }

    #[test]
    fn file_round_trip_survives_a_reopen_and_uses_upstreams_layout() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sel = format!("file:{}", dir.path().join("tasks").display());
        let s = resolve(Some(&sel)).expect("file store");
        round_trip(&*s);
        s.save(Kind::Task, "a b", &json!({"id": "a b"}))
            .expect("save");
        // Upstream's file: <dir>/<sanitize(id)>.json, and no temp file left.
        let names: Vec<String> = fs::read_dir(dir.path().join("tasks"))
            .expect("list")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json") || n.ends_with(".tmp"))
            .collect();
        assert_eq!(names, vec!["a_b.json".to_string()]);
        let again = resolve(Some(&sel)).expect("reopen");
        assert_eq!(again.get(Kind::Task, "a b"), Ok(Some(json!({"id": "a b"}))));
        // An unreadable file is an unknown id, not an error.
        fs::write(dir.path().join("tasks/broken.json"), "{not json").expect("write");
        assert_eq!(again.get(Kind::Task, "broken"), Ok(None));
    }

    #[test]
    fn sqlite_round_trip_survives_a_reopen_and_is_shared() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sel = format!("sqlite:{}", dir.path().join("a2a.db").display());
        let s = resolve(Some(&sel)).expect("sqlite store");
        round_trip(&*s);
        s.save(Kind::Task, "kept", &json!({"id": "kept"}))
            .expect("save");
        // A second connection (another process would do the same) sees it.
        let other = resolve(Some(&sel)).expect("second connection");
        assert_eq!(
            other.get(Kind::Task, "kept"),
            Ok(Some(json!({"id": "kept"})))
        );
        other
            .save(Kind::Task, "from-other", &json!({"n": 2}))
            .expect("save");
        assert_eq!(s.get(Kind::Task, "from-other"), Ok(Some(json!({"n": 2}))));
        drop((s, other));
        let reopened = resolve(Some(&sel)).expect("reopen");
        assert_eq!(
            reopened.get(Kind::Task, "kept"),
            Ok(Some(json!({"id": "kept"})))
        );
    }

    #[test]
    fn concurrent_saves_to_one_file_store_never_tear_a_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s: Arc<dyn Store> =
            Arc::new(FileStore::open(&dir.path().display().to_string()).expect("open"));
        let writers: Vec<_> =
            (0..4)
                .map(|w| {
                    let s = Arc::clone(&s);
                    std::thread::spawn(move || {
                        for i in 0..50 {
                            let body = json!({"writer": w, "i": i, "pad": "x".repeat(4096)});
                            s.save(Kind::Task, "same", &body).expect("save");
                            let read = s.get(Kind::Task, "same").expect("get");
                            assert!(
                                read.is_some_and(|v| v["pad"].as_str().map(str::len) == Some(4096))
                            );
                        }
                    })
                })
                .collect();
        for w in writers {
            w.join().expect("writer");
        }
    }

    /// `TN_TEST_POSTGRES` (a URL), else the default local server; the test
    /// says plainly when there is none to talk to.
    fn postgres_url() -> Option<String> {
        let url = std::env::var("TN_TEST_POSTGRES")
            .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into());
        let reachable = url::Url::parse(&url).ok().and_then(|u| {
            let addr = format!("{}:{}", u.host_str()?, u.port().unwrap_or(5432));
            std::net::TcpStream::connect(addr).ok()
        });
        if reachable.is_none() {
            eprintln!("postgres store: SKIPPED, no server at {url} (set TN_TEST_POSTGRES)");
            return None;
        }
        Some(url)
    }

    #[test]
    fn postgres_round_trip_is_shared_between_connections() {
        let Some(url) = postgres_url() else { return };
        let s = resolve(Some(&url)).unwrap_or_else(|e| panic!("{e}"));
        // Ids of this run only, so that runs sharing a database do not meet.
        let run = uuid::Uuid::new_v4().to_string();
        let id = |n: &str| format!("{run}-{n}");
        let task = json!({"id": id("t"), "status": {"state": "submitted"}});
        assert_eq!(s.get(Kind::Task, &id("t")), Ok(None));
        s.save(Kind::Task, &id("t"), &task).expect("save");
        let other = resolve(Some(&url)).expect("a second connection");
        // Read back byte for byte: the keys keep the order they were saved in.
        let read = other
            .get(Kind::Task, &id("t"))
            .expect("get")
            .expect("saved");
        assert_eq!(read.to_string(), task.to_string());
        assert_eq!(other.get(Kind::Conversation, &id("t")), Ok(None));
        let done = json!({"id": id("t"), "status": {"state": "completed"}});
        other.save(Kind::Task, &id("t"), &done).expect("save again");
        assert_eq!(s.get(Kind::Task, &id("t")), Ok(Some(done)));
        assert_eq!(s.delete(Kind::Task, &id("t")), Ok(true));
        assert_eq!(other.get(Kind::Task, &id("t")), Ok(None));
    }

    #[test]
    fn an_unreachable_postgres_is_a_clear_error() {
        let e = resolve(Some("postgres://nobody:secret@127.0.0.1:1/none"))
            .err()
            .expect("refused");
        assert_eq!(e.code, crate::error::ErrorCode::InvalidConfig);
        assert!(e.message.contains("cannot connect"), "{}", e.message);
        assert!(!e.message.contains("secret"), "{}", e.message);
    }

    /// A memory store that counts its live copies (what a host's
    /// `user_data_free` would see).
    struct Counted(MemoryStore, Arc<AtomicU64>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    impl Store for Counted {
        fn get(&self, kind: Kind, id: &str) -> std::result::Result<Option<Value>, String> {
            self.0.get(kind, id)
        }
        fn save(&self, kind: Kind, id: &str, record: &Value) -> std::result::Result<(), String> {
            self.0.save(kind, id, record)
        }
        fn delete(&self, kind: Kind, id: &str) -> std::result::Result<bool, String> {
            self.0.delete(kind, id)
        }
        fn selector(&self) -> String {
            "host:counted".into()
        }
    }

    #[test]
    fn a_registered_host_store_is_named_by_its_selector_and_outlives_unregister() {
        let name = format!("unit-{}", uuid::Uuid::new_v4());
        let sel = format!("host:{name}");
        let dropped = Arc::new(AtomicU64::new(0));
        let e = resolve(Some(&sel)).err().expect("nothing registered yet");
        assert_eq!(e.code, crate::error::ErrorCode::InvalidConfig);
        assert!(e.message.contains(&sel), "{}", e.message);
        let store = Counted(MemoryStore::default(), Arc::clone(&dropped));
        register(&name, Arc::new(store)).expect("register");
        let again = Counted(MemoryStore::default(), Arc::clone(&dropped));
        let e = register(&name, Arc::new(again)).expect_err("a second one");
        assert_eq!(e.code, crate::error::ErrorCode::InvalidArgument);
        assert!(e.message.contains("already registered"), "{}", e.message);
        // The refused one is released at once; the registered one is not.
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        let s = resolve(Some(&sel)).expect("resolved");
        round_trip(&*s);
        s.save(Kind::Task, "kept", &json!({"n": 1})).expect("save");
        // Another resolve is the same store, not a copy.
        let other = resolve(Some(&sel)).expect("resolved again");
        assert_eq!(other.get(Kind::Task, "kept"), Ok(Some(json!({"n": 1}))));
        drop(other);
        assert!(unregister(&name));
        assert!(!unregister(&name));
        assert!(resolve(Some(&sel)).is_err());
        // Still in use: still there, released with its last user.
        assert_eq!(dropped.load(Ordering::SeqCst), 1);
        assert_eq!(s.get(Kind::Task, "kept"), Ok(Some(json!({"n": 1}))));
        drop(s);
        assert_eq!(dropped.load(Ordering::SeqCst), 2);
        assert!(register("", Arc::new(MemoryStore::default())).is_err());
    }

    #[test]
    fn a_postgres_that_accepts_and_never_answers_is_an_error_in_bounded_time() {
        // A server that takes the connection and says nothing: the client's
        // own connect timeout does not cover the handshake.
        let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = silent.local_addr().expect("addr").port();
        let held = std::thread::spawn(move || {
            let mut kept = Vec::new();
            for conn in silent.incoming().take(1) {
                kept.push(conn);
            }
            std::thread::sleep(Duration::from_secs(3));
        });
        let url = format!("postgres://nobody@127.0.0.1:{port}/none");
        let started = std::time::Instant::now();
        let e = PostgresStore::open_within(&url, Duration::from_millis(300))
            .err()
            .expect("refused");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(e.code, crate::error::ErrorCode::InvalidConfig);
        assert_eq!(
            e.message,
            format!("store \"{url}\": no answer within 300 ms (the database may be unreachable)")
        );
        drop(held);
    }

    #[test]
    fn unknown_selectors_are_upstreams_sentence() {
        for sel in ["redis://x", "File:/tmp", "sqlite"] {
            let e = resolve(Some(sel)).err().expect("refused");
            assert_eq!(
                e.message,
                format!("unknown A2A store: \"{sel}\" (expected \"memory\" or \"file:<dir>\")")
            );
            assert_eq!(e.code, crate::error::ErrorCode::InvalidConfig);
        }
        assert!(resolve(Some("file:")).is_err());
        assert!(resolve(Some("sqlite:")).is_err());
    }
}
