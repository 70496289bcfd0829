//! SPEC §8 Observability: the semantic `onMetric` events and the in-memory
//! registry behind `metrics()`, rendered as the Prometheus text exposition
//! format that every toolnexus port renders byte for byte.
//!
//! Recording is cheap enough to be always on: every series is a handful of
//! atomic counters in a fixed-size, lock-free table keyed by its label
//! values (the client's model, a tool's name and source). A series is
//! allocated once, the first time its labels are seen; after that a record
//! takes no lock and allocates nothing. Only rendering sorts and formats.
//! The event JSON for an `onMetric` callback is built only when a callback
//! is set ([`MetricEvent::to_value`] is the caller's to call).

use crate::limits::{METRIC_LABEL_BYTES, METRIC_OTHER, METRIC_SERIES};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

/// The histogram buckets in seconds, fixed by SPEC §8 for every port.
const BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0];

/// The buckets as `le` renders them.
const BUCKET_LABELS: [&str; 10] = [
    "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30", "60",
];

/// One semantic event, as SPEC §8 lists them. Field names in the JSON are
/// camelCase, like the rest of this library's JSON (RunResult's
/// `toolCalls`); SPEC §8 lets each port choose its casing.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MetricEvent<'a> {
    /// One LLM call.
    Llm {
        model: &'a str,
        ok: bool,
        ms: f64,
        prompt_tokens: u64,
        completion_tokens: u64,
    },
    /// One tool call. A suspension (§10) is `pending`, never an error.
    Tool {
        tool: &'a str,
        source: &'a str,
        is_error: bool,
        pending: bool,
        ms: f64,
    },
    /// One run (or ask), when it ends; `error` when it failed.
    Run {
        model: &'a str,
        turns: u64,
        tool_calls: u64,
        total_tokens: u64,
        ms: f64,
        error: Option<&'a str>,
    },
}

/// A duration as JSON: a finite number of 0 or more (0 otherwise).
fn ms_value(ms: f64) -> Value {
    let ms = if ms.is_finite() && ms >= 0.0 { ms } else { 0.0 };
    json!(ms)
}

impl MetricEvent<'_> {
    /// The event as the JSON an `onMetric` callback receives.
    pub fn to_value(&self) -> Value {
        match *self {
            MetricEvent::Llm {
                model,
                ok,
                ms,
                prompt_tokens,
                completion_tokens,
            } => json!({
                "event": "llm",
                "model": model,
                "status": if ok { "ok" } else { "error" },
                "ms": ms_value(ms),
                "promptTokens": prompt_tokens,
                "completionTokens": completion_tokens,
            }),
            MetricEvent::Tool {
                tool,
                source,
                is_error,
                pending,
                ms,
            } => {
                let mut v = json!({
                    "event": "tool",
                    "tool": tool,
                    "source": source,
                    "isError": is_error,
                });
                if pending {
                    v["pending"] = Value::Bool(true);
                }
                v["ms"] = ms_value(ms);
                v
            }
            MetricEvent::Run {
                model,
                turns,
                tool_calls,
                total_tokens,
                ms,
                error,
            } => {
                let mut v = json!({
                    "event": "run",
                    "model": model,
                    "turns": turns,
                    "toolCalls": tool_calls,
                    "totalTokens": total_tokens,
                    "ms": ms_value(ms),
                });
                if let Some(e) = error {
                    v["error"] = json!(e);
                }
                v
            }
        }
    }
}

// ---------------------------------------------------------------------------
// series
// ---------------------------------------------------------------------------

/// A float kept in an atomic as its bits, added to with compare-and-swap.
#[derive(Default)]
struct AtomicF64(AtomicU64);

impl AtomicF64 {
    fn add(&self, x: f64) {
        let mut current = self.0.load(Ordering::Relaxed);
        loop {
            let next = (f64::from_bits(current) + x).to_bits();
            match self
                .0
                .compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(seen) => current = seen,
            }
        }
    }

    fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }
}

#[derive(Default)]
struct Histogram {
    /// Per bucket, the observations at or under it (cumulative, as rendered).
    buckets: [AtomicU64; 10],
    count: AtomicU64,
    sum: AtomicF64,
}

