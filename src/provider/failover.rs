//! Ordered failover (issue 29): a client with `upstreams` tries them in
//! order, each with its own retry budget, and moves to the next only on a
//! retryable failure (429, 5xx and the client's `retryableStatuses`, a
//! connection that failed, an upstream's own `timeoutMs` passing) and never
//! once any of the answer arrived. An upstream that failed is cooled down:
//! for [`DEFAULT_COOLDOWN_MS`] (or the client's `cooldownMs`, or a longer
//! `Retry-After`) later calls try it after the others. See
//! docs/providers.md, "Ordered failover".
//!
//! This file reads the `upstreams` key and drives the legs; the callers
//! (translate, the loop) make each leg's call with [`Leg::classify`] as
//! their retry classifier and [`Leg::commit`] when the answer starts.

use super::http::{FailedAttempt, Verdict};
use super::{ClientConfig, Style};
use crate::error::{Error, ErrorCode, Result};
use crate::json::type_name;
use serde_json::{json, Map, Value};
use std::cell::Cell;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long an upstream that failed is tried after the others, unless the
/// client's `cooldownMs` says otherwise.
pub const DEFAULT_COOLDOWN_MS: u64 = 30_000;

/// The longest cooldown: a larger `cooldownMs` or `Retry-After` is taken as
/// this.
pub const MAX_COOLDOWN_MS: u64 = 600_000;

/// The most upstreams one client may list.
pub const MAX_UPSTREAMS: usize = 16;

/// The keys of one `upstreams` entry.
pub const UPSTREAM_KEYS: &str = "baseUrl, style, model, apiKey, headers, timeoutMs";

/// The client keys an `upstreams` entry replaces.
const PER_UPSTREAM: [&str; 5] = ["baseUrl", "style", "model", "apiKey", "headers"];

/// The most cooled-down upstreams remembered at once (process-wide).
const COOLING_CAP: usize = 4096;

/// Reads a client object that has `upstreams`: each entry is checked as a
/// client of its own (the client's other keys plus the entry's), and the
/// client is its first upstream with the whole list attached.
pub(super) fn parse(obj: &Map<String, Value>, list: &Value) -> Result<ClientConfig> {
    if let Some(k) = PER_UPSTREAM.iter().find(|k| obj.contains_key(**k)) {
        return Err(Error::invalid_config(format!(
            "client.{k} and client.upstreams cannot both be set: with upstreams, each entry has its own {k}"
        )));
    }
    let Value::Array(entries) = list else {
        return Err(Error::invalid_config(format!(
            "client.upstreams must be an array of upstreams {{{UPSTREAM_KEYS}}}, got {}",
            type_name(list)
        )));
    };
    if entries.is_empty() || entries.len() > MAX_UPSTREAMS {
        return Err(Error::invalid_config(format!(
            "client.upstreams must list 1 to {MAX_UPSTREAMS} upstreams, got {}",
            entries.len()
        )));
    }
    let cooldown_ms = match obj.get("cooldownMs").filter(|v| !v.is_null()) {
        None => DEFAULT_COOLDOWN_MS,
        Some(v) => v
            .as_u64()
            .ok_or_else(|| {
                Error::invalid_config(format!(
                    "client.cooldownMs must be a whole number of 0 or more, got {v}"
                ))
            })?
            .min(MAX_COOLDOWN_MS),
    };
    let mut shared = obj.clone();
    shared.remove("upstreams");
    shared.remove("cooldownMs");
    let mut legs = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let what = format!("client.upstreams[{i}]");
        let Value::Object(entry) = entry else {
            return Err(Error::invalid_config(format!(
                "{what} must be an object {{{UPSTREAM_KEYS}}}, got {}",
                type_name(entry)
            )));
        };
        if let Some(k) = entry
            .keys()
            .find(|k| !UPSTREAM_KEYS.split(", ").any(|c| c == k.as_str()))
        {
            return Err(Error::invalid_config(format!(
                "{what}: unknown key '{k}' (known keys: {UPSTREAM_KEYS})"
            )));
        }
        let mut one = shared.clone();
        one.extend(entry.iter().map(|(k, v)| (k.clone(), v.clone())));
        let leg = ClientConfig::from_json(&Value::Object(one)).map_err(|e| {
            let message = e
                .message
                .replacen("client.", &format!("{what}."), 1)
                .replacen("client:", &format!("{what}:"), 1);
            Error::new(e.code, message)
        })?;
        legs.push(leg);
    }
    let mut first = legs[0].clone();
    // The client's own timeoutMs bounds the whole call; an entry's bounds
    // that upstream's share of it.
    first.timeout_ms = match obj.get("timeoutMs").filter(|v| !v.is_null()) {
        None => None,
        Some(_) => {
            ClientConfig::from_json(&Value::Object(first_only(&shared, entries)))?.timeout_ms
        }
    };
    first.upstreams = Arc::from(legs);
    first.cooldown_ms = cooldown_ms;
    Ok(first)
}

