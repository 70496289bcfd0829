//! A content part's provider block (§8A), and the transcript as the loop
//! sends it.
//!
//! The mapping is a positive list: every (style, part type) pair either has
//! a block shape (in its dialect file: `openai::part_block`,
//! `anthropic::part_block`) or is refused by name ([`Unsupported`]). An
//! unknown block sent to a provider is usually accepted with a 200 and
//! silently ignored, so "map and hope" is never an option. The translator
//! and the client loop both emit parts through it. [`wire_messages`] walks
//! a transcript; the dialect files rewrite their own result shapes in it.

use super::{anthropic, openai};
use crate::parts::{is_media_value, over_limit_message, Part, PartKind};
use crate::style::Style;
use serde_json::Value;
use std::fmt;

/// A part that has no block in a provider style (§8A): names both.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    pub kind: PartKind,
    pub mime_type: Option<String>,
    pub style: Style,
}

impl fmt::Display for Unsupported {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "no \"{}\" block shape for a {} part",
            self.style.name(),
            self.kind.as_str()
        )?;
        if let Some(m) = &self.mime_type {
            write!(f, " ({m})")?;
        }
        Ok(())
    }
}

/// The provider block of a part (§8A), or the refusal naming it.
pub fn part_block(p: &Part, style: Style) -> Result<Value, Unsupported> {
    let block = match style {
        Style::OpenAi => openai::part_block(p),
        Style::Anthropic => anthropic::part_block(p),
        // These dialects carry parts their own way (a Gemini result's
        // media goes as parts beside its `functionResponse`; a
        // Responses result is text): no block here.
        Style::Gemini | Style::Responses => None,
    };
    block.ok_or_else(|| Unsupported {
        kind: p.kind,
        mime_type: p.mime_type.clone(),
        style,
    })
}

/// [`part_block`], or — for a part the style cannot carry — a text block
/// holding [`Part::placeholder_text`]: what a part that came from a tool
/// (not one the caller attached) degrades to.
pub fn part_block_or_placeholder(p: &Part, style: Style) -> Value {
    part_block(p, style).unwrap_or_else(|_| p.placeholder_block())
}

/// How the client loop treats the parts of a transcript when it writes a
/// provider request (§1B `maxPartBytes`, §8A `on_unsupported_part`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WireOptions {
    /// The largest part, in decoded bytes; `None` is no limit.
    pub max_part_bytes: Option<u64>,
    /// What a part the style has no block for becomes. `None` is upstream's
    /// provenance rule: an error for a part the caller attached, the text
    /// placeholder for one a tool returned.
    pub on_unsupported: Option<OnUnsupported>,
}

/// `onUnsupportedPart`: fail the run, or send the text placeholder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnUnsupported {
    Error,
    Text,
}

impl WireOptions {
    /// The block of one part. `attached` is true for a part the caller put
    /// in a user turn, false for one a tool returned: a tool's part never
    /// fails a run (an oversize or unsupported one degrades to its text
    /// placeholder); an attached one is an error before anything is sent.
    fn block(&self, p: &Part, style: Style, attached: bool) -> Result<Value, String> {
        let placeholder = || p.placeholder_block();
        if let Some(limit) = self.max_part_bytes {
            if p.byte_len() as u64 > limit {
                if attached {
                    return Err(over_limit_message(p.byte_len(), limit));
                }
                return Ok(placeholder());
            }
        }
        match part_block(p, style) {
            Ok(b) => Ok(b),
            Err(refusal) => {
                let fail = match self.on_unsupported {
                    Some(OnUnsupported::Error) => true,
                    Some(OnUnsupported::Text) => false,
                    None => attached,
                };
                if fail {
                    Err(refusal.to_string())
                } else {
                    Ok(placeholder())
                }
            }
        }
    }

    fn block_of(&self, v: &Value, style: Style, attached: bool) -> Result<Value, String> {
        let p = Part::read_value(v)?;
        self.block(&p, style, attached)
    }
}

/// Whether any message of a transcript carries §1B parts (a `parts` key on
/// a tool message or a tool_result block, or a media part in a content
/// list): when none does, the transcript goes to the provider as it is.
pub fn transcript_has_parts(messages: &[Value]) -> bool {
    use crate::json::field;
    messages.iter().any(|m| {
        field(m, "parts").is_some()
            || field(m, "content")
                .and_then(Value::as_array)
                .is_some_and(|blocks| {
                    blocks
                        .iter()
                        .any(|b| field(b, "parts").is_some() || is_media_value(b))
                })
    })
}