impl Histogram {
    fn observe(&self, seconds: f64) {
        for (bucket, le) in self.buckets.iter().zip(BUCKETS) {
            if seconds <= le {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum.add(seconds);
    }
}

/// What one model accumulates.
#[derive(Default)]
struct ModelSeries {
    ok: AtomicU64,
    error: AtomicU64,
    duration: Histogram,
    run_errors: AtomicU64,
}

/// What one (tool, source) pair accumulates; calls by `[is_error][pending]`.
#[derive(Default)]
struct ToolSeries {
    calls: [[AtomicU64; 2]; 2],
    duration: Histogram,
}

// ---------------------------------------------------------------------------
// the table
// ---------------------------------------------------------------------------

/// Slots probed without a lock; series past them go to a locked overflow
/// list (a client with more than this many distinct tools or models).
const SLOTS: usize = 256;

/// Slots are made [`CHUNK`] at a time, when a probe first reaches them: a
/// client that sees a few models and tools holds one small block, and a
/// table made per client (an agent runtime makes one per agent definition)
/// costs no 4 KiB allocation up front.
const CHUNK: usize = 16;

struct Entry<T> {
    key: Box<[Box<str>]>,
    series: T,
}

/// A slot of a [`Table`], claimed by the first key to land on it.
type Slot<T> = OnceLock<Box<Entry<T>>>;

/// A lock-free open-addressing map from a label key to its series: slots
/// are claimed once and never freed.
struct Table<T> {
    chunks: [OnceLock<Box<[Slot<T>; CHUNK]>>; SLOTS / CHUNK],
    overflow: Mutex<Vec<Box<Entry<T>>>>,
}

/// FNV-1a over the key's parts (a 0xff byte after each, which UTF-8 never
/// holds).
fn hash(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for b in part.bytes().chain(std::iter::once(0xff)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
    }
    h
}

/// Whether an entry's key is `parts`.
fn key_is(key: &[Box<str>], parts: &[&str]) -> bool {
    key.len() == parts.len() && key.iter().zip(parts).all(|(k, p)| &**k == *p)
}

impl<T: Default> Table<T> {
    const fn new() -> Self {
        Table {
            chunks: [const { OnceLock::new() }; SLOTS / CHUNK],
            overflow: Mutex::new(Vec::new()),
        }
    }

    /// Slot `i` (below [`SLOTS`]), its chunk made on first use.
    fn slot(&self, i: usize) -> &Slot<T> {
        let chunk =
            self.chunks[i / CHUNK].get_or_init(|| Box::new([const { OnceLock::new() }; CHUNK]));
        &chunk[i % CHUNK]
    }

    fn new_entry(parts: &[&str]) -> Box<Entry<T>> {
        Box::new(Entry {
            key: parts.iter().map(|p| Box::<str>::from(*p)).collect(),
            series: T::default(),
        })
    }

    /// The series for `parts`, created on first sight, and `f` run on it;
    /// past [`METRIC_SERIES`] label sets, or for a label value longer than
    /// [`METRIC_LABEL_BYTES`], the one whose every label is
    /// [`METRIC_OTHER`].
    fn with(&self, parts: &[&str], f: impl FnOnce(&T)) {
        if parts.iter().any(|p| p.len() > METRIC_LABEL_BYTES) {
            return self.with(&[METRIC_OTHER; 4][..parts.len().min(4)], f);
        }
        let start = (hash(parts) as usize) % SLOTS;
        for i in 0..SLOTS {
            let slot = self.slot((start + i) % SLOTS);
            let entry = slot.get_or_init(|| Self::new_entry(parts));
            if key_is(&entry.key, parts) {
                return f(&entry.series);
            }
        }
        let mut overflow = self.overflow.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(e) = overflow.iter().find(|e| key_is(&e.key, parts)) {
            return f(&e.series);
        }
        let other = [METRIC_OTHER; 4];
        let parts = if SLOTS + overflow.len() >= METRIC_SERIES {
            let other = &other[..parts.len().min(4)];
            if let Some(e) = overflow.iter().find(|e| key_is(&e.key, other)) {
                return f(&e.series);
            }
            other
        } else {
            parts
        };
        overflow.push(Self::new_entry(parts));
        if let Some(e) = overflow.last() {
            f(&e.series);
        }
    }

    /// Every series so far, with its key parts.
    fn each(&self, mut f: impl FnMut(&[Box<str>], &T)) {
        for chunk in self.chunks.iter().filter_map(OnceLock::get) {
            for entry in chunk.iter().filter_map(OnceLock::get) {
                f(&entry.key, &entry.series);
            }
        }
        let overflow = self.overflow.lock().unwrap_or_else(|p| p.into_inner());
        for entry in overflow.iter() {
            f(&entry.key, &entry.series);
        }
    }
}

// ---------------------------------------------------------------------------
// the registry
// ---------------------------------------------------------------------------

/// Adds to a counter that stops at `u64::MAX` instead of wrapping: a provider
/// that reports absurd token counts must not make a counter run backwards.
fn saturating_add(counter: &AtomicU64, n: u64) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
        Some(v.saturating_add(n))
    });
}

