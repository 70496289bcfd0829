//! MCP authorization (OAuth 2.1) for streamable HTTP servers, on rmcp's
//! `auth` feature (`AuthorizationManager` does discovery, registration, PKCE,
//! the token and refresh requests; this module decides when, holds the
//! tokens and asks the host).
//!
//! A request that comes back `401` with `WWW-Authenticate` (or without one)
//! starts the flow: the challenge's `resource_metadata`, else the
//! protected-resource metadata well-known URIs (RFC 9728), then the
//! authorization server's metadata (RFC 8414, OpenID discovery, with the
//! path-insertion and path-appended fallbacks; a server that publishes none
//! gets the 2025-03-26 default endpoints `/authorize`, `/token`,
//! `/register`). Discovered metadata without PKCE S256 in
//! `code_challenge_methods_supported` is refused. The client is the
//! configured one (`clientId`), else a client ID metadata document
//! (`clientMetadataUrl`, when the server says it takes them), else one
//! registered earlier with this issuer (the store), else dynamic
//! registration. Scopes: the configured ones, else the challenge's `scope`,
//! else the protected resource's `scopes_supported`, else none
//! (`offline_access` added when the server lists it). The host's
//! `authorize` callback opens the authorization URL (which carries PKCE
//! S256, `state` and `resource`, RFC 8707) and answers the redirect URL; its
//! `state` and `iss` are checked, and the code exchanged (with `resource`).
//! `client_credentials` needs no host: the configured secret buys the token.
//!
//! Afterwards every request carries `Authorization: Bearer`; a token near
//! its expiry is refreshed first (refresh tokens rotate: the new one is
//! stored), a `401` is answered by one refresh and then a new authorization,
//! and a `403` with `error="insufficient_scope"` by an authorization for the
//! union of the scopes asked so far and the challenge's — at most
//! [`MAX_AUTHORIZATIONS`] authorizations for one request.
//!
//! Tokens live in a [`Store`]: memory (the session's), or a JSON file kept
//! at mode 0600 (written whole through a rename, read again when it
//! changed, refreshes serialized across processes by a lock file beside
//! it). No token, code, verifier or secret is logged or put in an error
//! text: every message this module makes has them taken out.

use crate::cancel::CancelToken;
use rmcp::transport::auth::{
    AuthError, AuthorizationCallback, AuthorizationManager, ClientCredentialsConfig,
    CredentialRefreshGuard, CredentialStore, OAuthClientConfig, OAuthHttpClient,
    OAuthHttpClientFuture, OAuthHttpRedirectPolicy, OAuthHttpRequest, StoredCredentials,
    WWWAuthenticateParams,
};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

/// The host's `authorize` callback (the browser step): the event
/// `{server, url, redirectUri, resource}` in, the URL the authorization
/// server redirected to (carrying `code` and `state`) out, or why not.
/// `stop` is triggered once nobody waits for the answer (the toolkit closes,
/// the wait ran out). Called on a thread of the library's pool.
pub type Authorize = Arc<dyn Fn(&Value, &CancelToken) -> Result<String, String> + Send + Sync>;

/// Authorizations one request may go through (a `401` and the `403`
/// step-ups after it) before it fails.
pub const MAX_AUTHORIZATIONS: u32 = 3;

/// The longest `WWW-Authenticate` value whose parameters are read; a longer
/// one counts as a challenge without parameters (discovery then goes by the
/// well-known URIs).
pub const MAX_CHALLENGE: usize = 4096;

/// The redirect URI when the config names none.
pub const DEFAULT_REDIRECT_URI: &str = "http://127.0.0.1:8976/callback";

/// How long the host's `authorize` may take when the config says nothing.
pub const DEFAULT_AUTHORIZE_TIMEOUT: Duration = Duration::from_secs(300);

/// The largest body read from an authorization server.
const MAX_OAUTH_BODY: usize = 1 << 20;

/// How an error text quotes what a server sent: at most this many bytes.
const QUOTE: usize = 240;

/// The OAuth grant a server is authorized with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grant {
    /// A human in a browser, through the host's `authorize`.
    AuthorizationCode,
    /// A confidential client's own credentials (`clientId` + `clientSecret`).
    ClientCredentials,
    /// An enterprise IdP's ID token, exchanged for an identity assertion
    /// (SEP-990): `idp` + `clientId` + `clientSecret`, no human.
    IdentityAssertion,
}

/// The enterprise identity provider of the identity assertion grant.
#[derive(Clone, PartialEq)]
pub struct IdpConfig {
    /// The IdP's token endpoint (RFC 8693 token exchange).
    pub token_endpoint: String,
    /// The ID token the host's single sign-on got (`${NAME}` expanded). A
    /// secret.
    pub id_token: String,
    /// This client at the IdP, when it wants one.
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// Where a server's tokens are kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreSpec {
    /// The session's memory: gone when the toolkit closes.
    Memory,
    /// A JSON file (mode 0600), shared by every toolkit and process that
    /// names it, one entry per server URL.
    File(PathBuf),
}

/// A server's `auth` settings.
#[derive(Clone, PartialEq)]
pub struct AuthConfig {
    pub grant: Grant,
    /// A pre-registered client.
    pub client_id: Option<String>,
    /// Its secret (after `${ENV}` expansion). Never printed.
    pub client_secret: Option<String>,
    /// The identity provider of the `identity_assertion` grant.
    pub idp: Option<IdpConfig>,
    /// A private key (PKCS#8 PEM, ES256 or RS256) that signs a JWT client
    /// assertion instead of a secret (`private_key_jwt`, RFC 7523), for
    /// the `client_credentials` grant. Never printed.
    pub private_key: Option<String>,
    /// An https URL of this client's metadata document (SEP-991), used as
    /// the client ID where the authorization server takes them.
    pub client_metadata_url: Option<String>,
    /// `client_name` in a dynamic registration.
    pub client_name: String,
    /// Scopes to ask for instead of the discovered ones.
    pub scopes: Vec<String>,
    pub redirect_uri: String,
    pub store: StoreSpec,
    /// The longest the host's `authorize` may take.
    pub authorize_timeout: Duration,
}

impl std::fmt::Debug for AuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthConfig")
            .field("grant", &self.grant)
            .field("client_id", &self.client_id)
            .field("client_secret", &self.client_secret.as_ref().map(|_| ".."))
            .field("private_key", &self.private_key.as_ref().map(|_| ".."))
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("redirect_uri", &self.redirect_uri)
            .field("store", &self.store)
            .finish()
    }
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            grant: Grant::AuthorizationCode,
            client_id: None,
            client_secret: None,
            private_key: None,
            idp: None,
            client_metadata_url: None,
            client_name: "toolnexus".into(),
            scopes: Vec::new(),
            redirect_uri: DEFAULT_REDIRECT_URI.into(),
            store: StoreSpec::Memory,
            authorize_timeout: DEFAULT_AUTHORIZE_TIMEOUT,
        }
    }
}

/// What a remote server's config says about authorization.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum AuthSetting {
    /// No `auth` key: OAuth with the defaults when the toolkit has an
    /// `authorize` callback and the server's headers set no
    /// `Authorization`; otherwise none.
    #[default]
    Auto,
    /// `"auth": false`.
    Off,
    /// `"auth": true` or an object.
    On(Box<AuthConfig>),
}

impl AuthSetting {
    /// The settings a connect uses, if any.
    pub fn effective(
        &self,
        has_authorize: bool,
        headers: &[(String, String)],
    ) -> Option<AuthConfig> {
        match self {
            AuthSetting::Off => None,
            AuthSetting::On(c) => Some(c.as_ref().clone()),
            AuthSetting::Auto => {
                let preset = headers
                    .iter()
                    .any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
                (has_authorize && !preset).then(AuthConfig::default)
            }
        }
    }
}

/// A host `authorize` carried by a server's config (not data: its Debug
/// says only whether it is set, and it takes no part in equality).
#[derive(Clone, Default)]
pub struct HostAuthorize(pub Option<Authorize>);

impl std::fmt::Debug for HostAuthorize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "HostAuthorize(set)"
        } else {
            "HostAuthorize(none)"
        })
    }
}

