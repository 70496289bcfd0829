//! What a tools/call result becomes (SPEC §2), read the same on rmcp's path
//! (`session.rs`) and the direct one (`direct.rs`, whose one-pass reader is
//! compared against it).

use crate::parts::{Part, PartKind};
use crate::tool::ToolResult;
use serde_json::Value;

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
