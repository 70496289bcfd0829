//! A tools/call result each way (SPEC §2): what an MCP server's result
//! becomes for the toolkit ([`shape_call_result`], read the same on the
//! client's rmcp path and its direct one, whose one-pass reader in
//! `plain.rs` is compared against it), and what a tool's result becomes for
//! a client of the served toolkit ([`call_result`]).

use crate::parts::{Part, PartKind};
use crate::tool::ToolResult;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{json, Value};

/// SPEC §2 result shaping: isError ⇒ the joined text as an error;
/// structuredContent ⇒ its JSON in the server's key order; else the text
/// parts joined with "\n", then the text of embedded resources. Media
/// (§1B) becomes the result's parts on every branch: `image`/`audio` as
/// bytes, `resource_link` as a file URL, a `resource` blob as file bytes. A
/// result of media alone says what it holds in `output`, one line a part.
pub fn shape_call_result(result: &Value) -> ToolResult {
    let content = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let texts = content
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|p| p.get("text").and_then(Value::as_str));
    let parts = media_parts(content);
    if result.get("isError") == Some(&Value::Bool(true)) {
        let text = texts.collect::<Vec<_>>().join("\n");
        return ToolResult::error(text).with_parts(parts);
    }
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        return ToolResult::ok(structured.to_string()).with_parts(parts);
    }
    let embedded = content
        .iter()
        .filter(|p| p.get("type").and_then(Value::as_str) == Some("resource"))
        .filter_map(|p| p.pointer("/resource/text").and_then(Value::as_str));
    let mut output = texts.chain(embedded).collect::<Vec<_>>().join("\n");
    if output.is_empty() && !parts.is_empty() {
        output = parts
            .iter()
            .map(Part::describe)
            .collect::<Vec<_>>()
            .join("\n");
    }
    ToolResult::ok(output).with_parts(parts)
}

/// The §1B parts of an MCP `content` list. `data`/`blob` are the server's
/// base64 text, passed on as it is.
fn media_parts(content: &[Value]) -> Vec<Part> {
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_string);
    let media = |kind, mime: Option<String>, data, url, name| Part {
        kind,
        text: None,
        mime_type: Some(mime.unwrap_or_else(|| "application/octet-stream".into())),
        data,
        url,
        name,
    };
    content
        .iter()
        .filter_map(|item| match item.get("type").and_then(Value::as_str)? {
            kind @ ("image" | "audio") => {
                let kind = if kind == "image" {
                    PartKind::Image
                } else {
                    PartKind::Audio
                };
                let (data, mime) = (text(item, "data")?, text(item, "mimeType")?);
                Some(media(kind, Some(mime), Some(data), None, None))
            }
            "resource_link" => {
                let uri = text(item, "uri")?;
                let name = text(item, "name").filter(|n| !n.is_empty());
                Some(media(
                    PartKind::File,
                    text(item, "mimeType"),
                    None,
                    Some(uri),
                    name,
                ))
            }
            "resource" => {
                let res = item.get("resource")?;
                let blob = text(res, "blob")?;
                Some(media(
                    PartKind::File,
                    text(res, "mimeType"),
                    Some(blob),
                    None,
                    text(res, "uri"),
                ))
            }
            _ => None,
        })
        .collect()
}

/// A proxied MCP tool's result as its server sent it (`raw`, kept by the
/// call's relay), for the gateway to answer as it is: its content parts
/// (embedded resources, several text parts, ...), `structuredContent` and
/// `isError` unchanged. `None` (answer [`call_result`] of `result`) when no
/// raw result was kept (not an MCP tool, a call that failed), when a cap
/// dropped parts since (`result` has fewer than the raw one gave), or when
/// it is no call result.
pub fn passed_through(
    result: &ToolResult,
    raw: Option<crate::tool::RawResult>,
) -> Option<CallToolResult> {
    let raw = raw.filter(|r| r.parts == result.parts.len())?;
    if !raw.result.get("content").is_some_and(Value::is_array) {
        return None;
    }
    serde_json::from_value(raw.result).ok()
}

/// A tool's result as MCP's: the output as one text part, then its parts.
pub fn call_result(result: ToolResult) -> CallToolResult {
    let mut content = Vec::with_capacity(1 + result.parts.len());
    content.push(ContentBlock::text(result.output));
    content.extend(result.parts.iter().filter_map(part_content));
    if result.is_error {
        CallToolResult::error(content)
    } else {
        CallToolResult::success(content)
    }
}

/// A §1B part as MCP content, after the output's text part: text as text,
/// image and audio bytes as image and audio content, file bytes as an
/// embedded resource, and anything held by URL as a resource link (what an
/// inbound resource link becomes, SPEC §2). Base64 passes through as it is.
fn part_content(part: &Part) -> Option<ContentBlock> {
    let mime = part
        .mime_type
        .as_deref()
        .unwrap_or("application/octet-stream");
    let block = match (part.kind, &part.data, &part.url) {
        (PartKind::Text, _, _) => {
            json!({"type": "text", "text": part.text.as_deref().unwrap_or("")})
        }
        (PartKind::Image, Some(data), _) => {
            json!({"type": "image", "data": data, "mimeType": mime})
        }
        (PartKind::Audio, Some(data), _) => {
            json!({"type": "audio", "data": data, "mimeType": mime})
        }
        (PartKind::File, Some(data), _) => {
            let name = part.name.as_deref().unwrap_or("part");
            let uri = part
                .url
                .clone()
                .unwrap_or_else(|| format!("file:///{name}"));
            json!({"type": "resource", "resource": {"uri": uri, "mimeType": mime, "blob": data}})
        }
        (_, None, Some(url)) => json!({
            "type": "resource_link",
            "uri": url,
            "name": part.name.as_deref().unwrap_or(url),
            "mimeType": mime
        }),
        (_, None, None) => return None,
    };
    serde_json::from_value(block).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::RawResult;

    /// A kept result goes out as it came; without one, with a part a cap
    /// dropped since, or with no content array, the library's reading does.
    #[test]
    fn a_kept_result_passes_through_unless_a_part_was_dropped() {
        let raw = json!({"content": [
            {"type": "resource", "resource": {"uri": "test://r", "mimeType": "text/plain", "text": "t"}},
            {"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "structuredContent": {"k": 1}, "isError": false});
        let shaped = shape_call_result(&raw);
        let kept = |parts: usize| {
            Some(RawResult {
                result: raw.clone(),
                parts,
            })
        };
        let through = passed_through(&shaped, kept(shaped.parts.len()))
            .map(|r| serde_json::to_value(r).unwrap_or_default());
        assert_eq!(through, Some(raw.clone()));
        assert!(passed_through(&shaped, None).is_none());
        assert!(passed_through(&shaped, kept(shaped.parts.len() + 1)).is_none());
        let no_content = Some(RawResult {
            result: json!({"isError": false}),
            parts: 0,
        });
        assert!(passed_through(&ToolResult::ok(""), no_content).is_none());
    }
}