/// The client's keys with the first entry's identity, without the entry's
/// own `timeoutMs` (to read the client's).
fn first_only(shared: &Map<String, Value>, entries: &[Value]) -> Map<String, Value> {
    let mut one = shared.clone();
    if let Some(Value::Object(e)) = entries.first() {
        for k in PER_UPSTREAM {
            if let Some(v) = e.get(k) {
                one.insert(k.to_string(), v.clone());
            }
        }
    }
    one
}

/// The loop keeps its transcript in one provider's shape: every upstream
/// of a client that runs the loop must share the first one's style.
pub fn check_one_style(config: &ClientConfig) -> Result<()> {
    let first = config.style;
    match config.upstreams.iter().position(|u| u.style != first) {
        None => Ok(()),
        Some(i) => Err(Error::invalid_config(format!(
            "client.upstreams[{i}].style is \"{}\" but upstream 0's is \"{}\": the loop (run, ask, stream, agents) keeps the conversation in one provider's shape, so every upstream of a looping client must have the same style (translate takes mixed styles)",
            config.upstreams[i].style.name(),
            first.name()
        ))),
    }
}

/// The upstream that answered: its place in `upstreams` and who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub index: usize,
    pub base_url: String,
    pub model: String,
    pub style: Style,
}

impl Served {
    /// `{index, baseUrl, model, style}`.
    pub fn to_json(&self) -> Value {
        json!({
            "index": self.index,
            "baseUrl": self.base_url,
            "model": self.model,
            "style": self.style.name(),
        })
    }
}

/// What the last failed attempt of a leg came to.
#[derive(Clone, Copy)]
struct Last {
    status: Option<u16>,
    /// Retryable, and retrying was the verdict: the budget ran out (or a
    /// `Retry-After` sent the call on at once).
    advance: bool,
    retry_after_ms: Option<u64>,
}

/// One upstream's turn at a call.
pub struct Leg<'a> {
    /// The upstream's place in `upstreams` (0 for a client without).
    pub index: usize,
    /// The upstream as a client of its own (no `upstreams`).
    pub config: &'a ClientConfig,
    /// When this leg must be done: the call's deadline, or sooner the
    /// upstream's own `timeoutMs`.
    pub deadline: Option<Instant>,
    has_next: bool,
    last: Cell<Option<Last>>,
    committed: Cell<bool>,
}

impl Leg<'_> {
    /// Wraps the caller's retry classifier: records what the attempt came
    /// to, and when another upstream waits, a retryable answer that asks
    /// for a `Retry-After` ends this leg at once instead of waiting.
    pub fn classify(
        &self,
        info: &FailedAttempt,
        inner: &mut dyn FnMut(&FailedAttempt) -> Result<Verdict>,
    ) -> Result<Verdict> {
        let verdict = inner(info)?;
        let advance = verdict == Verdict::Retry && info.retryable;
        self.last.set(Some(Last {
            status: info.status,
            advance,
            retry_after_ms: info.retry_after_ms,
        }));
        if advance && self.has_next && info.retry_after_ms.is_some() {
            return Ok(Verdict::Fail);
        }
        Ok(verdict)
    }

    /// The answer started arriving (or was whole): from now on this call
    /// ends with this upstream, whatever happens.
    pub fn commit(&self) {
        self.committed.set(true);
    }

    /// Whether `e`, this leg's failure, sends the call to the next upstream.
    fn advances(&self, e: &Error, call_deadline: Option<Instant>) -> bool {
        if self.committed.get() {
            return false;
        }
        match e.code {
            // The upstream's own share ran out, the call's did not.
            ErrorCode::Timeout => call_deadline.is_none_or(|d| Instant::now() < d),
            ErrorCode::ProviderError => self.last.get().is_some_and(|last| {
                last.advance && last.status == e.provider.as_ref().map(|p| p.status)
            }),
            _ => false,
        }
    }
}

