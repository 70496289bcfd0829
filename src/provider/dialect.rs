//! The loop's side of a provider turn (SPEC §8), dialect by dialect: every
//! function here picks the style's own piece in `openai.rs`,
//! `anthropic.rs`, `gemini.rs` or `responses.rs` — the body written, the
//! assistant turn and its tool calls read off an answer, the final text, the
//! usage, the tool results fed back. Messages stay in the provider's own
//! shape throughout: the transcript is what the provider sent and will be
//! sent back verbatim. `crate::client::shape` is this module.

use super::turn::Entries;
pub use super::turn::{append_turn, system_message, user_message, Body, Call, Fed, Usage};
use super::{anthropic, gemini, openai, responses, Style};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

impl<'a> Body<'a> {
    /// The body's entries, in order, as the style writes them.
    fn entries(&self) -> Entries<'a> {
        match self.style {
            Style::OpenAi => openai::body_entries(self),
            Style::Anthropic => anthropic::body_entries(self),
            Style::Gemini => gemini::body_entries(self),
            Style::Responses => responses::body_entries(self),
        }
    }

    /// The body as JSON bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(1024);
        // Serialising borrowed JSON values into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut out, self);
        out
    }

    /// The body as a JSON value (for a provider that is not HTTP).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Serialize for Body<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let entries = self.entries();
        let mut map = s.serialize_map(Some(entries.len()))?;
        for (k, v) in &entries {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The assistant turn to append, verbatim in the provider's shape (the
/// responses style's is the list of its output items).
pub fn assistant_message(style: Style, raw: &Value) -> Value {
    match style {
        Style::OpenAi => openai::assistant_message(raw),
        Style::Anthropic => anthropic::assistant_message(raw),
        Style::Gemini => gemini::model_content(raw),
        Style::Responses => responses::assistant_items(raw),
    }
}

/// An answer taken apart for the loop: its assistant message
/// ([`assistant_message`]; on the openai style moved out of the answer
/// rather than copied), the tool calls it carries ([`calls_of`]), and, when
/// it carries none, the run's final text ([`final_text`]).
pub fn take_turn(style: Style, mut raw: Value) -> (Value, Vec<Call>, Option<String>) {
    if style != Style::OpenAi {
        let message = assistant_message(style, &raw);
        let calls = calls_of(style, &message);
        let text = calls.is_empty().then(|| final_text(style, &raw));
        return (message, calls, text);
    }
    let calls = openai::message(&raw).map(openai::calls).unwrap_or_default();
    let text = calls.is_empty().then(|| openai::answer_text(&raw));
    let taken = crate::json::field_mut(&mut raw, "choices")
        .and_then(|c| c.get_mut(0))
        .and_then(|c| crate::json::field_mut(c, "message"))
        .map(Value::take);
    let message = taken.unwrap_or_else(|| assistant_message(style, &Value::Null));
    (message, calls, text)
}

/// The tool calls of an assistant message, in order.
pub fn calls_of(style: Style, message: &Value) -> Vec<Call> {
    match style {
        Style::OpenAi => openai::calls(message),
        Style::Anthropic => anthropic::calls(message),
        Style::Gemini => gemini::calls(message),
        Style::Responses => responses::calls(message),
    }
}

/// How many tool calls an answer carries: `calls_of` of its
/// `assistant_message`, counted (on the openai style without copying the
/// message or parsing any call's arguments).
pub fn call_count(style: Style, raw: &Value) -> usize {
    match style {
        Style::OpenAi => openai::message(raw).map_or(0, |m| {
            openai::call_views(m, openai::WithoutFunction::Kept).count()
        }),
        _ => calls_of(style, &assistant_message(style, raw)).len(),
    }
}

/// The final text of an answer.
pub fn final_text(style: Style, raw: &Value) -> String {
    match style {
        Style::OpenAi => openai::answer_text(raw),
        Style::Anthropic => anthropic::answer_text(raw),
        Style::Gemini => gemini::text_of(&gemini::model_content(raw)),
        Style::Responses => responses::text_of(responses::output(raw)),
    }
}

/// The text at the turn limit (see each dialect's `text_at_limit`).
pub fn text_at_limit(style: Style, messages: &[Value]) -> String {
    match style {
        Style::OpenAi => openai::text_at_limit(messages),
        Style::Anthropic => String::new(),
        Style::Gemini => gemini::text_at_limit(messages),
        Style::Responses => responses::text_at_limit(messages),
    }
}

impl Usage {
    /// Adds one answer's usage as its dialect counts it (see each
    /// dialect's `usage`); an answer without one adds nothing.
    pub fn add(&mut self, style: Style, raw: &Value) {
        let counted = match style {
            Style::OpenAi => openai::usage(raw),
            Style::Anthropic => anthropic::usage(raw),
            Style::Gemini => {
                Some(gemini::usage(raw)).map(|u| (u.prompt, u.completion, u.total_tokens()))
            }
            Style::Responses => {
                Some(responses::usage(raw)).map(|u| (u.prompt, u.completion, u.total_tokens()))
            }
        };
        if let Some(counts) = counted {
            self.add_counts(counts);
        }
    }
}

/// The anthropic `tool_result` block of one result ([`anthropic::result_block`]).
pub fn anthropic_block(f: &Fed) -> Value {
    anthropic::result_block(f)
}

/// The gemini parts of one result ([`gemini::result_parts`]).
pub fn gemini_parts(f: &Fed) -> Vec<Value> {
    gemini::result_parts(f)
}

/// The provider's tool-result shape: openai one `tool` message per call,
/// anthropic one `user` message of `tool_result` blocks, gemini one `user`
/// content of `functionResponse` parts (the output wrapped in an object),
/// responses one `function_call_output` item per call.
pub fn result_messages(style: Style, fed: &[Fed]) -> Vec<Value> {
    match style {
        Style::OpenAi => fed.iter().map(openai::result_message).collect(),
        Style::Anthropic => vec![anthropic::results_message(
            fed.iter().map(anthropic::result_block).collect(),
        )],
        Style::Gemini => vec![gemini::results_content(
            fed.iter().flat_map(gemini::result_parts).collect(),
        )],
        Style::Responses => fed.iter().map(responses::result_item).collect(),
    }
}

/// The id of the call a result answers: a `tool` message's `tool_call_id`
/// (openai, and the responses style, which is never resumed), a
/// `tool_result` block's `tool_use_id`, a gemini part's
/// `functionResponse.id`.
pub fn result_id(style: Style, v: &Value) -> Option<String> {
    let key = match style {
        Style::OpenAi | Style::Responses => "tool_call_id",
        Style::Anthropic => "tool_use_id",
        Style::Gemini => {
            return v
                .pointer("/functionResponse/id")?
                .as_str()
                .map(str::to_string)
        }
    };
    v.get(key).and_then(Value::as_str).map(str::to_string)
}

/// The user turn a run starts with, in the style's shape.
pub fn user_message_for(style: Style, prompt: &str) -> Value {
    match style {
        Style::Gemini => gemini::user_content(prompt),
        _ => user_message(prompt),
    }
}