impl PartialEq for HostAuthorize {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Reads a server's `auth` value; `${ENV}` in `clientSecret` and `clientId`
/// is expanded and remembered in `secrets` (redacted from everything this
/// server reports).
pub fn parse(
    value: Option<&Value>,
    secrets: &mut crate::env::Secrets,
) -> Result<AuthSetting, String> {
    let m = match value {
        None | Some(Value::Null) => return Ok(AuthSetting::Auto),
        Some(Value::Bool(false)) => return Ok(AuthSetting::Off),
        Some(Value::Bool(true)) => return Ok(AuthSetting::On(Box::default())),
        Some(Value::Object(m)) => m,
        Some(other) => {
            return Err(format!(
                "auth: expected an object, true or false, got {}",
                crate::json::type_name(other)
            ))
        }
    };
    const KEYS: [&str; 12] = [
        "grant",
        "idp",
        "clientId",
        "clientSecret",
        "privateKey",
        "privateKeyFile",
        "clientMetadataUrl",
        "clientName",
        "scopes",
        "redirectUri",
        "store",
        "authorizeTimeoutMs",
    ];
    if let Some(k) = m.keys().find(|k| !KEYS.contains(&k.as_str())) {
        return Err(format!(
            "auth.{k}: unknown key (expected one of {})",
            KEYS.join(", ")
        ));
    }
    let text = |key: &str| -> Result<Option<String>, String> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(format!(
                "auth.{key}: expected a string, got {}",
                crate::json::type_name(other)
            )),
        }
    };
    let grant = match text("grant")?.as_deref() {
        None | Some("authorization_code") => Grant::AuthorizationCode,
        Some("client_credentials") => Grant::ClientCredentials,
        Some("identity_assertion") => Grant::IdentityAssertion,
        Some(other) => {
            return Err(format!(
                "auth.grant: expected \"authorization_code\", \"client_credentials\" or \"identity_assertion\", got \"{other}\""
            ))
        }
    };
    let mut cfg = AuthConfig {
        grant,
        ..AuthConfig::default()
    };
    cfg.idp = match m.get("idp") {
        None | Some(Value::Null) => None,
        Some(Value::Object(i)) => {
            let mut field = |key: &str| -> Result<Option<String>, String> {
                match i.get(key) {
                    None | Some(Value::Null) => Ok(None),
                    Some(Value::String(s)) => Ok(Some(secrets.expand(s))),
                    Some(other) => Err(format!(
                        "auth.idp.{key}: expected a string, got {}",
                        crate::json::type_name(other)
                    )),
                }
            };
            let token_endpoint = field("tokenEndpoint")?;
            let id_token = field("idToken")?;
            let client_id = field("clientId")?;
            let client_secret = field("clientSecret")?;
            let (Some(token_endpoint), Some(id_token)) = (token_endpoint, id_token) else {
                return Err("auth.idp: needs tokenEndpoint and idToken".into());
            };
            secrets.remember(&id_token);
            if let Some(s) = &client_secret {
                secrets.remember(s);
            }
            Some(IdpConfig {
                token_endpoint,
                id_token,
                client_id,
                client_secret,
            })
        }
        Some(other) => {
            return Err(format!(
                "auth.idp: expected an object, got {}",
                crate::json::type_name(other)
            ))
        }
    };
    cfg.client_id = text("clientId")?
        .map(|s| secrets.expand(&s))
        .filter(|s| !s.is_empty());
    cfg.client_secret = text("clientSecret")?
        .map(|s| {
            let expanded = secrets.expand(&s);
            // A literal secret is as secret as an expanded one.
            secrets.remember(&expanded);
            expanded
        })
        .filter(|s| !s.is_empty());
    cfg.private_key = match (text("privateKey")?, text("privateKeyFile")?) {
        (Some(_), Some(_)) => {
            return Err("auth: privateKey and privateKeyFile exclude each other".into())
        }
        (Some(pem), None) => Some(secrets.expand(&pem)),
        (None, Some(path)) => {
            let path = crate::env::expand(&path);
            Some(
                std::fs::read_to_string(&path)
                    .map_err(|e| format!("auth.privateKeyFile: cannot read '{path}': {e}"))?,
            )
        }
        (None, None) => None,
    };
    if let Some(pem) = &cfg.private_key {
        signing_key(pem).map_err(|e| format!("auth.privateKey: {e}"))?;
        for line in pem.lines().filter(|l| !l.starts_with("-----")) {
            secrets.remember(line.trim());
        }
        secrets.remember(pem);
    }
    cfg.client_metadata_url = text("clientMetadataUrl")?;
    if let Some(u) = &cfg.client_metadata_url {
        let ok = url::Url::parse(u)
            .map(|p| p.scheme() == "https" && p.path() != "/" && p.host_str().is_some())
            .unwrap_or(false);
        if !ok {
            return Err("auth.clientMetadataUrl: expected an https URL with a path".into());
        }
    }
    if let Some(n) = text("clientName")? {
        cfg.client_name = n;
    }
    cfg.scopes = match m.get("scopes") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => s.split_whitespace().map(String::from).collect(),
        Some(Value::Array(items)) => {
            let mut out = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => out.push(s.clone()),
                    other => {
                        return Err(format!(
                            "auth.scopes[{i}]: expected a string, got {}",
                            crate::json::type_name(other)
                        ))
                    }
                }
            }
            out
        }
        Some(other) => {
            return Err(format!(
                "auth.scopes: expected an array of strings or one space-separated string, got {}",
                crate::json::type_name(other)
            ))
        }
    };
    if let Some(r) = text("redirectUri")? {
        if url::Url::parse(&r)
            .map(|u| u.host_str().is_none())
            .unwrap_or(true)
        {
            return Err(format!("auth.redirectUri: \"{r}\" is not an absolute URL"));
        }
        cfg.redirect_uri = r;
    }
    cfg.store = match text("store")?.as_deref() {
        None | Some("memory") => StoreSpec::Memory,
        Some(s) => match s.strip_prefix("file:") {
            Some(p) if !p.is_empty() => StoreSpec::File(PathBuf::from(crate::env::expand(p))),
            _ => {
                return Err(format!(
                    "auth.store: expected \"memory\" or \"file:PATH\", got \"{s}\""
                ))
            }
        },
    };
    cfg.authorize_timeout = match m.get("authorizeTimeoutMs") {
        None | Some(Value::Null) => DEFAULT_AUTHORIZE_TIMEOUT,
        Some(v) => match v.as_u64() {
            Some(ms) if ms > 0 => Duration::from_millis(ms),
            _ => {
                return Err(format!(
                    "auth.authorizeTimeoutMs: expected a positive number of milliseconds, got {v}"
                ))
            }
        },
    };
    if cfg.grant == Grant::IdentityAssertion
        && (cfg.idp.is_none() || cfg.client_id.is_none() || cfg.client_secret.is_none())
    {
        return Err(
            "auth: the identity_assertion grant needs idp, clientId and clientSecret".into(),
        );
    }
    if cfg.grant == Grant::ClientCredentials
        && (cfg.client_id.is_none() || (cfg.client_secret.is_none() && cfg.private_key.is_none()))
    {
        return Err(
            "auth: the client_credentials grant needs clientId and clientSecret (or privateKey)"
                .into(),
        );
    }
    Ok(AuthSetting::On(Box::new(cfg)))
}

// ---------------------------------------------------------------------------
// The time a human spends in the browser, which no connect timeout counts.

/// Counts the time spent in the host's `authorize`, so that a connect's
/// phase timeouts ([`AuthClock::bound`]) leave it out.
#[derive(Default)]
pub struct AuthClock {
    busy: AtomicUsize,
    spent_ms: AtomicU64,
    idle: Notify,
}

/// One wait on the host; dropping it adds the time to the clock.
struct Paused<'a> {
    clock: &'a AuthClock,
    since: Instant,
}

impl Drop for Paused<'_> {
    fn drop(&mut self) {
        let ms = u64::try_from(self.since.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.clock.spent_ms.fetch_add(ms, Ordering::SeqCst);
        self.clock.busy.fetch_sub(1, Ordering::SeqCst);
        self.clock.idle.notify_waiters();
    }
}

impl AuthClock {
    fn pause(&self) -> Paused<'_> {
        self.busy.fetch_add(1, Ordering::SeqCst);
        Paused {
            clock: self,
            since: Instant::now(),
        }
    }

    fn spent(&self) -> Duration {
        Duration::from_millis(self.spent_ms.load(Ordering::SeqCst))
    }

    /// `fut`'s output, or `None` once `limit` passed, not counting the time
    /// the host's `authorize` took (nor the time it is still taking).
    pub async fn bound<F: std::future::Future>(
        &self,
        limit: Duration,
        fut: F,
    ) -> Option<F::Output> {
        let start = tokio::time::Instant::now();
        tokio::pin!(fut);
        loop {
            let deadline = start + limit + self.spent();
            tokio::select! {
                out = &mut fut => return Some(out),
                _ = tokio::time::sleep_until(deadline) => {}
            }
            // Wait for the host while the work goes on.
            loop {
                let idle = self.idle.notified();
                tokio::pin!(idle);
                idle.as_mut().enable();
                if self.busy.load(Ordering::SeqCst) == 0 {
                    break;
                }
                tokio::select! {
                    out = &mut fut => return Some(out),
                    _ = idle => {}
                }
            }
            if tokio::time::Instant::now() >= start + limit + self.spent() {
                return None;
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Credential stores.

/// What a store keeps per server: the client it registered or was given,
/// and rmcp's credentials (the token response, granted scopes, issuer).
#[derive(Clone, Default, Serialize, Deserialize)]
struct Entry {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client: Option<ClientInfo>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    credentials: Option<StoredCredentials>,
}

#[derive(Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
struct ClientInfo {
    client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
    /// The issuer the client was registered with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    issuer: Option<String>,
}

#[derive(Default, Serialize, Deserialize)]
struct StoreFile {
    version: u32,
    #[serde(default)]
    servers: Map<String, Value>,
}

/// A server's credential store (rmcp's [`CredentialStore`], plus the
/// registered client).
pub struct Store {
    /// The entry's key in a file: the server URL.
    key: String,
    kind: StoreKind,
}

enum StoreKind {
    Memory(Mutex<Entry>),
    File {
        path: PathBuf,
        /// The last entry read and the file's (mtime, length) then.
        cache: Mutex<Option<(FileStamp, Entry)>>,
        /// Set while this store holds the lock file (a refresh).
        locked: Arc<AtomicBool>,
    },
}

type FileStamp = (std::time::SystemTime, u64);

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

fn store_error(what: &str, path: &Path, e: impl std::fmt::Display) -> AuthError {
    AuthError::CredentialStoreError(format!("{what} {}: {e}", path.display()))
}

impl Store {
    pub fn new(spec: &StoreSpec, key: &str) -> Store {
        let kind = match spec {
            StoreSpec::Memory => StoreKind::Memory(Mutex::new(Entry::default())),
            StoreSpec::File(path) => StoreKind::File {
                path: path.clone(),
                cache: Mutex::new(None),
                locked: Arc::new(AtomicBool::new(false)),
            },
        };
        Store {
            key: key.to_string(),
            kind,
        }
    }

    fn entry(&self) -> Result<Entry, AuthError> {
        self.read(Entry::clone)
    }

    /// `look` at the entry: a memory store's, or a file's as last read
    /// while the file's stamp has not changed (so each request clones only
    /// what it takes).
    fn read<R>(&self, look: impl FnOnce(&Entry) -> R) -> Result<R, AuthError> {
        match &self.kind {
            StoreKind::Memory(e) => Ok(look(&lock(e))),
            StoreKind::File { path, cache, .. } => {
                let stamp = match std::fs::metadata(path) {
                    Ok(m) => (m.modified().unwrap_or(std::time::UNIX_EPOCH), m.len()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        return Ok(look(&Entry::default()))
                    }
                    Err(e) => return Err(store_error("cannot read", path, e)),
                };
                let mut cached = lock(cache);
                if let Some((seen, entry)) = cached.as_ref() {
                    if *seen == stamp {
                        return Ok(look(entry));
                    }
                }
                let file = read_store_file(path)?;
                let entry = file
                    .servers
                    .get(&self.key)
                    .and_then(|v| serde_json::from_value::<Entry>(v.clone()).ok())
                    .unwrap_or_default();
                let seen = look(&entry);
                *cached = Some((stamp, entry));
                Ok(seen)
            }
        }
    }

    fn update(&self, change: impl FnOnce(&mut Entry)) -> Result<(), AuthError> {
        match &self.kind {
            StoreKind::Memory(e) => {
                change(&mut lock(e));
                Ok(())
            }
            StoreKind::File {
                path,
                cache,
                locked,
            } => {
                // Read, change, write under the lock file, unless a refresh
                // of ours holds it already.
                let _held = if locked.load(Ordering::SeqCst) {
                    None
                } else {
                    Some(FileLock::acquire(path)?)
                };
                let mut file = read_store_file(path)?;
                let mut entry = file
                    .servers
                    .get(&self.key)
                    .and_then(|v| serde_json::from_value::<Entry>(v.clone()).ok())
                    .unwrap_or_default();
                change(&mut entry);
                let value = serde_json::to_value(&entry)
                    .map_err(|e| store_error("cannot encode", path, e))?;
                file.version = 1;
                file.servers.insert(self.key.clone(), value);
                write_store_file(path, &file)?;
                *lock(cache) = None;
                Ok(())
            }
        }
    }

    fn client(&self) -> Option<ClientInfo> {
        self.entry().ok().and_then(|e| e.client)
    }
}

fn read_store_file(path: &Path) -> Result<StoreFile, AuthError> {
    match std::fs::read(path) {
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(StoreFile::default()),
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| store_error("cannot parse", path, format!("not a credential file ({e})"))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(StoreFile::default()),
        Err(e) => Err(store_error("cannot read", path, e)),
    }
}

/// Writes the whole file through a temporary file (mode 0600) and a rename.
fn write_store_file(path: &Path, file: &StoreFile) -> Result<(), AuthError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.exists() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)
                .map_err(|e| store_error("cannot create the folder of", path, e))?;
        }
    }
    let bytes =
        serde_json::to_vec_pretty(file).map_err(|e| store_error("cannot encode", path, e))?;
    let tmp = path.with_extension(format!("tmp.{}.{}", std::process::id(), fastrand::u32(..)));
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(store_error("cannot write", path, e));
    }
    Ok(())
}