/// The cumulative metrics of one client.
pub struct Registry {
    models: Table<ModelSeries>,
    tools: Table<ToolSeries>,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
    /// Successful LLM calls: the token series render once there is one.
    ok_calls: AtomicU64,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registry").finish_non_exhaustive()
    }
}

impl Registry {
    pub const fn new() -> Self {
        Registry {
            models: Table::new(),
            tools: Table::new(),
            prompt_tokens: AtomicU64::new(0),
            completion_tokens: AtomicU64::new(0),
            ok_calls: AtomicU64::new(0),
        }
    }

    /// Folds one event into the counters.
    pub fn record(&self, event: &MetricEvent) {
        match *event {
            MetricEvent::Llm {
                model,
                ok,
                ms,
                prompt_tokens,
                completion_tokens,
            } => {
                if ok {
                    saturating_add(&self.prompt_tokens, prompt_tokens);
                    saturating_add(&self.completion_tokens, completion_tokens);
                    self.ok_calls.fetch_add(1, Ordering::Relaxed);
                }
                self.models.with(&[model], |s| {
                    if ok { &s.ok } else { &s.error }.fetch_add(1, Ordering::Relaxed);
                    s.duration.observe(ms / 1000.0);
                });
            }
            MetricEvent::Tool {
                tool,
                source,
                is_error,
                pending,
                ms,
            } => self.tools.with(&[tool, source], |s| {
                s.calls[usize::from(is_error)][usize::from(pending)]
                    .fetch_add(1, Ordering::Relaxed);
                s.duration.observe(ms / 1000.0);
            }),
            MetricEvent::Run { model, error, .. } => {
                if error.is_some() {
                    self.models.with(&[model], |s| {
                        s.run_errors.fetch_add(1, Ordering::Relaxed);
                    });
                }
            }
        }
    }

