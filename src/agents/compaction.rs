//! SPEC §7F context compaction: when a transcript's estimate passes
//! `maxTokens`, the older body becomes one summary system message and a
//! recent tail (starting at a plain user turn, so no tool result loses its
//! call) is kept; the leading system prompt stays verbatim. Attached as a
//! `beforeLLM` hook ([`Compactor::hook`]) on a client or on an agent runtime.

use crate::client::{HostFn, RunData};
use serde_json::{json, Value};
use std::sync::Arc;

/// The summary message's prefix.
pub const SUMMARY_PREFIX: &str = "[Summary of earlier conversation]\n";

/// The reminder `flushToMemory` adds before the tail.
pub const FLUSH_REMINDER: &str = "Before continuing: if anything from earlier is worth keeping, save it with the memory tool now — the earlier transcript is about to be summarized.";

/// Summarizes the older messages (may call a model).
pub type Summarize = Arc<dyn Fn(&[Value]) -> Result<String, String> + Send + Sync>;
/// Counts a transcript's tokens.
pub type CountTokens = Arc<dyn Fn(&[Value]) -> u64 + Send + Sync>;

/// How to compact.
#[derive(Clone)]
pub struct Compactor {
    pub max_tokens: u64,
    /// Tokens the kept tail may hold (default `max_tokens / 2`).
    pub keep_tail: Option<u64>,
    pub flush_to_memory: bool,
    pub summarize: Summarize,
    /// Default: [`estimate`].
    pub count_tokens: Option<CountTokens>,
}

/// The default estimate: Σ ceil(bytes of the message's compact JSON / 4).
pub fn estimate(messages: &[Value]) -> u64 {
    messages
        .iter()
        .map(|m| {
            let n = serde_json::to_vec(m).map_or(0, |b| b.len()) as u64;
            n.div_ceil(4)
        })
        .sum()
}

/// A user message that starts a turn: not an Anthropic tool-result carrier
/// nor a Gemini function-response content.
fn is_boundary(m: &Value) -> bool {
    if m.get("role").and_then(Value::as_str) != Some("user") {
        return false;
    }
    if let Some(Value::Array(parts)) = m.get("parts") {
        return !parts.iter().any(|p| p.get("functionResponse").is_some());
    }
    match m.get("content") {
        Some(Value::Array(blocks)) => !blocks
            .iter()
            .any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result")),
        _ => true,
    }
}

impl Compactor {
    fn count(&self, m: &[Value]) -> u64 {
        match &self.count_tokens {
            Some(f) => f(m),
            None => estimate(m),
        }
    }

    /// The compacted transcript, or `None` when it is within `max_tokens`
    /// or nothing older than the tail can be summarized.
    pub fn compact(&self, messages: &[Value]) -> Result<Option<Vec<Value>>, String> {
        if self.count(messages) <= self.max_tokens {
            return Ok(None);
        }
        let keep = self.keep_tail.unwrap_or(self.max_tokens / 2);
        let head = usize::from(
            messages
                .first()
                .and_then(|m| m.get("role"))
                .and_then(Value::as_str)
                == Some("system"),
        );
        let mut split = None;
        let mut i = messages.len();
        while i > head + 1 {
            i -= 1;
            if self.count(&messages[i..]) > keep {
                break;
            }
            if is_boundary(&messages[i]) {
                split = Some(i);
            }
        }
        let split = match split {
            Some(s) => s,
            // None fits: the most recent boundary (safety over size), else
            // the whole body is summarized.
            None => (head + 1..messages.len())
                .rev()
                .find(|&i| is_boundary(&messages[i]))
                .unwrap_or(messages.len()),
        };
        let older = &messages[head..split.max(head)];
        if split <= head || older.is_empty() {
            return Ok(None);
        }
        let summary = (self.summarize)(older)?;
        let mut out = Vec::with_capacity(messages.len() - split + 3);
        out.extend(messages[..head].iter().cloned());
        out.push(json!({"role": "system", "content": format!("{SUMMARY_PREFIX}{summary}")}));
        if self.flush_to_memory {
            out.push(json!({"role": "system", "content": FLUSH_REMINDER}));
        }
        out.extend(messages[split..].iter().cloned());
        Ok(Some(out))
    }