/// An exclusive lock on `PATH.lock` (flock), released on drop.
struct FileLock {
    _file: std::fs::File,
}

impl FileLock {
    fn acquire(path: &Path) -> Result<FileLock, AuthError> {
        use std::os::unix::fs::OpenOptionsExt;
        let mut name = path.as_os_str().to_owned();
        name.push(".lock");
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            let _ = std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir);
        }
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(PathBuf::from(&name))
            .map_err(|e| store_error("cannot open the lock of", path, e))?;
        rustix::fs::flock(&f, rustix::fs::FlockOperation::LockExclusive)
            .map_err(|e| store_error("cannot lock", path, e))?;
        Ok(FileLock { _file: f })
    }
}

/// The handle rmcp's manager keeps.
#[derive(Clone)]
struct StoreHandle(Arc<Store>);

impl StoreHandle {
    /// A file store's write (which may wait for another process's lock)
    /// on a blocking thread; a memory store's at once.
    async fn off_thread(
        &self,
        work: impl FnOnce(&Store) -> Result<(), AuthError> + Send + 'static,
    ) -> Result<(), AuthError> {
        if matches!(self.0.kind, StoreKind::Memory(_)) {
            return work(&self.0);
        }
        let store = Arc::clone(&self.0);
        tokio::task::spawn_blocking(move || work(&store))
            .await
            .map_err(|e| AuthError::CredentialStoreError(format!("store: {e}")))?
    }
}

/// Clears the store's "locked" flag when the refresh guard goes.
struct LockedFlag(Arc<AtomicBool>);

impl Drop for LockedFlag {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

#[async_trait::async_trait]
impl CredentialStore for StoreHandle {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        self.0.read(|e| e.credentials.clone())
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        self.off_thread(move |store| store.update(|e| e.credentials = Some(credentials)))
            .await
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.off_thread(|store| store.update(|e| *e = Entry::default()))
            .await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let StoreKind::File { path, locked, .. } = &self.0.kind else {
            return Ok(None);
        };
        let path = path.clone();
        let file = tokio::task::spawn_blocking(move || FileLock::acquire(&path))
            .await
            .map_err(|e| AuthError::CredentialStoreError(format!("lock: {e}")))??;
        locked.store(true, Ordering::SeqCst);
        // Dropped in this order: the flag, then the lock.
        Ok(Some(CredentialRefreshGuard::new((
            LockedFlag(Arc::clone(locked)),
            file,
        ))))
    }
}

// ---------------------------------------------------------------------------
// The HTTP client of the OAuth requests.

/// rmcp's OAuth requests on the crate's reqwest (rustls on ring): bounded
/// in time and size; redirects followed only within one origin.
struct OAuthHttp {
    follow: reqwest::Client,
    stop: reqwest::Client,
}

fn same_origin(a: &url::Url, b: &url::Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str().map(str::to_ascii_lowercase) == b.host_str().map(str::to_ascii_lowercase)
        && a.port_or_known_default() == b.port_or_known_default()
}

impl OAuthHttp {
    fn new(timeout: Duration) -> Result<OAuthHttp, String> {
        let build = |policy: reqwest::redirect::Policy| {
            crate::net::reqwest_builder()
                .map_err(|e| format!("transport ({e})"))?
                .timeout(timeout)
                .connect_timeout(timeout)
                .redirect(policy)
                .build()
                .map_err(|e| format!("transport (client: {e})"))
        };
        let follow = reqwest::redirect::Policy::custom(|attempt| {
            let first = attempt.previous().first().cloned();
            if attempt.previous().len() > 5 {
                attempt.error("too many redirects")
            } else if first.is_some_and(|f| same_origin(&f, attempt.url())) {
                attempt.follow()
            } else {
                // Another origin: the 3xx itself is the answer.
                attempt.stop()
            }
        });
        Ok(OAuthHttp {
            follow: build(follow)?,
            stop: build(reqwest::redirect::Policy::none())?,
        })
    }
}

impl OAuthHttpClient for OAuthHttp {
    fn execute(&self, request: OAuthHttpRequest) -> OAuthHttpClientFuture<'_> {
        Box::pin(async move {
            let OAuthHttpRequest {
                request,
                redirect_policy,
                ..
            } = request;
            let client = match redirect_policy {
                OAuthHttpRedirectPolicy::Follow => &self.follow,
                _ => &self.stop,
            };
            let request = reqwest::Request::try_from(request)?;
            let mut response = client.execute(request).await?;
            let mut builder = http::Response::builder()
                .status(response.status())
                .version(response.version());
            for (name, value) in response.headers() {
                builder = builder.header(name, value);
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                if chunk.len() > MAX_OAUTH_BODY - body.len() {
                    return Err(format!("the response is over {MAX_OAUTH_BODY} bytes").into());
                }
                body.extend_from_slice(&chunk);
            }
            Ok(builder.body(body)?)
        })
    }
}

// ---------------------------------------------------------------------------
// What the flow reads off the documents and headers a server sends (public,
// hidden, for the fuzz target `oauth`).

/// Whether a `WWW-Authenticate` value (a 403's) asks for more scope
/// (`error="insufficient_scope"`); a value past [`MAX_CHALLENGE`] does not.
#[doc(hidden)]
pub fn asks_for_scope(header: &str, base: &url::Url) -> bool {
    header.len() <= MAX_CHALLENGE
        && WWWAuthenticateParams::parse(header, base).is_insufficient_scope()
}

/// The scopes a `WWW-Authenticate` value names in its `scope` parameter.
#[doc(hidden)]
pub fn scopes_asked(header: &str, base: &url::Url) -> Vec<String> {
    WWWAuthenticateParams::parse(header, base)
        .scope
        .map(|s| s.split_whitespace().map(String::from).collect())
        .unwrap_or_default()
}

/// What an authorization server's metadata offers that the flow asks about.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Offers {
    /// `S256` is in `code_challenge_methods_supported`.
    pub pkce_s256: bool,
    /// `offline_access` is in `scopes_supported`.
    pub offline_access: bool,
    /// `client_id_metadata_document_supported` is `true`.
    pub client_id_metadata_document: bool,
}

impl Offers {
    pub fn of(metadata: &rmcp::transport::auth::AuthorizationMetadata) -> Offers {
        let lists =
            |v: &Option<Vec<String>>, x: &str| v.as_ref().is_some_and(|v| v.iter().any(|y| y == x));
        Offers {
            pkce_s256: lists(&metadata.code_challenge_methods_supported, "S256"),
            offline_access: lists(&metadata.scopes_supported, "offline_access"),
            client_id_metadata_document: metadata
                .additional_fields
                .get("client_id_metadata_document_supported")
                .and_then(Value::as_bool)
                == Some(true),
        }
    }
}