/// The transcript as the provider is sent it (§8A). The transcript keeps
/// canonical parts, portable between styles; here they become the style's
/// blocks. An anthropic `tool_result` with parts gets a content list: its
/// text, then each part's block. An openai `tool` message cannot carry media
/// (a 400), so the media of the tool messages that answer one assistant turn
/// move, in call order, into one `user` message right after them, each
/// behind a line saying whose output it is; that message exists only on the
/// wire, never in the transcript. Each step is keyed on the message's
/// shape, not on `style` (a `tool` message is
/// `openai::wire_tool_message`'s, a `tool_result` block with parts
/// `anthropic::wire_tool_result`'s); `style` picks the blocks.
pub fn wire_messages(
    style: Style,
    messages: &[Value],
    opts: &WireOptions,
) -> Result<Vec<Value>, String> {
    let mut out = Vec::with_capacity(messages.len() + 1);
    let mut moved: Vec<Value> = Vec::new();
    let flush = |out: &mut Vec<Value>, moved: &mut Vec<Value>| {
        if !moved.is_empty() {
            out.push(serde_json::json!({"role": "user", "content": std::mem::take(moved)}));
        }
    };
    for m in messages {
        let Some(obj) = m.as_object() else {
            flush(&mut out, &mut moved);
            out.push(m.clone());
            continue;
        };
        let role = obj.get("role").and_then(Value::as_str);
        // A part a tool returned never fails the run (see WireOptions::block).
        let mut tool_part = |p: &Value| opts.block_of(p, style, false);
        if role == Some("tool") {
            out.push(openai::wire_tool_message(obj, &mut moved, &mut tool_part)?);
            continue;
        }
        flush(&mut out, &mut moved);
        let Some(blocks) = obj.get("content").and_then(Value::as_array) else {
            out.push(m.clone());
            continue;
        };
        let attached = role == Some("user");
        let mut wired = Vec::with_capacity(blocks.len());
        for b in blocks {
            let is_result = b.get("type").and_then(Value::as_str) == Some("tool_result");
            match b.get("parts").and_then(Value::as_array) {
                Some(parts) if is_result && !parts.is_empty() => {
                    wired.push(anthropic::wire_tool_result(b, parts, &mut tool_part)?);
                }
                _ if is_media_value(b) => {
                    wired.push(opts.block_of(b, style, attached)?);
                }
                _ => wired.push(b.clone()),
            }
        }
        let mut msg = obj.clone();
        msg.insert("content".into(), Value::Array(wired));
        out.push(Value::Object(msg));
    }
    flush(&mut out, &mut moved);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    use crate::parts::png_fixture as png;

    #[test]
    fn blocks_per_style_follow_the_allow_list() {
        // content.py encode_part; test_multimodal.py's per-style block shapes.
        let p = png();
        assert_eq!(
            part_block(&p, Style::OpenAi).unwrap(),
            json!({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}})
        );
        assert_eq!(
            part_block(&p, Style::Anthropic).unwrap(),
            json!({"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}})
        );
        let pdf = Part::from_value(
            &json!({"type":"file","mimeType":"application/pdf","data":"JVBERg==","name":"r.pdf"}),
        )
        .unwrap();
        assert_eq!(
            part_block(&pdf, Style::OpenAi).unwrap(),
            json!({"type":"file","file":{"filename":"r.pdf","file_data":"data:application/pdf;base64,JVBERg=="}})
        );
        assert_eq!(
            part_block(&pdf, Style::Anthropic).unwrap()["type"],
            "document"
        );
        let linked = Part::from_value(
            &json!({"type":"file","mimeType":"application/pdf","url":"https://h/d.pdf"}),
        )
        .unwrap();
        assert_eq!(
            part_block(&linked, Style::Anthropic).unwrap(),
            json!({"type":"document","source":{"type":"url","url":"https://h/d.pdf"}})
        );
        // OpenAI chat has no URL form for a file.
        assert!(part_block(&linked, Style::OpenAi).is_err());
        let mp3 = Part::from_value(&json!({"type":"audio","mimeType":"audio/mpeg","data":"SUQz"}))
            .unwrap();
        assert_eq!(
            part_block(&mp3, Style::OpenAi).unwrap(),
            json!({"type":"input_audio","input_audio":{"data":"SUQz","format":"mp3"}})
        );
        let refusal = part_block(&mp3, Style::Anthropic).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "no \"anthropic\" block shape for a audio part (audio/mpeg)"
        );
        assert_eq!(
            part_block_or_placeholder(&mp3, Style::Anthropic),
            json!({"type":"text","text":"[unsupported audio part (audio/mpeg, 3 bytes)]"})
        );
        let ogg = Part::from_value(&json!({"type":"audio","mimeType":"audio/ogg","data":"AA=="}))
            .unwrap();
        assert!(part_block(&ogg, Style::OpenAi).is_err());
    }

    fn tool_msg(id: &str, parts: Value) -> Value {
        json!({"role": "tool", "tool_call_id": id, "content": format!("out {id}"), "parts": parts, "name": "shot"})
    }

    /// client.py _wire_messages, openai: a tool message keeps its text and
    /// loses parts/name; the media of one turn's results move, in call
    /// order, into one user message after the last tool message.
    #[test]
    fn openai_moves_tool_media_into_one_user_message() {
        let img = json!({"type": "image", "mimeType": "image/png", "data": "AA=="});
        let transcript = vec![
            json!({"role": "assistant", "content": null, "tool_calls": []}),
            tool_msg("c1", json!([img])),
            json!({"role": "tool", "tool_call_id": "c2", "content": "plain"}),
            tool_msg("c3", json!([img, {"type": "text", "text": "caption"}])),
            json!({"role": "assistant", "content": "done"}),
        ];
        assert!(transcript_has_parts(&transcript));
        let wired = wire_messages(Style::OpenAi, &transcript, &WireOptions::default()).unwrap();
        let block =
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}});
        assert_eq!(
            wired,
            vec![
                transcript[0].clone(),
                json!({"role": "tool", "tool_call_id": "c1", "content": "out c1"}),
                transcript[2].clone(),
                json!({"role": "tool", "tool_call_id": "c3", "content": [
                    {"type": "text", "text": "out c3"}, {"type": "text", "text": "caption"}]}),
                json!({"role": "user", "content": [
                    {"type": "text", "text": "Output of tool shot (c1):"}, block,
                    {"type": "text", "text": "Output of tool shot (c3):"}, block]}),
                transcript[4].clone(),
            ]
        );
    }

    /// anthropic: a tool_result with parts gets [text, blocks…] as content;
    /// an audio part a tool returned degrades to its placeholder.
    #[test]
    fn anthropic_keeps_tool_media_inside_the_tool_result() {
        let transcript = vec![json!({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "ok", "is_error": false,
             "parts": [{"type": "image", "mimeType": "image/png", "url": "https://h/a.png"},
                       {"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="}]}]})];
        let wired = wire_messages(Style::Anthropic, &transcript, &WireOptions::default()).unwrap();
        assert_eq!(
            wired,
            vec![json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "t1", "is_error": false, "content": [
                    {"type": "text", "text": "ok"},
                    {"type": "image", "source": {"type": "url", "url": "https://h/a.png"}},
                    {"type": "text", "text": "[unsupported audio part (audio/wav, 4 bytes)]"}]}]})]
        );
    }

    /// The provenance rule: an attached part the style cannot carry, or one
    /// over maxPartBytes, fails before anything is sent; the same from a tool
    /// degrades. onUnsupportedPart overrides the shape rule both ways.
    #[test]
    fn attached_parts_fail_and_tool_parts_degrade() {
        let audio = json!({"type": "audio", "mimeType": "audio/wav", "data": "UklGRg=="});
        let user =
            vec![json!({"role": "user", "content": [{"type": "text", "text": "hear"}, audio]})];
        let e = wire_messages(Style::Anthropic, &user, &WireOptions::default()).unwrap_err();
        assert_eq!(
            e,
            "no \"anthropic\" block shape for a audio part (audio/wav)"
        );
        let text = WireOptions {
            on_unsupported: Some(OnUnsupported::Text),
            ..Default::default()
        };
        let wired = wire_messages(Style::Anthropic, &user, &text).unwrap();
        assert_eq!(
            wired[0]["content"][1]["text"],
            "[unsupported audio part (audio/wav, 4 bytes)]"
        );
        let small = WireOptions {
            max_part_bytes: Some(2),
            ..Default::default()
        };
        let e = wire_messages(Style::OpenAi, &user, &small).unwrap_err();
        assert_eq!(
            e,
            "content part is 4 decoded bytes, over the maxPartBytes limit of 2"
        );
        let from_tool = vec![tool_msg("c1", json!([audio]))];
        let wired = wire_messages(Style::OpenAi, &from_tool, &small).unwrap();
        assert_eq!(
            wired[1]["content"][1]["text"],
            "[unsupported audio part (audio/wav, 4 bytes)]"
        );
        let strict = WireOptions {
            on_unsupported: Some(OnUnsupported::Error),
            ..Default::default()
        };
        let ogg = json!([{"type": "audio", "mimeType": "audio/ogg", "data": "AA=="}]);
        assert!(wire_messages(Style::OpenAi, &[tool_msg("c1", ogg)], &strict).is_err());
    }

    #[test]
    fn a_transcript_without_parts_is_left_alone() {
        let t = vec![
            json!({"role": "system", "content": "s"}),
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": "x"}}]}),
            json!({"role": "tool", "tool_call_id": "c", "content": "r"}),
        ];
        assert!(!transcript_has_parts(&t));
        assert_eq!(
            wire_messages(Style::OpenAi, &t, &WireOptions::default()).unwrap(),
            t
        );
    }
}