    /// The compactor as a `beforeLLM` hook: replaces the run's messages
    /// when it compacts, answers nothing otherwise.
    pub fn hook(self) -> HostFn {
        Arc::new(move |event: &Value, _: RunData| {
            let Some(Value::Array(messages)) = event.get("messages") else {
                return Ok(None);
            };
            Ok(self.compact(messages)?.map(|m| json!({"messages": m})))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The compaction fixture's transcript (contract notes §12.4).
    fn transcript(groups: usize) -> Vec<Value> {
        let mut m = vec![json!({"role": "system", "content": "You are Ava. SOUL."})];
        for i in 0..groups {
            m.push(
                json!({"role": "user", "content": format!("question {i} {}", "pad ".repeat(40))}),
            );
            m.push(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": format!("c{i}"), "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]}));
            m.push(json!({"role": "tool", "tool_call_id": format!("c{i}"),
                          "content": format!("result {i} {}", "data ".repeat(40))}));
            m.push(json!({"role": "assistant", "content": format!("answer {i}")}));
        }
        m
    }

    fn compactor(max: u64, keep: Option<u64>, flush: bool) -> Compactor {
        Compactor {
            max_tokens: max,
            keep_tail: keep,
            flush_to_memory: flush,
            summarize: Arc::new(|older: &[Value]| {
                Ok(format!("summarized {} messages", older.len()))
            }),
            count_tokens: None,
        }
    }

    #[test]
    fn the_fixture_transcript_compacts_to_upstreams_numbers() {
        let input = transcript(30);
        assert_eq!((input.len(), estimate(&input)), (121, 4752));
        let out = compactor(2000, Some(800), false)
            .compact(&input)
            .expect("ok")
            .expect("compacts");
        assert_eq!(out.len(), 22);
        assert_eq!(out[0], input[0]);
        assert_eq!(
            out[1]["content"],
            "[Summary of earlier conversation]\nsummarized 100 messages"
        );
        assert!(out[2]["content"]
            .as_str()
            .unwrap_or("")
            .starts_with("question 25 "));
        assert_eq!(estimate(&out), 824);
        let flushed = compactor(2000, Some(800), true)
            .compact(&input)
            .expect("ok")
            .expect("compacts");
        assert_eq!(
            (flushed.len(), flushed[2]["content"].as_str()),
            (23, Some(FLUSH_REMINDER))
        );
        let default_tail = compactor(2000, None, false)
            .compact(&input)
            .expect("ok")
            .expect("compacts");
        assert_eq!(default_tail.len(), 26);
        assert_eq!(
            default_tail[1]["content"],
            "[Summary of earlier conversation]\nsummarized 96 messages"
        );
    }

    #[test]
    fn below_the_limit_it_is_a_no_op() {
        assert_eq!(
            compactor(100_000, None, false)
                .compact(&transcript(3))
                .expect("ok"),
            None
        );
    }

    #[test]
    fn an_anthropic_tool_result_carrier_is_not_a_boundary_and_no_boundary_summarizes_all() {
        let carrier = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "x"}]});
        assert!(!is_boundary(&carrier));
        assert!(is_boundary(
            &json!({"role": "user", "content": [{"type": "text", "text": "hi"}]})
        ));
        let body: Vec<Value> = (0..6)
            .map(|i| json!({"role": "assistant", "content": format!("{i} {}", "x".repeat(100))}))
            .collect();
        let out = compactor(10, Some(5), false)
            .compact(&body)
            .expect("ok")
            .expect("compacts");
        assert_eq!(out.len(), 1, "the whole body summarized, empty tail");
    }

    #[test]
    fn a_gemini_function_response_is_not_a_boundary() {
        let results = json!({"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {"output": "x"}}}]});
        assert!(!is_boundary(&results));
        assert!(is_boundary(
            &json!({"role": "user", "parts": [{"text": "next"}]})
        ));
    }

    #[test]
    fn the_hook_replaces_messages_only_when_it_compacts() {
        let hook = compactor(2000, Some(800), false).hook();
        let big = hook(&json!({"messages": transcript(30)}), RunData::default()).expect("ok");
        assert_eq!(
            big.expect("reply")["messages"].as_array().map(Vec::len),
            Some(22)
        );
        let small = hook(&json!({"messages": transcript(1)}), RunData::default()).expect("ok");
        assert_eq!(small, None);
    }
}