/// A token endpoint's answer read, or why not (its parse error quoted).
#[doc(hidden)]
pub fn read_token_response(
    body: &[u8],
) -> Result<rmcp::transport::auth::OAuthTokenResponse, String> {
    serde_json::from_slice(body).map_err(|e| format!("token: {}", quote(&e.to_string())))
}

/// The access token (when not empty) and refresh token of a token response.
#[doc(hidden)]
pub fn tokens_of<T: Serialize>(t: &T) -> (Option<String>, Option<String>) {
    let v = serde_json::to_value(t).unwrap_or(Value::Null);
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(String::from);
    (
        text("access_token").filter(|a| !a.is_empty()),
        text("refresh_token"),
    )
}

// ---------------------------------------------------------------------------
// One server's authorization.

/// A failed authorization step: its sentence (already redacted), which
/// becomes the detail `auth (...)` of a connect or call failure.
#[derive(Debug, Clone)]
pub struct AuthFailure(pub String);

impl std::fmt::Display for AuthFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "auth ({})", self.0)
    }
}

/// One server's OAuth state, shared by every request of its session.
pub struct OAuth {
    server: String,
    url: String,
    base: url::Url,
    config: AuthConfig,
    authorize: Option<Authorize>,
    store: Arc<Store>,
    http: Arc<OAuthHttp>,
    state: tokio::sync::Mutex<State>,
    /// Every token, code and secret seen, taken out of every message.
    secrets: Mutex<crate::env::Secrets>,
    /// Those already in `secrets`.
    remembered: Mutex<std::collections::HashSet<String>>,
    clock: Arc<AuthClock>,
    /// Cancelled when the session closes: a host still in `authorize` is
    /// told, and the flow ends.
    closing: CancellationToken,
}

#[derive(Default)]
struct State {
    manager: Option<AuthorizationManager>,
    /// The manager has metadata and a configured client (refresh works).
    configured: bool,
    /// The scopes asked for so far (a step-up asks for their union with
    /// the challenge's).
    requested: Vec<String>,
}

/// What binds an OAuth state to its session: the server's timeout (each
/// OAuth request's), the connect's clock, the session's closing token.
pub struct SessionTies {
    pub timeout: Duration,
    pub clock: Arc<AuthClock>,
    pub closing: CancellationToken,
}

/// What a request does after a refusal.
pub enum Retry {
    /// Send it again with this token.
    With(String),
    /// Give up with the server's answer as it was.
    GiveUp,
}

impl OAuth {
    /// The state of server `server` at `url`; `secrets` are the server's
    /// configured secrets (the client secret among them).
    pub fn new(
        server: &str,
        url: &str,
        config: AuthConfig,
        authorize: Option<Authorize>,
        secrets: &crate::env::Secrets,
        ties: SessionTies,
    ) -> Result<OAuth, String> {
        let SessionTies {
            timeout: http_timeout,
            clock,
            closing,
        } = ties;
        let base = url::Url::parse(url).map_err(|e| format!("invalid config (url: {e})"))?;
        let store = Arc::new(Store::new(&config.store, url));
        let http = Arc::new(OAuthHttp::new(http_timeout)?);
        let mut known = secrets.clone();
        if let Some(s) = &config.client_secret {
            known.remember(s);
        }
        Ok(OAuth {
            server: server.to_string(),
            url: url.to_string(),
            base,
            config,
            authorize,
            store,
            http,
            state: tokio::sync::Mutex::new(State::default()),
            secrets: Mutex::new(known),
            remembered: Mutex::default(),
            clock,
            closing,
        })
    }

    /// `text` without any token, code or secret this server's flows saw.
    pub fn redact(&self, text: &str) -> String {
        lock(&self.secrets).redact(text).into_owned()
    }

    /// Every string of a JSON value without them.
    pub fn redact_value(&self, v: &mut Value) {
        lock(&self.secrets).redact_value(v);
    }

    /// A tool result without them.
    pub fn redact_result(&self, r: crate::tool::ToolResult) -> crate::tool::ToolResult {
        lock(&self.secrets).redact_result(r)
    }

    fn remember(&self, secret: &str) {
        // Every request sees its token: its spellings are worked out once,
        // and a known one costs a lookup, not a copy.
        if secret.is_empty() {
            return;
        }
        {
            let mut known = lock(&self.remembered);
            if known.contains(secret) {
                return;
            }
            known.insert(secret.to_string());
        }
        lock(&self.secrets).remember(secret);
    }

    /// Remembers every token of a stored credential.
    fn remember_credentials(&self, c: Option<&StoredCredentials>) {
        let Some(v) = c.and_then(|c| serde_json::to_value(&c.token_response).ok()) else {
            return;
        };
        for key in ["access_token", "refresh_token", "id_token"] {
            if let Some(s) = v.get(key).and_then(Value::as_str) {
                self.remember(s);
            }
        }
    }

    fn fail(&self, text: impl AsRef<str>) -> AuthFailure {
        AuthFailure(lock(&self.secrets).redact(text.as_ref()).into_owned())
    }

    /// An rmcp error as a short sentence (a server's text quoted at most
    /// [`QUOTE`] bytes).
    fn describe(&self, what: &str, e: &AuthError) -> AuthFailure {
        let detail = match e {
            AuthError::PkceUnsupported => {
                "the authorization server does not support PKCE S256; refusing to authorize".into()
            }
            AuthError::AuthorizationServerMismatch {
                expected_issuer,
                received_issuer,
            } => format!(
                "the authorization server's issuer is \"{}\", expected \"{}\"",
                quote(received_issuer),
                quote(expected_issuer)
            ),
            AuthError::AuthorizationServerMissingIssuer { expected_issuer } => format!(
                "the authorization server gave no issuer, expected \"{}\"",
                quote(expected_issuer)
            ),
            AuthError::ProtectedResourceMetadataInvalid { url, reason } => format!(
                "the protected resource metadata at {} is unusable: {}",
                quote(url.as_str()),
                quote(&reason.to_string())
            ),
            AuthError::DiscoveryRequestFailed { url, source } => format!(
                "discovery at {} failed: {}",
                quote(url.as_str()),
                quote(&innermost(source.as_ref()))
            ),
            other => quote(&other.to_string()),
        };
        self.fail(format!("{what}: {detail}"))
    }

    /// The access token to send, refreshed first when near its expiry;
    /// `None` when there is none yet (the server's `401` starts a flow).
    pub async fn token(&self) -> Result<Option<String>, AuthFailure> {
        let mut st = self.state.lock().await;
        self.current(&mut st).await
    }

    /// Stores `credentials` as a finished flow does (their tokens
    /// remembered for redaction): a cached token without a flow, for the
    /// benchmark of the per-request cost (benches/mcp_oauth.rs).
    #[doc(hidden)]
    pub async fn keep_credentials(
        &self,
        credentials: StoredCredentials,
    ) -> Result<(), AuthFailure> {
        self.remember_credentials(Some(&credentials));
        CredentialStore::save(&StoreHandle(Arc::clone(&self.store)), credentials)
            .await
            .map_err(|e| self.describe("store", &e))
    }