    /// The Prometheus text of SPEC §8: the six metrics in their fixed order,
    /// each with `# HELP` and `# TYPE`, series sorted by their rendered
    /// labels, ending in a newline.
    pub fn render(&self) -> String {
        let mut requests = Vec::new();
        let mut llm_hist = Vec::new();
        let mut run_errors = Vec::new();
        self.models.each(|parts, s| {
            let name = parts.first().map_or("", |p| &**p);
            let model = label_pairs(&[("model", name)]);
            for (status, n) in [("ok", &s.ok), ("error", &s.error)] {
                let n = n.load(Ordering::Relaxed);
                if n > 0 {
                    let labels = label_pairs(&[("model", name), ("status", status)]);
                    requests.push((labels, n));
                }
            }
            if s.duration.count.load(Ordering::Relaxed) > 0 {
                llm_hist.push((model.clone(), snapshot(&s.duration)));
            }
            let e = s.run_errors.load(Ordering::Relaxed);
            if e > 0 {
                run_errors.push((model, e));
            }
        });
        let mut tokens = Vec::new();
        if self.ok_calls.load(Ordering::Relaxed) > 0 {
            tokens.push((
                label_pairs(&[("type", "prompt")]),
                self.prompt_tokens.load(Ordering::Relaxed),
            ));
            tokens.push((
                label_pairs(&[("type", "completion")]),
                self.completion_tokens.load(Ordering::Relaxed),
            ));
        }
        let mut calls = Vec::new();
        let mut tool_hist: Vec<(String, Snapshot)> = Vec::new();
        self.tools.each(|parts, s| {
            let tool = parts.first().map_or("", |p| &**p);
            let source = parts.get(1).map_or("", |p| &**p);
            for (e, row) in s.calls.iter().enumerate() {
                for (p, n) in row.iter().enumerate() {
                    let n = n.load(Ordering::Relaxed);
                    if n > 0 {
                        let labels = label_pairs(&[
                            ("tool", tool),
                            ("source", source),
                            ("is_error", if e == 1 { "true" } else { "false" }),
                            ("pending", if p == 1 { "true" } else { "false" }),
                        ]);
                        calls.push((labels, n));
                    }
                }
            }
            if s.duration.count.load(Ordering::Relaxed) > 0 {
                let labels = label_pairs(&[("tool", tool)]);
                let snap = snapshot(&s.duration);
                // One tool name seen from two sources is one histogram.
                match tool_hist.iter_mut().find(|(l, _)| *l == labels) {
                    Some((_, h)) => h.merge(&snap),
                    None => tool_hist.push((labels, snap)),
                }
            }
        });
        let mut out = String::with_capacity(1024);
        counter(
            &mut out,
            "toolnexus_llm_requests_total",
            "Total LLM requests.",
            requests,
        );
        counter(
            &mut out,
            "toolnexus_llm_tokens_total",
            "Total tokens, by type.",
            tokens,
        );
        histogram(
            &mut out,
            "toolnexus_llm_request_duration_seconds",
            "LLM request duration in seconds.",
            llm_hist,
        );
        counter(
            &mut out,
            "toolnexus_tool_calls_total",
            "Total tool calls.",
            calls,
        );
        histogram(
            &mut out,
            "toolnexus_tool_duration_seconds",
            "Tool execution duration in seconds.",
            tool_hist,
        );
        counter(
            &mut out,
            "toolnexus_run_errors_total",
            "Total run errors.",
            run_errors,
        );
        out
    }
}

/// A histogram's values read once.
struct Snapshot {
    buckets: [u64; 10],
    count: u64,
    sum: f64,
}

impl Snapshot {
    fn merge(&mut self, other: &Snapshot) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
    }
}

fn snapshot(h: &Histogram) -> Snapshot {
    Snapshot {
        buckets: std::array::from_fn(|i| h.buckets[i].load(Ordering::Relaxed)),
        count: h.count.load(Ordering::Relaxed),
        sum: h.sum.get(),
    }
}

/// `k="v",k="v"` with values escaped as SPEC §8 says (`\`, `"`, newline).
fn label_pairs(pairs: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(k);
        out.push_str("=\"");
        for c in v.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out
}