/// Makes the call through the client's upstreams in order (cooled-down
/// ones last) until one answers or a failure does not advance; `attempt`
/// makes one leg's call. A client without `upstreams` is one leg, its
/// failure as it is and no [`Served`]. When every upstream failed, the
/// error names each one's failure (code and typed status of the last).
pub fn run<'c, T>(
    config: &'c ClientConfig,
    deadline: Option<Instant>,
    mut attempt: impl FnMut(&Leg<'c>) -> Result<T>,
) -> Result<(T, Option<Served>)> {
    if config.upstreams.is_empty() {
        let leg = Leg {
            index: 0,
            config,
            deadline,
            has_next: false,
            last: Cell::new(None),
            committed: Cell::new(false),
        };
        return attempt(&leg).map(|t| (t, None));
    }
    let order = order_of(config);
    let mut failed: Vec<(usize, String)> = Vec::new();
    for (n, &index) in order.iter().enumerate() {
        let upstream = &config.upstreams[index];
        let own = upstream
            .timeout_ms
            .map(|ms| Instant::now() + Duration::from_millis(ms));
        let leg = Leg {
            index,
            config: upstream,
            deadline: match (deadline, own) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            },
            has_next: n + 1 < order.len(),
            last: Cell::new(None),
            committed: Cell::new(false),
        };
        match attempt(&leg) {
            Ok(t) => {
                if config.cooldown_ms > 0 {
                    warm(upstream);
                }
                let served = Served {
                    index,
                    base_url: upstream.base_url.clone(),
                    model: upstream.model.clone(),
                    style: upstream.style,
                };
                return Ok((t, Some(served)));
            }
            Err(e) => {
                let advances = leg.advances(&e, deadline);
                if advances && config.cooldown_ms > 0 {
                    let asked = leg.last.get().and_then(|l| l.retry_after_ms).unwrap_or(0);
                    cool(upstream, config.cooldown_ms.max(asked).min(MAX_COOLDOWN_MS));
                }
                if advances && leg.has_next {
                    failed.push((index, e.message));
                    continue;
                }
                if failed.is_empty() && !advances {
                    return Err(e);
                }
                return Err(summary(config, &failed, index, e, advances));
            }
        }
    }
    // `order` is never empty: the loop returned.
    Err(Error::new(
        ErrorCode::Internal,
        "internal error: no upstream",
    ))
}

/// The error a failover call ends with: the last failure, after the ones
/// that sent the call on, each named by its upstream and model.
fn summary(
    config: &ClientConfig,
    failed: &[(usize, String)],
    index: usize,
    last: Error,
    every: bool,
) -> Error {
    let name = |i: usize| format!("upstream {i} (model {})", config.upstreams[i].model);
    let mut message = if every {
        format!(
            "all {} upstreams failed: ",
            config.upstreams.len().min(failed.len() + 1)
        )
    } else {
        String::new()
    };
    for (i, m) in failed {
        message.push_str(&format!("{}: {m}; ", name(*i)));
    }
    message.push_str(&format!("{}: {}", name(index), last.message));
    // Each leg hid its own key; a message is also kept clear of the others'.
    let mut secrets = crate::env::Secrets::default();
    for u in config.upstreams.iter() {
        if let Some(k) = u.api_key.as_deref().filter(|k| !k.is_empty()) {
            secrets.remember(k);
        }
    }
    let message = secrets.redact(&message).into_owned();
    let mut error = Error::new(last.code, message);
    error.provider = last.provider;
    error
}

/// The order to try the upstreams in: those not cooling down as listed,
/// then the cooling ones as listed.
fn order_of(config: &ClientConfig) -> Vec<usize> {
    let all = 0..config.upstreams.len();
    if config.cooldown_ms == 0 {
        return all.collect();
    }
    let now = Instant::now();
    let table = cooling().lock().unwrap_or_else(PoisonError::into_inner);
    let cooled = |i: &usize| {
        table
            .get(&identity(&config.upstreams[*i]))
            .is_some_and(|until| *until > now)
    };
    let (cold, warm): (Vec<usize>, Vec<usize>) = all.partition(|i| cooled(i));
    warm.into_iter().chain(cold).collect()
}

/// Process-wide: which upstreams cool down until when, by [`identity`].
fn cooling() -> &'static Mutex<HashMap<u64, Instant>> {
    static TABLE: std::sync::OnceLock<Mutex<HashMap<u64, Instant>>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// An upstream's identity for the cooldown: its style, endpoint, model and
/// key (hashed; never kept as text).
fn identity(u: &ClientConfig) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    u.style.name().hash(&mut h);
    u.base_url.trim_end_matches('/').hash(&mut h);
    u.model.hash(&mut h);
    u.api_key.hash(&mut h);
    h.finish()
}

fn cool(u: &ClientConfig, ms: u64) {
    let now = Instant::now();
    let mut table = cooling().lock().unwrap_or_else(PoisonError::into_inner);
    if table.len() >= COOLING_CAP {
        table.retain(|_, until| *until > now);
    }
    if table.len() < COOLING_CAP {
        table.insert(identity(u), now + Duration::from_millis(ms));
    }
}

fn warm(u: &ClientConfig) {
    let mut table = cooling().lock().unwrap_or_else(PoisonError::into_inner);
    table.remove(&identity(u));
}