    async fn manager<'a>(
        &self,
        st: &'a mut State,
    ) -> Result<&'a mut AuthorizationManager, AuthFailure> {
        if st.manager.is_none() {
            let mut m = AuthorizationManager::new_with_oauth_http_client(
                self.url.as_str(),
                Arc::clone(&self.http) as Arc<dyn OAuthHttpClient>,
            )
            .await
            .map_err(|e| self.describe("setup", &e))?;
            m.set_credential_store(StoreHandle(Arc::clone(&self.store)));
            st.manager = Some(m);
        }
        st.manager
            .as_mut()
            .ok_or_else(|| self.fail("setup: no manager"))
    }

    async fn current(&self, st: &mut State) -> Result<Option<String>, AuthFailure> {
        for _ in 0..2 {
            let configured = st.configured;
            let got = self.manager(st).await?.get_access_token().await;
            match got {
                Ok(t) => {
                    self.remember(&t);
                    return Ok(Some(t));
                }
                Err(AuthError::AuthorizationRequired) => return Ok(None),
                // A refresh needs metadata and the client: set them up
                // from the store once.
                Err(AuthError::InternalError(_)) if !configured => {
                    if !self.configure_from_store(st).await? {
                        return Ok(None);
                    }
                }
                Err(
                    e @ (AuthError::TokenRefreshFailed(_) | AuthError::TokenRefreshRejected(_)),
                ) => {
                    // Not fatal: the server's 401 starts a new authorization.
                    crate::log::emit(crate::log::Level::Warn, "mcp", || {
                        self.describe(&format!("server \"{}\": refresh", self.server), &e)
                            .to_string()
                    });
                    return Ok(None);
                }
                Err(e) => return Err(self.describe("token", &e)),
            }
        }
        Ok(None)
    }

    /// Sets the manager up for refreshing the stored tokens: metadata
    /// discovered, the stored (or configured) client. `false` when the
    /// store has no usable credentials (nothing, or another issuer's).
    async fn configure_from_store(&self, st: &mut State) -> Result<bool, AuthFailure> {
        let entry = self.store.entry().map_err(|e| self.describe("store", &e))?;
        let Some(creds) = entry.credentials.as_ref() else {
            return Ok(false);
        };
        self.remember_credentials(Some(creds));
        let mgr = self.manager(st).await?;
        let resolution = mgr
            .resolve_metadata()
            .await
            .map_err(|e| self.describe("discovery", &e))?;
        let issuer = resolution.metadata.issuer.clone();
        if creds.issuer.is_some() && creds.issuer != issuer {
            // Authorization server binding: another issuer's tokens are
            // never sent; authorize anew.
            mgr.set_metadata(resolution.metadata);
            let _ = CredentialStore::clear(&StoreHandle(Arc::clone(&self.store))).await;
            return Ok(false);
        }
        mgr.set_metadata(resolution.metadata);
        let secret = entry
            .client
            .as_ref()
            .filter(|c| c.client_id == creds.client_id)
            .and_then(|c| c.client_secret.clone())
            .or_else(|| {
                (self.config.client_id.as_deref() == Some(creds.client_id.as_str()))
                    .then(|| self.config.client_secret.clone())
                    .flatten()
            });
        if let Some(s) = &secret {
            self.remember(s);
        }
        match self.config.grant {
            // A signed assertion buys a new token: nothing to refresh.
            Grant::ClientCredentials if self.config.private_key.is_some() => return Ok(false),
            Grant::IdentityAssertion => return Ok(false),
            Grant::ClientCredentials => {
                let cc = self.client_credentials()?;
                mgr.configure_client_credentials(&cc)
                    .map_err(|e| self.describe("client", &e))?;
            }
            Grant::AuthorizationCode => {
                let mut c = OAuthClientConfig::new(
                    creds.client_id.clone(),
                    self.config.redirect_uri.clone(),
                );
                if let Some(s) = secret {
                    c = c.with_client_secret(s);
                }
                mgr.configure_client(c)
                    .map_err(|e| self.describe("client", &e))?;
            }
        }
        st.requested = creds.granted_scopes.clone();
        st.configured = true;
        Ok(true)
    }

    fn client_credentials(&self) -> Result<ClientCredentialsConfig, AuthFailure> {
        let (Some(id), Some(secret)) = (&self.config.client_id, &self.config.client_secret) else {
            return Err(self.fail("the client_credentials grant needs clientId and clientSecret"));
        };
        Ok(ClientCredentialsConfig::ClientSecret {
            client_id: id.clone(),
            client_secret: secret.clone(),
            scopes: self.config.scopes.clone(),
            resource: Some(self.url.clone()),
        })
    }

    /// After a `401` (`challenge`: its `WWW-Authenticate`, if any) to a
    /// request sent with `sent`: a newer token if another request got one,
    /// else a refresh (once per request: `refreshed`), else an
    /// authorization (counted in `flows`).
    pub async fn unauthorized(
        &self,
        sent: Option<&str>,
        challenge: Option<&str>,
        flows: &mut u32,
        refreshed: &mut bool,
        interactive: bool,
    ) -> Result<Retry, AuthFailure> {
        let mut st = self.state.lock().await;
        if let Some(now) = self.current(&mut st).await? {
            if Some(now.as_str()) != sent {
                return Ok(Retry::With(now));
            }
        }
        if sent.is_some() && !*refreshed {
            *refreshed = true;
            if st.configured || self.configure_from_store(&mut st).await? {
                let refreshed_token = self.manager(&mut st).await?.refresh_token().await;
                if let Ok(t) = refreshed_token {
                    let v = serde_json::to_value(&t).unwrap_or(Value::Null);
                    if let Some(a) = v.get("access_token").and_then(Value::as_str) {
                        self.remember(a);
                        if let Some(r) = v.get("refresh_token").and_then(Value::as_str) {
                            self.remember(r);
                        }
                        if Some(a) != sent {
                            return Ok(Retry::With(a.to_string()));
                        }
                    }
                }
            }
        }
        if !interactive {
            return Ok(Retry::GiveUp);
        }
        if *flows >= MAX_AUTHORIZATIONS {
            return Err(self.fail(format!(
                "the server still answers 401 after {MAX_AUTHORIZATIONS} authorizations"
            )));
        }
        *flows += 1;
        self.flow(&mut st, challenge, false).await.map(Retry::With)
    }

    /// After a `403` with `error="insufficient_scope"`: an authorization
    /// for the union of the scopes asked so far and the challenge's.
    pub async fn insufficient_scope(
        &self,
        challenge: &str,
        flows: &mut u32,
    ) -> Result<Retry, AuthFailure> {
        let mut st = self.state.lock().await;
        if *flows >= MAX_AUTHORIZATIONS {
            return Err(self.fail(format!(
                "insufficient_scope: the server still refuses after {MAX_AUTHORIZATIONS} authorizations"
            )));
        }
        *flows += 1;
        self.flow(&mut st, Some(challenge), true)
            .await
            .map(Retry::With)
    }

    /// Whether `header` (a 403's) asks for more scope.
    pub fn is_insufficient_scope(&self, header: &str) -> bool {
        asks_for_scope(header, &self.base)
    }

    /// One authorization: discovery, the client, the grant. The new access
    /// token.
    async fn flow(
        &self,
        st: &mut State,
        challenge: Option<&str>,
        step_up: bool,
    ) -> Result<String, AuthFailure> {
        if self.closing.is_cancelled() {
            return Err(self.fail("closed (the toolkit was closed)"));
        }
        // An oversized challenge is not read at all.
        let challenge = challenge.filter(|c| c.len() <= MAX_CHALLENGE);
        let challenge_scopes = challenge.map_or_else(Vec::new, |c| scopes_asked(c, &self.base));
        let grant = self.config.grant;
        let requested_before = st.requested.clone();
        let mgr = self.manager(st).await?;
        let resolution = mgr
            .resolve_metadata_from_challenge(challenge)
            .await
            .map_err(|e| self.describe("discovery", &e))?;
        let metadata = resolution.metadata.clone();
        let offers = Offers::of(&metadata);
        if resolution.source.is_discovered()
            && grant == Grant::AuthorizationCode
            && !offers.pkce_s256
        {
            return Err(self.fail(
                "the authorization server's metadata does not list S256 in \
                 code_challenge_methods_supported; refusing to authorize without PKCE",
            ));
        }
        mgr.set_metadata(metadata.clone());
        if grant == Grant::IdentityAssertion {
            return self.identity_assertion(&metadata).await;
        }
        if let (Grant::ClientCredentials, Some(pem)) = (grant, &self.config.private_key) {
            return self.jwt_client_credentials(pem, &metadata).await;
        }
        if grant == Grant::ClientCredentials {
            let cc = self.client_credentials()?;
            mgr.validate_client_credentials_metadata(&cc)
                .map_err(|e| self.describe("client", &e))?;
            mgr.configure_client_credentials(&cc)
                .map_err(|e| self.describe("client", &e))?;
            let t = mgr
                .exchange_client_credentials(&cc)
                .await
                .map_err(|e| self.describe("token", &e))?;
            st.configured = true;
            return self.issued(&t);
        }

        // The scopes.
        let scopes = if !self.config.scopes.is_empty() {
            union(
                &self.config.scopes,
                if step_up { &challenge_scopes } else { &[] },
            )
        } else if step_up {
            let mut s = union(&requested_before, &challenge_scopes);
            if offers.offline_access && !s.is_empty() && !s.iter().any(|x| x == "offline_access") {
                s.push("offline_access".into());
            }
            s
        } else {
            mgr.select_initial_scopes(&[]).await
        };
        let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();

        // The client: configured, a metadata document, registered before
        // with this issuer, or registered now.
        let cimd = offers.client_id_metadata_document;
        let stored = self
            .store
            .client()
            .filter(|c| c.issuer.is_some() && c.issuer == metadata.issuer);
        let redirect = self.config.redirect_uri.clone();
        if let Some(id) = &self.config.client_id {
            let mut c = OAuthClientConfig::new(id.clone(), redirect.clone());
            if let Some(s) = &self.config.client_secret {
                c = c.with_client_secret(s.clone());
            }
            mgr.configure_client(c)
                .map_err(|e| self.describe("client", &e))?;
        } else if let (true, Some(url)) = (cimd, &self.config.client_metadata_url) {
            mgr.configure_client(OAuthClientConfig::new(url.clone(), redirect.clone()))
                .map_err(|e| self.describe("client", &e))?;
        } else if let Some(c) = stored {
            let mut cc = OAuthClientConfig::new(c.client_id.clone(), redirect.clone());
            if let Some(s) = &c.client_secret {
                self.remember(s);
                cc = cc.with_client_secret(s.clone());
            }
            mgr.configure_client(cc)
                .map_err(|e| self.describe("client", &e))?;
        } else if metadata.registration_endpoint.is_some() {
            let reg = mgr
                .register_client(&self.config.client_name, &redirect, &refs)
                .await
                .map_err(|e| self.describe("registration", &e))?;
            if let Some(s) = &reg.client_secret {
                self.remember(s);
            }
            let info = ClientInfo {
                client_id: reg.client_id.clone(),
                client_secret: reg.client_secret.clone(),
                issuer: metadata.issuer.clone(),
            };
            StoreHandle(Arc::clone(&self.store))
                .off_thread(move |store| store.update(|e| e.client = Some(info)))
                .await
                .map_err(|e| self.describe("store", &e))?;
        } else {
            return Err(self.fail(
                "the authorization server offers no dynamic registration and takes no client \
                 ID metadata document: set auth.clientId (or auth.clientMetadataUrl)",
            ));
        }

        let url = mgr
            .get_authorization_url(&refs)
            .await
            .map_err(|e| self.describe("authorization", &e))?;
        st.requested = scopes;

        let answer = self.ask_host(&url).await?;
        let callback = self.callback(&answer)?;
        self.remember(&callback.code);
        let mgr = self.manager(st).await?;
        let t = mgr
            .exchange_code_for_token_with_issuer(
                &callback.code,
                &callback.csrf_token,
                callback.issuer.as_deref(),
            )
            .await
            .map_err(|e| self.describe("token", &e))?;
        st.configured = true;
        self.issued(&t)
    }

    /// `client_credentials` with a JWT client assertion (`private_key_jwt`,
    /// RFC 7523 §2.2, SEP-1046): `iss` = `sub` = the client ID, `aud` the
    /// authorization server's issuer, five minutes of life.
    async fn jwt_client_credentials(
        &self,
        pem: &str,
        metadata: &rmcp::transport::auth::AuthorizationMetadata,
    ) -> Result<String, AuthFailure> {
        let Some(id) = self.config.client_id.clone() else {
            return Err(self.fail("client: private_key_jwt needs clientId"));
        };
        let methods = metadata
            .additional_fields
            .get("token_endpoint_auth_methods_supported")
            .and_then(Value::as_array);
        if methods.is_some_and(|m| !m.iter().any(|x| x == "private_key_jwt")) {
            return Err(self.fail(
                "client: the authorization server does not take private_key_jwt at its token endpoint",
            ));
        }
        let key = signing_key(pem).map_err(|e| self.fail(format!("client: {e}")))?;
        let audience = metadata
            .issuer
            .clone()
            .unwrap_or_else(|| metadata.token_endpoint.clone());
        let assertion = client_assertion(&key, &id, &audience)
            .map_err(|e| self.fail(format!("client: {e}")))?;
        self.remember(&assertion);
        let form = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            form.append_pair("grant_type", "client_credentials")
                .append_pair(
                    "client_assertion_type",
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
                )
                .append_pair("client_assertion", &assertion)
                .append_pair("resource", &self.url);
            if !self.config.scopes.is_empty() {
                form.append_pair("scope", &self.config.scopes.join(" "));
            }
            form.finish()
        };
        let body = self
            .token_request("token", &metadata.token_endpoint, form, None)
            .await?;
        self.keep_token(&id, &body, metadata).await
    }

    /// The identity assertion grant (SEP-990, enterprise-managed
    /// authorization): the enterprise IdP's ID token is exchanged at the
    /// IdP for an ID-JAG (RFC 8693, audience the authorization server,
    /// resource this server), which the client (`clientId`/`clientSecret`,
    /// HTTP Basic) presents to the authorization server as a JWT bearer
    /// grant (RFC 7523).
    async fn identity_assertion(
        &self,
        metadata: &rmcp::transport::auth::AuthorizationMetadata,
    ) -> Result<String, AuthFailure> {
        let (Some(idp), Some(id), Some(secret)) = (
            &self.config.idp,
            &self.config.client_id,
            &self.config.client_secret,
        ) else {
            return Err(self.fail(
                "client: the identity_assertion grant needs idp, clientId and clientSecret",
            ));
        };
        let audience = metadata
            .issuer
            .clone()
            .unwrap_or_else(|| metadata.token_endpoint.clone());
        let form = {
            let mut f = url::form_urlencoded::Serializer::new(String::new());
            f.append_pair(
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            )
            .append_pair("subject_token", &idp.id_token)
            .append_pair(
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:id_token",
            )
            .append_pair(
                "requested_token_type",
                "urn:ietf:params:oauth:token-type:id-jag",
            )
            .append_pair("audience", &audience)
            .append_pair("resource", &self.url);
            if let Some(c) = &idp.client_id {
                f.append_pair("client_id", c);
            }
            if !self.config.scopes.is_empty() {
                f.append_pair("scope", &self.config.scopes.join(" "));
            }
            f.finish()
        };
        let basic = idp.client_id.as_deref().zip(idp.client_secret.as_deref());
        let body = self
            .token_request("identity provider", &idp.token_endpoint, form, basic)
            .await?;
        let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let Some(jag) = v
            .get("access_token")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            return Err(self.fail("identity provider: the token exchange answered no access_token"));
        };
        self.remember(jag);
        let form = {
            let mut f = url::form_urlencoded::Serializer::new(String::new());
            f.append_pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer")
                .append_pair("assertion", jag)
                .append_pair("resource", &self.url);
            if !self.config.scopes.is_empty() {
                f.append_pair("scope", &self.config.scopes.join(" "));
            }
            f.finish()
        };
        let body = self
            .token_request("token", &metadata.token_endpoint, form, Some((id, secret)))
            .await?;
        self.keep_token(id, &body, metadata).await
    }

    /// One POST of a form to a token endpoint (HTTP Basic client
    /// authentication when `basic`); the body of a 2xx answer.
    async fn token_request(
        &self,
        what: &str,
        endpoint: &str,
        form: String,
        basic: Option<(&str, &str)>,
    ) -> Result<Vec<u8>, AuthFailure> {
        let mut request = self
            .http
            .stop
            .post(endpoint)
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(form);
        if let Some((user, password)) = basic {
            // RFC 6749 §2.3.1: each part form-urlencoded first.
            let enc =
                |x: &str| url::form_urlencoded::byte_serialize(x.as_bytes()).collect::<String>();
            request = request.basic_auth(enc(user), Some(enc(password)));
        }
        let sent = request.send().await;
        let mut response =
            sent.map_err(|e| self.fail(format!("{what}: {}", quote(&innermost(&e)))))?;
        let status = response.status();
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| self.fail(format!("{what}: {}", quote(&innermost(&e)))))?
        {
            if chunk.len() > MAX_OAUTH_BODY - body.len() {
                return Err(self.fail(format!("{what}: the response is too large")));
            }
            body.extend_from_slice(&chunk);
        }
        if !status.is_success() {
            let v: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let error = v
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or("no error code");
            return Err(self.fail(format!(
                "{what}: the server refused ({}, HTTP {})",
                quote(error),
                status.as_u16()
            )));
        }
        Ok(body)
    }

    /// Stores a token response of `client_id` (bound to the issuer) and
    /// answers its access token.
    async fn keep_token(
        &self,
        client_id: &str,
        body: &[u8],
        metadata: &rmcp::transport::auth::AuthorizationMetadata,
    ) -> Result<String, AuthFailure> {
        let token = read_token_response(body).map_err(|e| self.fail(e))?;
        let access = self.issued(&token)?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let stored = StoredCredentials::new(
            client_id.to_string(),
            Some(token),
            self.config.scopes.clone(),
            Some(now),
        )
        .with_issuer(metadata.issuer.clone());
        CredentialStore::save(&StoreHandle(Arc::clone(&self.store)), stored)
            .await
            .map_err(|e| self.describe("store", &e))?;
        Ok(access)
    }

    /// The access token of a token response (remembered, with its refresh
    /// token, for redaction).
    fn issued<T: Serialize>(&self, t: &T) -> Result<String, AuthFailure> {
        let (access, refresh) = tokens_of(t);
        if let Some(r) = &refresh {
            self.remember(r);
        }
        match access {
            Some(a) => {
                self.remember(&a);
                Ok(a)
            }
            None => Err(self.fail("token: the token response has no access_token")),
        }
    }

    /// Checks the URL the host answered: the configured redirect URI's
    /// origin and path, no `error`, then `code`, `state` (and `iss`).
    fn callback(&self, answer: &str) -> Result<AuthorizationCallback, AuthFailure> {
        let got = url::Url::parse(answer.trim())
            .map_err(|_| self.fail("authorize: the answer is not a URL"))?;
        let want = url::Url::parse(&self.config.redirect_uri)
            .map_err(|_| self.fail("authorize: redirectUri is not a URL"))?;
        if !same_origin(&got, &want) || got.path() != want.path() {
            return Err(self.fail(format!(
                "authorize: the redirect went to {}, not to the redirect URI {}",
                quote(&format!(
                    "{}://{}{}",
                    got.scheme(),
                    got.host_str().unwrap_or(""),
                    got.path()
                )),
                quote(&self.config.redirect_uri)
            )));
        }
        let pairs: HashMap<String, String> = got.query_pairs().into_owned().collect();
        if let Some(err) = pairs.get("error") {
            let desc = pairs
                .get("error_description")
                .map(|d| format!(": {}", quote(d)))
                .unwrap_or_default();
            return Err(self.fail(format!(
                "authorize: the authorization server refused ({}){desc}",
                quote(err)
            )));
        }
        AuthorizationCallback::from_redirect_url(got.as_str())
            .map_err(|e| self.describe("authorize", &e))
    }

    /// Asks the host's `authorize` (on a pool thread), bounded by
    /// `authorizeTimeoutMs`; the time it takes is left out of the connect's
    /// timeouts.
    async fn ask_host(&self, url: &str) -> Result<String, AuthFailure> {
        let Some(authorize) = self.authorize.clone() else {
            return Err(self.fail(
                "the server needs an authorization in a browser and the toolkit has no \
                 authorize callback (the CLI's --authorize, tn_build_options' \"authorize\" slot)",
            ));
        };
        let event = json!({
            "server": self.server,
            "url": url,
            "redirectUri": self.config.redirect_uri,
            "resource": self.url,
        });
        let stop = CancelToken::new();
        let host_stop = stop.clone();
        let _paused = self.clock.pause();
        let mut task = tokio::task::spawn_blocking(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                authorize(&event, &host_stop)
            }))
        });
        let outcome = tokio::select! {
            joined = &mut task => Some(joined),
            _ = tokio::time::sleep(self.config.authorize_timeout) => None,
            _ = self.closing.cancelled() => {
                stop.cancel();
                return Err(self.fail("closed (the toolkit was closed while authorizing)"));
            }
        };
        // Whatever happened, the host need not go on.
        stop.cancel();
        match outcome {
            None => Err(self.fail(format!(
                "authorize: no answer within {} ms",
                self.config.authorize_timeout.as_millis()
            ))),
            Some(Err(e)) => Err(self.fail(format!("authorize: {e}"))),
            Some(Ok(Err(panic))) => Err(self.fail(format!(
                "authorize: the callback panicked: {}",
                quote(&crate::error::panic_message(&panic))
            ))),
            Some(Ok(Ok(Err(message)))) => Err(self.fail(format!(
                "authorize: the callback failed: {}",
                quote(&message)
            ))),
            Some(Ok(Ok(Ok(answer)))) => Ok(answer),
        }
    }
}