fn head(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn counter(out: &mut String, name: &str, help: &str, mut series: Vec<(String, u64)>) {
    head(out, name, help, "counter");
    series.sort_by(|a, b| a.0.cmp(&b.0));
    for (labels, n) in series {
        let _ = writeln!(out, "{name}{{{labels}}} {n}");
    }
}

fn histogram(out: &mut String, name: &str, help: &str, mut series: Vec<(String, Snapshot)>) {
    head(out, name, help, "histogram");
    series.sort_by(|a, b| a.0.cmp(&b.0));
    for (labels, h) in series {
        for (le, n) in BUCKET_LABELS.iter().zip(h.buckets) {
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {n}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {}", h.count);
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", js_number(h.sum));
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", h.count);
    }
}

/// A number as ECMAScript's `String(number)` writes it (the format the
/// ports agree on for `_sum`): the shortest digits that read back as the
/// same double, positional from 1e-6 up to 1e21, exponential outside.
pub fn js_number(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    if x == 0.0 {
        return "0".into();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    // `{:e}` gives the shortest round-trip digits: "d.ddde±x".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let e: i32 = exp.parse().unwrap_or(0);
    let k = digits.len() as i32;
    let n = e + 1;
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let exp_sign = if n > 0 { "+" } else { "-" };
        let rest = if k > 1 {
            format!(".{}", &digits[1..])
        } else {
            String::new()
        };
        format!("{}{rest}e{exp_sign}{}", &digits[..1], (n - 1).abs())
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SPEC §8's header lines, as every port renders them before any
    /// activity.
    const EMPTY: &str = "# HELP toolnexus_llm_requests_total Total LLM requests.\n\
# TYPE toolnexus_llm_requests_total counter\n\
# HELP toolnexus_llm_tokens_total Total tokens, by type.\n\
# TYPE toolnexus_llm_tokens_total counter\n\
# HELP toolnexus_llm_request_duration_seconds LLM request duration in seconds.\n\
# TYPE toolnexus_llm_request_duration_seconds histogram\n\
# HELP toolnexus_tool_calls_total Total tool calls.\n\
# TYPE toolnexus_tool_calls_total counter\n\
# HELP toolnexus_tool_duration_seconds Tool execution duration in seconds.\n\
# TYPE toolnexus_tool_duration_seconds histogram\n\
# HELP toolnexus_run_errors_total Total run errors.\n\
# TYPE toolnexus_run_errors_total counter\n";

    #[test]
    fn before_any_activity_only_help_and_type_lines_render() {
        assert_eq!(Registry::new().render(), EMPTY);
    }

    /// The fixed event sequence the upstream ports pin their registry with
    /// (an llm call of 100 ms, a tool call of 300 ms, a run without error),
    /// and the text they all render for it.
    #[test]
    fn a_fixed_event_sequence_renders_the_pinned_text() {
        let r = Registry::new();
        r.record(&MetricEvent::Llm {
            model: "gpt-x",
            ok: true,
            ms: 100.0,
            prompt_tokens: 3,
            completion_tokens: 2,
        });
        r.record(&MetricEvent::Tool {
            tool: "add",
            source: "native",
            is_error: false,
            pending: false,
            ms: 300.0,
        });
        r.record(&MetricEvent::Run {
            model: "gpt-x",
            turns: 2,
            tool_calls: 1,
            total_tokens: 5,
            ms: 400.0,
            error: None,
        });
        let mut expected = String::new();
        expected.push_str(
            "# HELP toolnexus_llm_requests_total Total LLM requests.\n\
# TYPE toolnexus_llm_requests_total counter\n\
toolnexus_llm_requests_total{model=\"gpt-x\",status=\"ok\"} 1\n\
# HELP toolnexus_llm_tokens_total Total tokens, by type.\n\
# TYPE toolnexus_llm_tokens_total counter\n\
toolnexus_llm_tokens_total{type=\"completion\"} 2\n\
toolnexus_llm_tokens_total{type=\"prompt\"} 3\n\
# HELP toolnexus_llm_request_duration_seconds LLM request duration in seconds.\n\
# TYPE toolnexus_llm_request_duration_seconds histogram\n",
        );
        for (le, n) in [
            ("0.05", 0),
            ("0.1", 1),
            ("0.25", 1),
            ("0.5", 1),
            ("1", 1),
            ("2.5", 1),
            ("5", 1),
            ("10", 1),
            ("30", 1),
            ("60", 1),
            ("+Inf", 1),
        ] {
            expected.push_str(&format!(
                "toolnexus_llm_request_duration_seconds_bucket{{model=\"gpt-x\",le=\"{le}\"}} {n}\n"
            ));
        }
        expected.push_str(
            "toolnexus_llm_request_duration_seconds_sum{model=\"gpt-x\"} 0.1\n\
toolnexus_llm_request_duration_seconds_count{model=\"gpt-x\"} 1\n\
# HELP toolnexus_tool_calls_total Total tool calls.\n\
# TYPE toolnexus_tool_calls_total counter\n\
toolnexus_tool_calls_total{tool=\"add\",source=\"native\",is_error=\"false\",pending=\"false\"} 1\n\
# HELP toolnexus_tool_duration_seconds Tool execution duration in seconds.\n\
# TYPE toolnexus_tool_duration_seconds histogram\n",
        );
        for (le, n) in [
            ("0.05", 0),
            ("0.1", 0),
            ("0.25", 0),
            ("0.5", 1),
            ("1", 1),
            ("2.5", 1),
            ("5", 1),
            ("10", 1),
            ("30", 1),
            ("60", 1),
            ("+Inf", 1),
        ] {
            expected.push_str(&format!(
                "toolnexus_tool_duration_seconds_bucket{{tool=\"add\",le=\"{le}\"}} {n}\n"
            ));
        }
        expected.push_str(
            "toolnexus_tool_duration_seconds_sum{tool=\"add\"} 0.3\n\
toolnexus_tool_duration_seconds_count{tool=\"add\"} 1\n\
# HELP toolnexus_run_errors_total Total run errors.\n\
# TYPE toolnexus_run_errors_total counter\n",
        );
        assert_eq!(r.render(), expected);
    }

    #[test]
    fn series_sort_by_rendered_labels_and_values_are_escaped() {
        let r = Registry::new();
        for (tool, is_error, pending) in [
            ("b\"q", false, false),
            ("a\\b", true, false),
            ("a\nb", false, true),
            ("a\\b", false, false),
        ] {
            r.record(&MetricEvent::Tool {
                tool,
                source: "mcp",
                is_error,
                pending,
                ms: 1.0,
            });
        }
        r.record(&MetricEvent::Llm {
            model: "m",
            ok: false,
            ms: 70_000.0,
            prompt_tokens: 9,
            completion_tokens: 9,
        });
        r.record(&MetricEvent::Run {
            model: "m",
            turns: 1,
            tool_calls: 0,
            total_tokens: 0,
            ms: 1.0,
            error: Some("boom"),
        });
        let text = r.render();
        let calls: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("toolnexus_tool_calls_total{"))
            .collect();
        assert_eq!(
            calls,
            [
                r#"toolnexus_tool_calls_total{tool="a\\b",source="mcp",is_error="false",pending="false"} 1"#,
                r#"toolnexus_tool_calls_total{tool="a\\b",source="mcp",is_error="true",pending="false"} 1"#,
                r#"toolnexus_tool_calls_total{tool="a\nb",source="mcp",is_error="false",pending="true"} 1"#,
                r#"toolnexus_tool_calls_total{tool="b\"q",source="mcp",is_error="false",pending="false"} 1"#,
            ]
        );
        // A failed call counts, adds no tokens (no token series at all),
        // and 70 s lands only in +Inf.
        assert!(text.contains("toolnexus_llm_requests_total{model=\"m\",status=\"error\"} 1\n"));
        assert!(!text.contains("toolnexus_llm_tokens_total{"));
        assert!(text.contains(
            "toolnexus_llm_request_duration_seconds_bucket{model=\"m\",le=\"60\"} 0\n\
toolnexus_llm_request_duration_seconds_bucket{model=\"m\",le=\"+Inf\"} 1\n\
toolnexus_llm_request_duration_seconds_sum{model=\"m\"} 70\n"
        ));
        assert!(text.ends_with(
            "# TYPE toolnexus_run_errors_total counter\ntoolnexus_run_errors_total{model=\"m\"} 1\n"
        ));
    }

    #[test]
    fn token_counters_stop_at_the_largest_count_instead_of_wrapping() {
        let r = Registry::new();
        for _ in 0..3 {
            r.record(&MetricEvent::Llm {
                model: "m",
                ok: true,
                ms: 1.0,
                prompt_tokens: u64::MAX,
                completion_tokens: 1,
            });
        }
        let text = r.render();
        assert!(
            text.contains(&format!(
                "toolnexus_llm_tokens_total{{type=\"prompt\"}} {}\n",
                u64::MAX
            )),
            "{text}"
        );
        assert!(text.contains("toolnexus_llm_tokens_total{type=\"completion\"} 3\n"));
    }

    #[test]
    fn more_series_than_slots_are_all_kept() {
        let r = Registry::new();
        for i in 0..(SLOTS + 10) {
            r.record(&MetricEvent::Tool {
                tool: &format!("t{i:04}"),
                source: "native",
                is_error: false,
                pending: false,
                ms: 10.0,
            });
        }
        r.record(&MetricEvent::Tool {
            tool: "t0000",
            source: "native",
            is_error: false,
            pending: false,
            ms: 10.0,
        });
        let text = r.render();
        let series = text
            .lines()
            .filter(|l| l.starts_with("toolnexus_tool_calls_total{"))
            .count();
        assert_eq!(series, SLOTS + 10);
        assert!(text.contains("toolnexus_tool_calls_total{tool=\"t0000\",source=\"native\",is_error=\"false\",pending=\"false\"} 2\n"));
        assert!(text.contains("toolnexus_tool_calls_total{tool=\"t0265\",source=\"native\",is_error=\"false\",pending=\"false\"} 1\n"));
    }

    #[test]
    fn made_up_tool_names_past_the_cap_or_too_long_count_under_other() {
        let r = Registry::new();
        let call = |tool: &str| {
            r.record(&MetricEvent::Tool {
                tool,
                source: "custom",
                is_error: true,
                pending: false,
                ms: 1.0,
            });
        };
        for i in 0..(METRIC_SERIES + 500) {
            call(&format!("made_up_{i}"));
        }
        call(&"x".repeat(METRIC_LABEL_BYTES + 1));
        call("made_up_0");
        let text = r.render();
        let series: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("toolnexus_tool_calls_total{"))
            .collect();
        assert_eq!(series.len(), METRIC_SERIES + 1, "the cap and one (other)");
        assert!(series.contains(&"toolnexus_tool_calls_total{tool=\"(other)\",source=\"(other)\",is_error=\"true\",pending=\"false\"} 501"));
        assert!(series.contains(&"toolnexus_tool_calls_total{tool=\"made_up_0\",source=\"custom\",is_error=\"true\",pending=\"false\"} 2"));
        assert!(!text.contains(&"x".repeat(METRIC_LABEL_BYTES + 1)));
    }

    #[test]
    fn concurrent_records_all_count() {
        let r = Registry::new();
        std::thread::scope(|s| {
            for t in 0..4 {
                let r = &r;
                s.spawn(move || {
                    for i in 0..500 {
                        r.record(&MetricEvent::Tool {
                            tool: if i % 2 == 0 { "even" } else { "odd" },
                            source: "native",
                            is_error: t % 2 == 1,
                            pending: false,
                            ms: 1.0,
                        });
                        r.record(&MetricEvent::Llm {
                            model: "m",
                            ok: true,
                            ms: 1.0,
                            prompt_tokens: 1,
                            completion_tokens: 2,
                        });
                    }
                });
            }
        });
        let text = r.render();
        assert!(text.contains("toolnexus_llm_requests_total{model=\"m\",status=\"ok\"} 2000\n"));
        assert!(text.contains("toolnexus_llm_tokens_total{type=\"completion\"} 4000\n"));
        assert!(text.contains("toolnexus_tool_duration_seconds_count{tool=\"even\"} 1000\n"));
        assert!(text.contains(
            "toolnexus_tool_calls_total{tool=\"odd\",source=\"native\",is_error=\"true\",pending=\"false\"} 500\n"
        ));
    }

    #[test]
    fn numbers_render_as_ecmascript_string_does() {
        for (x, s) in [
            (0.1, "0.1"),
            (0.1 + 0.2, "0.30000000000000004"),
            (60.0, "60"),
            (2.5, "2.5"),
            (0.019, "0.019"),
            (123456.789, "123456.789"),
            (1e21, "1e+21"),
            (1.5e21, "1.5e+21"),
            (1e20, "100000000000000000000"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (0.0, "0"),
            (-2.5, "-2.5"),
        ] {
            assert_eq!(js_number(x), s, "{x:e}");
        }
    }

    #[test]
    fn events_render_as_camel_case_json() {
        let tool = MetricEvent::Tool {
            tool: "a\"b",
            source: "mcp",
            is_error: false,
            pending: true,
            ms: 1.5,
        };
        let v: serde_json::Value =
            serde_json::from_str(&tool.to_value().to_string()).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"event":"tool","tool":"a\"b","source":"mcp","isError":false,"pending":true,"ms":1.5})
        );
        let run = MetricEvent::Run {
            model: "m",
            turns: 2,
            tool_calls: 1,
            total_tokens: 16,
            ms: 3.0,
            error: Some("provider said no"),
        };
        let v: serde_json::Value = serde_json::from_str(&run.to_value().to_string()).expect("json");
        assert_eq!(
            v,
            serde_json::json!({"event":"run","model":"m","turns":2,"toolCalls":1,"totalTokens":16,"ms":3.0,"error":"provider said no"})
        );
        let llm = MetricEvent::Llm {
            model: "m",
            ok: false,
            ms: f64::NAN,
            prompt_tokens: 0,
            completion_tokens: 0,
        };
        let v: serde_json::Value = serde_json::from_str(&llm.to_value().to_string()).expect("json");
        assert_eq!(v["status"], "error");
        assert_eq!(v["ms"], 0.0);
    }
}