/// A private key that signs client assertions.
enum SigningKey {
    /// P-256, signing ES256.
    Ec(ring::signature::EcdsaKeyPair),
    /// RSA, signing RS256.
    Rsa(ring::signature::RsaKeyPair),
}

/// A PKCS#8 PEM key (`-----BEGIN PRIVATE KEY-----`), P-256 or RSA.
fn signing_key(pem: &str) -> Result<SigningKey, String> {
    use base64::Engine;
    if !pem.contains("-----BEGIN PRIVATE KEY-----") {
        return Err("expected a PKCS#8 PEM key (-----BEGIN PRIVATE KEY-----)".into());
    }
    let body: String = pem
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| "the PEM body is not base64".to_string())?;
    let rng = ring::rand::SystemRandom::new();
    if let Ok(k) = ring::signature::EcdsaKeyPair::from_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &der,
        &rng,
    ) {
        return Ok(SigningKey::Ec(k));
    }
    ring::signature::RsaKeyPair::from_pkcs8(&der)
        .map(SigningKey::Rsa)
        .map_err(|_| "not a P-256 or RSA private key".into())
}

/// A signed JWT client assertion (RFC 7523 §3).
fn client_assertion(key: &SigningKey, client_id: &str, audience: &str) -> Result<String, String> {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let alg = match key {
        SigningKey::Ec(_) => "ES256",
        SigningKey::Rsa(_) => "RS256",
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let header = json!({"alg": alg, "typ": "JWT"});
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + 300,
        "jti": uuid::Uuid::new_v4().to_string(),
    });
    let input = format!(
        "{}.{}",
        b64.encode(header.to_string()),
        b64.encode(claims.to_string())
    );
    let rng = ring::rand::SystemRandom::new();
    let signature = match key {
        SigningKey::Ec(k) => k
            .sign(&rng, input.as_bytes())
            .map_err(|_| "signing failed".to_string())?
            .as_ref()
            .to_vec(),
        SigningKey::Rsa(k) => {
            let mut sig = vec![0; k.public().modulus_len()];
            k.sign(
                &ring::signature::RSA_PKCS1_SHA256,
                &rng,
                input.as_bytes(),
                &mut sig,
            )
            .map_err(|_| "signing failed".to_string())?;
            sig
        }
    };
    Ok(format!("{input}.{}", b64.encode(signature)))
}

fn union(a: &[String], b: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in a.iter().chain(b) {
        if !out.contains(s) {
            out.push(s.clone());
        }
    }
    out
}

/// `text` cut at [`QUOTE`] bytes (on a char boundary), with `…` when cut.
fn quote(text: &str) -> String {
    if text.len() <= QUOTE {
        return text.to_string();
    }
    let mut end = QUOTE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn innermost(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut src = e.source();
    while let Some(s) = src {
        text = s.to_string();
        src = s.source();
    }
    text
}

/// The browser step without a browser, for tests and the conformance
/// suite: GET the authorization URL without following redirects and answer
/// the `Location` it redirects to (an authorization server that consents
/// at once, as test servers do). A blocking call.
pub fn headless(event: &Value, _stop: &CancelToken) -> Result<String, String> {
    let url = event
        .get("url")
        .and_then(Value::as_str)
        .ok_or("the event has no url")?
        .to_string();
    // A thread of its own: the caller may be inside the library's runtime.
    std::thread::spawn(move || -> Result<String, String> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| e.to_string())?;
        rt.block_on(async move {
            let client = crate::net::reqwest_builder()?
                .redirect(reqwest::redirect::Policy::none())
                .timeout(Duration::from_secs(30))
                .build()
                .map_err(|e| e.to_string())?;
            let response =
                client.get(&url).send().await.map_err(|e| {
                    format!("GET of the authorization URL failed: {}", innermost(&e))
                })?;
            let status = response.status();
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    format!("the authorization URL answered {status} without a redirect")
                })?;
            let base = url::Url::parse(&url).map_err(|e| e.to_string())?;
            base.join(location)
                .map(String::from)
                .map_err(|e| format!("the redirect is not a URL: {e}"))
        })
    })
    .join()
    .map_err(|_| "the headless authorize thread panicked".to_string())?
}

/// The browser step at a terminal (the CLI's `--authorize browser`):
/// prints the authorization URL on stderr and opens a browser on it when
/// one is at hand (`xdg-open`, `open`), then waits for the redirect — on
/// the redirect URI itself when it is `http://` on a loopback address with
/// a port (the browser's request is answered with a short page), else as a
/// line pasted at the terminal (`/dev/tty`). Ends early when `stop` is
/// triggered. A blocking call.
pub fn browser(event: &Value, stop: &CancelToken) -> Result<String, String> {
    let url = event
        .get("url")
        .and_then(Value::as_str)
        .ok_or("the event has no url")?;
    let server = event.get("server").and_then(Value::as_str).unwrap_or("?");
    let redirect = event
        .get("redirectUri")
        .and_then(Value::as_str)
        .unwrap_or(DEFAULT_REDIRECT_URI);
    let listener = loopback_listener(redirect);
    eprintln!(
        "toolnexus: MCP server \"{server}\" needs an authorization; open this URL in a browser:\n  {url}"
    );
    for opener in ["xdg-open", "open"] {
        let mut cmd = std::process::Command::new(opener);
        cmd.arg(url)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        let spawned = crate::runtime::spawn_child(&mut cmd);
        if let Ok(mut child) = spawned {
            // Reaped on a thread of its own: the opener returns at once.
            std::thread::spawn(move || child.wait());
            break;
        }
    }
    match listener {
        Some((l, path)) => {
            eprintln!("toolnexus: waiting for the browser to come back to {redirect}");
            catch_redirect(&l, &path, redirect, stop)
        }
        None => {
            eprintln!("toolnexus: then paste here the URL the browser was sent to:");
            read_tty_line(stop)
        }
    }
}

/// A listener on `redirect` when it is `http://` on a loopback address with
/// a port (and the port is free), with the path to wait for.
fn loopback_listener(redirect: &str) -> Option<(std::net::TcpListener, String)> {
    let u = url::Url::parse(redirect).ok()?;
    let port = u.port()?;
    let loopback = match u.host()? {
        url::Host::Domain(d) => d.eq_ignore_ascii_case("localhost"),
        url::Host::Ipv4(a) => a.is_loopback(),
        url::Host::Ipv6(a) => a.is_loopback(),
    };
    if u.scheme() != "http" || !loopback {
        return None;
    }
    let host = match u.host()? {
        url::Host::Ipv6(a) => std::net::IpAddr::V6(a),
        url::Host::Ipv4(a) => std::net::IpAddr::V4(a),
        url::Host::Domain(_) => std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
    };
    let l = std::net::TcpListener::bind((host, port)).ok()?;
    l.set_nonblocking(true).ok()?;
    Some((l, u.path().to_string()))
}

/// Accepts connections until one asks for `path`; answers it with a page
/// and returns `redirect`'s origin plus the request target.
fn catch_redirect(
    l: &std::net::TcpListener,
    path: &str,
    redirect: &str,
    stop: &CancelToken,
) -> Result<String, String> {
    use std::io::{Read, Write};
    let origin = url::Url::parse(redirect).map_err(|e| e.to_string())?;
    while !stop.is_cancelled() {
        let (mut conn, _) = match l.accept() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
            Err(e) => return Err(format!("the redirect listener failed: {e}")),
        };
        let _ = conn.set_nonblocking(false);
        let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
        let mut buf = vec![0u8; 16 * 1024];
        let mut got = 0;
        while got < buf.len() {
            match conn.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => {
                    got += n;
                    if buf[..got].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        let head = String::from_utf8_lossy(&buf[..got]);
        let target = head
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("GET "))
            .and_then(|l| l.split(' ').next())
            .unwrap_or("");
        let matches = target.split('?').next() == Some(path);
        let body = if matches {
            "Authorization received: you can close this tab."
        } else {
            "Not the authorization redirect."
        };
        let status = if matches { "200 OK" } else { "404 Not Found" };
        let _ = write!(
            conn,
            "HTTP/1.1 {status}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        if matches {
            return origin
                .join(target)
                .map(String::from)
                .map_err(|e| e.to_string());
        }
    }
    Err("cancelled while waiting for the browser".into())
}

/// One line from the terminal (`/dev/tty`), or an error once `stop` fires.
fn read_tty_line(stop: &CancelToken) -> Result<String, String> {
    use std::io::BufRead;
    let tty =
        std::fs::File::open("/dev/tty").map_err(|e| format!("no terminal to read from ({e})"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = std::io::BufReader::new(tty).read_line(&mut line);
        let _ = tx.send(read.map(|_| line));
    });
    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Ok(line)) if !line.trim().is_empty() => return Ok(line.trim().to_string()),
            Ok(Ok(_)) => return Err("nothing was pasted".into()),
            Ok(Err(e)) => return Err(format!("reading the terminal failed: {e}")),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if stop.is_cancelled() => {
                return Err("cancelled while waiting for the pasted URL".into())
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err("reading the terminal failed".into())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_settings_parse_and_refuse_bad_values() {
        let mut s = crate::env::Secrets::default();
        assert_eq!(parse(None, &mut s), Ok(AuthSetting::Auto));
        assert_eq!(parse(Some(&json!(false)), &mut s), Ok(AuthSetting::Off));
        let Ok(AuthSetting::On(c)) = parse(
            Some(
                &json!({"clientId": "c", "clientSecret": "sekrit", "scopes": "a b",
                         "store": "file:/tmp/x.json", "grant": "client_credentials"}),
            ),
            &mut s,
        ) else {
            panic!("not parsed")
        };
        assert_eq!(c.scopes, vec!["a", "b"]);
        assert_eq!(c.store, StoreSpec::File("/tmp/x.json".into()));
        assert_eq!(c.grant, Grant::ClientCredentials);
        assert!(!format!("{c:?}").contains("sekrit"));
        assert_eq!(s.redact("x sekrit y"), "x [redacted] y");
        let Ok(AuthSetting::On(c)) = parse(
            Some(
                &json!({"grant": "identity_assertion", "clientId": "c", "clientSecret": "x",
                         "idp": {"tokenEndpoint": "http://idp/token", "idToken": "id-tok-123"}}),
            ),
            &mut s,
        ) else {
            panic!("not parsed")
        };
        assert_eq!(c.grant, Grant::IdentityAssertion);
        assert_eq!(s.redact("id-tok-123"), "[redacted]");
        for bad in [
            json!({"grant": "identity_assertion", "clientId": "c", "clientSecret": "x"}),
            json!({"idp": {"tokenEndpoint": "http://idp/token"}}),
            json!({"grant": "password"}),
            json!({"store": "disk"}),
            json!({"scopes": 3}),
            json!({"clientMetadataUrl": "http://a/b"}),
            json!({"grant": "client_credentials"}),
            json!({"nope": 1}),
            json!({"redirectUri": "callback"}),
            json!("yes"),
        ] {
            assert!(parse(Some(&bad), &mut s).is_err(), "{bad}");
        }
    }

    #[test]
    fn auto_needs_a_callback_and_no_preset_authorization() {
        let auto = AuthSetting::Auto;
        assert!(auto.effective(false, &[]).is_none());
        assert!(auto.effective(true, &[]).is_some());
        let preset = vec![("Authorization".to_string(), "Bearer x".to_string())];
        assert!(auto.effective(true, &preset).is_none());
        assert!(AuthSetting::Off.effective(true, &[]).is_none());
    }

    #[test]
    fn the_file_store_is_private_and_shared_by_key() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let path = dir.path().join("sub").join("creds.json");
        let a = Store::new(&StoreSpec::File(path.clone()), "http://a/mcp");
        let b = Store::new(&StoreSpec::File(path.clone()), "http://b/mcp");
        let info = |id: &str| ClientInfo {
            client_id: id.into(),
            client_secret: None,
            issuer: Some("http://as".into()),
        };
        a.update(|e| e.client = Some(info("A")))
            .unwrap_or_else(|e| panic!("{e}"));
        b.update(|e| e.client = Some(info("B")))
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(a.client().map(|c| c.client_id), Some("A".into()));
        assert_eq!(b.client().map(|c| c.client_id), Some("B".into()));
        let mode = std::fs::metadata(&path).map(|m| m.permissions().mode() & 0o777);
        assert_eq!(mode.ok(), Some(0o600));
        // Another store of the same file sees what was written.
        let a2 = Store::new(&StoreSpec::File(path.clone()), "http://a/mcp");
        assert_eq!(a2.client().map(|c| c.client_id), Some("A".into()));
        // A file that is not ours is an error, never overwritten.
        std::fs::write(&path, "not json").unwrap_or_else(|e| panic!("{e}"));
        assert!(a2.update(|e| e.client = None).is_err());
        assert_eq!(
            std::fs::read_to_string(&path).ok().as_deref(),
            Some("not json")
        );
    }

    #[tokio::test]
    async fn the_clock_leaves_the_hosts_time_out() {
        let clock = AuthClock::default();
        // Plain: the limit holds.
        let out = clock
            .bound(
                Duration::from_millis(50),
                tokio::time::sleep(Duration::from_secs(5)),
            )
            .await;
        assert!(out.is_none());
        // A host wait of 200 ms inside a 100 ms limit does not time out.
        let work = async {
            let _p = clock.pause();
            tokio::time::sleep(Duration::from_millis(200)).await;
            drop(_p);
            tokio::time::sleep(Duration::from_millis(20)).await;
            7
        };
        assert_eq!(clock.bound(Duration::from_millis(100), work).await, Some(7));
    }

    #[test]
    fn client_assertions_are_signed_es256_jwts() {
        use base64::Engine;
        use ring::signature::KeyPair;
        let rng = ring::rand::SystemRandom::new();
        let alg = &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING;
        let der = ring::signature::EcdsaKeyPair::generate_pkcs8(alg, &rng)
            .unwrap_or_else(|_| panic!("keygen"));
        let b64 = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
        let pem = format!("-----BEGIN PRIVATE KEY-----\n{b64}\n-----END PRIVATE KEY-----\n");
        let key = signing_key(&pem).unwrap_or_else(|e| panic!("{e}"));
        let jwt =
            client_assertion(&key, "svc", "http://as.example").unwrap_or_else(|e| panic!("{e}"));
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let url = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let claims: Value = serde_json::from_slice(&url.decode(parts[1]).unwrap_or_default())
            .unwrap_or(Value::Null);
        assert_eq!(
            (claims["iss"].as_str(), claims["sub"].as_str()),
            (Some("svc"), Some("svc"))
        );
        assert_eq!(claims["aud"], "http://as.example");
        let SigningKey::Ec(pair) = &key else {
            panic!("not EC")
        };
        let public = ring::signature::UnparsedPublicKey::new(
            &ring::signature::ECDSA_P256_SHA256_FIXED,
            pair.public_key().as_ref().to_vec(),
        );
        let sig = url.decode(parts[2]).unwrap_or_default();
        let signed = format!("{}.{}", parts[0], parts[1]);
        assert!(public.verify(signed.as_bytes(), &sig).is_ok());
        // Anything but a PKCS#8 PEM is refused at parse time.
        let mut s = crate::env::Secrets::default();
        let bad = json!({"grant": "client_credentials", "clientId": "c", "privateKey": "-----BEGIN EC PRIVATE KEY-----\nAAAA\n-----END EC PRIVATE KEY-----"});
        assert!(parse(Some(&bad), &mut s).is_err());
        let good = json!({"grant": "client_credentials", "clientId": "c", "privateKey": pem});
        assert!(parse(Some(&good), &mut s).is_ok());
        assert!(!s.redact(&b64).contains(&b64[..20]), "the key is a secret");
    }

    /// A stored, unexpired token is what every request gets, with no
    /// network at all (the server and its authorization server here do not
    /// exist); a token near its end would be refreshed first.
    #[tokio::test]
    async fn a_cached_token_costs_no_network() {
        let oauth = OAuth::new(
            "s",
            "http://127.0.0.1:1/mcp",
            AuthConfig::default(),
            None,
            &crate::env::Secrets::default(),
            SessionTies {
                timeout: Duration::from_millis(200),
                clock: Arc::default(),
                closing: CancellationToken::new(),
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(oauth.token().await.ok(), Some(None), "nothing stored yet");
        let token = serde_json::from_value(json!({
            "access_token": "at-cached", "token_type": "Bearer", "expires_in": 3600}))
        .unwrap_or_else(|e| panic!("{e}"));
        let stored = StoredCredentials::new("c".into(), Some(token), vec![], Some(now_secs()));
        CredentialStore::save(&StoreHandle(Arc::clone(&oauth.store)), stored)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        let n = 10_000u32;
        let started = Instant::now();
        for _ in 0..n {
            assert_eq!(
                oauth.token().await.ok().flatten().as_deref(),
                Some("at-cached")
            );
        }
        let per_call = started.elapsed() / n;
        eprintln!("a cached token: {per_call:?} a request (this build)");
        assert!(per_call < Duration::from_millis(1), "{per_call:?}");
        assert_eq!(oauth.redact("x at-cached"), "x [redacted]");
    }

    fn fresh(client: &str, access: &str) -> StoredCredentials {
        let token = serde_json::from_value(json!({
            "access_token": access, "token_type": "Bearer", "expires_in": 3600}))
        .unwrap_or_else(|e| panic!("{e}"));
        StoredCredentials::new(client.into(), Some(token), vec![], Some(now_secs()))
    }

    fn ties() -> SessionTies {
        SessionTies {
            timeout: Duration::from_millis(200),
            clock: Arc::default(),
            closing: CancellationToken::new(),
        }
    }

    /// With a credential file, every request gets the cached token while
    /// the file is as it was, and the token another process wrote there as
    /// soon as it is not; both are taken out of messages. No network.
    #[tokio::test]
    async fn a_cached_token_from_a_file_follows_the_file() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let config = AuthConfig {
            store: StoreSpec::File(dir.path().join("creds.json")),
            ..AuthConfig::default()
        };
        let url = "http://127.0.0.1:1/mcp";
        let none = crate::env::Secrets::default();
        let ours = OAuth::new("s", url, config.clone(), None, &none, ties())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ours.token().await.ok(), Some(None), "no file yet");
        ours.keep_credentials(fresh("c", "at-first"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..3 {
            assert_eq!(
                ours.token().await.ok().flatten().as_deref(),
                Some("at-first")
            );
        }
        // Another process's refresh: a token of another length, so the
        // file's stamp changes whatever the clock's resolution.
        let theirs =
            OAuth::new("s", url, config, None, &none, ties()).unwrap_or_else(|e| panic!("{e}"));
        theirs
            .keep_credentials(fresh("c", "at-second-and-longer"))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        for _ in 0..3 {
            assert_eq!(
                ours.token().await.ok().flatten().as_deref(),
                Some("at-second-and-longer")
            );
        }
        assert_eq!(
            ours.redact("at-first, at-second-and-longer"),
            "[redacted], [redacted]"
        );
    }

    fn now_secs() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    }

    #[test]
    fn quotes_are_bounded() {
        let long = "é".repeat(1000);
        let q = quote(&long);
        assert!(q.len() <= QUOTE + 3, "{}", q.len());
        assert_eq!(quote("short"), "short");
    }
}
