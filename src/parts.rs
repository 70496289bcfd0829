//! Content parts (SPEC §1B) and their provider blocks (§8A).
//!
//! A part is text, or media carried as bytes (standard padded base64) or as a
//! URL — never as a path, since a path means nothing once a transcript is
//! stored, replayed or sent across a process boundary. Media types come only
//! from the fixed extension table below: never sniffed from the bytes, never
//! looked up in the machine's mime database (which differs between hosts and
//! would make two ports disagree).
//!
//! The block mapping lives here once, so the translator and the client loop
//! emit parts the same way. It is a positive list: every (style, part type)
//! pair either has a block shape or is refused by name. An unknown block sent
//! to a provider is usually accepted with a 200 and silently ignored, so
//! "map and hope" is never an option.

use crate::style::Style;
use serde_json::{Map, Value};
use std::fmt;

/// What a part holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PartKind {
    Text,
    Image,
    File,
    Audio,
}

impl PartKind {
    pub fn as_str(self) -> &'static str {
        match self {
            PartKind::Text => "text",
            PartKind::Image => "image",
            PartKind::File => "file",
            PartKind::Audio => "audio",
        }
    }

    fn parse(s: &str) -> Option<PartKind> {
        Some(match s {
            "text" => PartKind::Text,
            "image" => PartKind::Image,
            "file" => PartKind::File,
            "audio" => PartKind::Audio,
            _ => return None,
        })
    }
}

/// One content part. A text part carries `text`; a media part carries
/// `mime_type` and exactly one of `data` (base64) or `url`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Part {
    pub kind: PartKind,
    pub text: Option<String>,
    pub mime_type: Option<String>,
    pub data: Option<String>,
    pub url: Option<String>,
    pub name: Option<String>,
}

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

/// The fixed media table of SPEC §6 `read`: extension (lower case) to mime
/// type and part kind.
const MEDIA_TYPES: [(&str, &str, PartKind); 8] = [
    ("png", "image/png", PartKind::Image),
    ("jpg", "image/jpeg", PartKind::Image),
    ("jpeg", "image/jpeg", PartKind::Image),
    ("gif", "image/gif", PartKind::Image),
    ("webp", "image/webp", PartKind::Image),
    ("pdf", "application/pdf", PartKind::File),
    ("mp3", "audio/mpeg", PartKind::Audio),
    ("wav", "audio/wav", PartKind::Audio),
];

/// The mime type and part kind of a path by its extension, when the table
/// has it (`shot.PNG` is `image/png`; `notes.txt` is none).
pub fn media_type_of(path: &str) -> Option<(&'static str, PartKind)> {
    let file = path.rsplit(['/', '\\']).next().unwrap_or(path);
    let (stem, ext) = file.rsplit_once('.')?;
    if stem.is_empty() {
        // `.png` is a hidden file with no extension, as Python's splitext says.
        return None;
    }
    let ext = ext.to_ascii_lowercase();
    MEDIA_TYPES
        .iter()
        .find(|(e, _, _)| *e == ext)
        .map(|(_, mime, kind)| (*mime, *kind))
}

/// Standard padded base64 without line breaks.
pub fn encode_base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The decoded length of a standard base64 text, without decoding it.
pub fn decoded_len(b64: &str) -> usize {
    let pad = if b64.ends_with("==") {
        2
    } else if b64.ends_with('=') {
        1
    } else {
        0
    };
    (b64.len() / 4 * 3).saturating_sub(pad)
}

/// An over-size part: `content part is N decoded bytes, over the
/// maxPartBytes limit of M`.
pub fn over_limit_message(bytes: usize, limit: u64) -> String {
    format!("content part is {bytes} decoded bytes, over the maxPartBytes limit of {limit}")
}

impl Part {
    /// A media part carrying `bytes`, with the mime type of `path`'s
    /// extension; `None` when the table has no such extension.
    pub fn media_from_bytes(path: &str, bytes: &[u8], name: Option<String>) -> Option<Part> {
        let (mime, kind) = media_type_of(path)?;
        Some(Part {
            kind,
            text: None,
            mime_type: Some(mime.to_string()),
            data: Some(encode_base64(bytes)),
            url: None,
            name,
        })
    }

    /// The decoded size of the bytes carried (0 for a URL or text part).
    pub fn byte_len(&self) -> usize {
        self.data.as_deref().map_or(0, decoded_len)
    }

    /// Reads a canonical part object, checking §1B: a text part needs
    /// `text`; a media part needs `mimeType` and exactly one of `data` and
    /// `url`. The message names what is wrong.
    pub fn from_value(v: &Value) -> Result<Part, String> {
        let part = Part::read_value(v)?;
        part.validate()?;
        Ok(part)
    }

    /// Reads a part object's fields without the §1B shape rules (a part
    /// with both `data` and `url` is read; the URL wins where a block is
    /// made): how the translator takes the parts of a caller's messages.
    pub fn read_value(v: &Value) -> Result<Part, String> {
        let Some(obj) = v.as_object() else {
            return Err(format!(
                "a content part must be an object, not {}",
                crate::json::type_name(v)
            ));
        };
        let kind_text = match obj.get("type") {
            Some(Value::String(s)) => s.as_str(),
            _ => return Err("a content part needs a string \"type\"".into()),
        };
        let Some(kind) = PartKind::parse(kind_text) else {
            return Err(format!("unknown content part type \"{kind_text}\""));
        };
        let field = |key: &str| -> Result<Option<String>, String> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(format!(
                    "content part key \"{key}\" must be a string, not {}",
                    crate::json::type_name(other)
                )),
            }
        };
        let part = Part {
            kind,
            text: field("text")?,
            mime_type: field("mimeType")?,
            data: field("data")?,
            url: field("url")?,
            name: field("name")?,
        };
        Ok(part)
    }

    /// §1B's shape rules.
    pub fn validate(&self) -> Result<(), String> {
        let kind = self.kind.as_str();
        if self.kind == PartKind::Text {
            return match self.text {
                Some(_) => Ok(()),
                None => Err("a text part needs text".into()),
            };
        }
        if self.mime_type.as_deref().is_none_or(str::is_empty) {
            return Err(format!("a {kind} part needs a mimeType"));
        }
        let has_data = self.data.as_deref().is_some_and(|d| !d.is_empty());
        let has_url = self.url.as_deref().is_some_and(|u| !u.is_empty());
        match (has_data, has_url) {
            (true, true) => Err(format!(
                "a {kind} part carries both data and url — exactly one is allowed"
            )),
            (false, false) => Err(format!(
                "a {kind} part carries neither data nor url — exactly one is required"
            )),
            _ => Ok(()),
        }
    }

    /// The canonical object: only the fields the part carries, in the order
    /// `type, text | mimeType, data?, url?, name?`.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("type".into(), Value::from(self.kind.as_str()));
        if self.kind == PartKind::Text {
            m.insert(
                "text".into(),
                Value::from(self.text.clone().unwrap_or_default()),
            );
            return Value::Object(m);
        }
        m.insert(
            "mimeType".into(),
            self.mime_type.clone().map_or(Value::Null, Value::from),
        );
        if let Some(d) = &self.data {
            m.insert("data".into(), Value::from(d.clone()));
        }
        if let Some(u) = &self.url {
            m.insert("url".into(), Value::from(u.clone()));
        }
        if let Some(n) = self.name.as_deref().filter(|n| !n.is_empty()) {
            m.insert("name".into(), Value::from(n));
        }
        Value::Object(m)
    }

    /// `<type> (<mimeType>, <bytes> bytes)`: a part described in words, as
    /// an MCP result made only of media says it in `output` (§8A).
    pub fn describe(&self) -> String {
        format!(
            "{} ({}, {} bytes)",
            self.kind.as_str(),
            self.mime_type.as_deref().unwrap_or("None"),
            self.byte_len()
        )
    }

    /// The text a tool's part turns into where the style has no block for
    /// it (§8A): `[unsupported <type> part (<mimeType>, <bytes> bytes)]`.
    pub fn placeholder_text(&self) -> String {
        format!(
            "[unsupported {} part ({}, {} bytes)]",
            self.kind.as_str(),
            self.mime_type.as_deref().unwrap_or("None"),
            self.byte_len()
        )
    }

    /// The provider block of this part (§8A), or the refusal naming it.
    pub fn to_block(&self, style: Style) -> Result<Value, Unsupported> {
        let refuse = || Unsupported {
            kind: self.kind,
            mime_type: self.mime_type.clone(),
            style,
        };
        let mime = self.mime_type.as_deref().unwrap_or_default();
        let data_url = |data: &str| format!("data:{mime};base64,{data}");
        let block = match (style, self.kind) {
            (Style::OpenAi | Style::Anthropic, PartKind::Text) => serde_json::json!({
                "type": "text",
                "text": self.text.as_deref().unwrap_or_default(),
            }),
            (Style::OpenAi, PartKind::Image) => {
                let url = match (&self.url, &self.data) {
                    (Some(u), _) => u.clone(),
                    (None, Some(d)) => data_url(d),
                    (None, None) => return Err(refuse()),
                };
                serde_json::json!({"type": "image_url", "image_url": {"url": url}})
            }
            (Style::OpenAi, PartKind::File) => {
                // Chat Completions takes a file only inline, and only as a data
                // URL (bare base64 is a 400).
                let Some(d) = &self.data else {
                    return Err(refuse());
                };
                serde_json::json!({"type": "file", "file": {
                    "filename": self.name.as_deref().filter(|n| !n.is_empty()).unwrap_or("file"),
                    "file_data": data_url(d),
                }})
            }
            (Style::OpenAi, PartKind::Audio) => {
                let format = match mime {
                    "audio/mpeg" | "audio/mp3" => "mp3",
                    "audio/wav" | "audio/x-wav" => "wav",
                    _ => return Err(refuse()),
                };
                let Some(d) = &self.data else {
                    return Err(refuse());
                };
                serde_json::json!({"type": "input_audio", "input_audio": {"data": d, "format": format}})
            }
            (Style::Anthropic, PartKind::Image | PartKind::File) => {
                let block_type = if self.kind == PartKind::Image {
                    "image"
                } else {
                    "document"
                };
                let source = match (&self.url, &self.data) {
                    (Some(u), _) => serde_json::json!({"type": "url", "url": u}),
                    (None, Some(d)) => {
                        serde_json::json!({"type": "base64", "media_type": mime, "data": d})
                    }
                    (None, None) => return Err(refuse()),
                };
                serde_json::json!({"type": block_type, "source": source})
            }
            // Anthropic defines no audio block: a refusal by name.
            (Style::Anthropic, PartKind::Audio) => return Err(refuse()),
            // These dialects carry parts their own way (a Gemini result's
            // media goes as parts beside its `functionResponse`; a
            // Responses result is text): no block here.
            (Style::Gemini | Style::Responses, _) => return Err(refuse()),
        };
        Ok(block)
    }

    /// [`Part::to_block`], or — for a part the style cannot carry — a text
    /// block holding [`Part::placeholder_text`]: what a part that came from a
    /// tool (not one the caller attached) degrades to.
    pub fn to_block_or_placeholder(&self, style: Style) -> Value {
        self.to_block(style).unwrap_or_else(
            |_| serde_json::json!({"type": "text", "text": self.placeholder_text()}),
        )
    }
}

/// A canonical §1B part that is not text.
fn is_media_value(v: &Value) -> bool {
    is_part_value(v) && v.get("type").and_then(Value::as_str) != Some("text")
}

/// True for an object that is a canonical §1B part (not a provider block
/// such as `image_url` or a `tool_result`).
pub fn is_part_value(v: &Value) -> bool {
    let Some(obj) = v.as_object() else {
        return false;
    };
    match obj.get("type").and_then(Value::as_str) {
        Some("text") => obj.get("text").is_some_and(Value::is_string),
        Some("image" | "file" | "audio") => obj.get("mimeType").is_some_and(Value::is_string),
        _ => false,
    }
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
        let placeholder = || serde_json::json!({"type": "text", "text": p.placeholder_text()});
        if let Some(limit) = self.max_part_bytes {
            if p.byte_len() as u64 > limit {
                if attached {
                    return Err(over_limit_message(p.byte_len(), limit));
                }
                return Ok(placeholder());
            }
        }
        match p.to_block(style) {
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
    messages.iter().any(|m| {
        m.get("parts").is_some()
            || m.get("content")
                .and_then(Value::as_array)
                .is_some_and(|blocks| {
                    blocks
                        .iter()
                        .any(|b| b.get("parts").is_some() || is_media_value(b))
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
/// wire, never in the transcript.
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
        if role == Some("tool") {
            let mut msg = obj.clone();
            msg.remove("parts");
            msg.remove("name");
            let parts = obj
                .get("parts")
                .and_then(Value::as_array)
                .map(Vec::as_slice);
            let parts = parts.unwrap_or_default();
            let is_text = |p: &&Value| p.get("type").and_then(Value::as_str) == Some("text");
            if parts.iter().any(|p| is_text(&p)) {
                let mut content = vec![text_value(obj.get("content"))];
                for p in parts.iter().filter(is_text) {
                    content.push(opts.block_of(p, style, false)?);
                }
                msg.insert("content".into(), Value::Array(content));
            }
            for p in parts.iter().filter(|p| !is_text(p)) {
                let label = format!(
                    "Output of tool {} ({}):",
                    shown(obj.get("name")),
                    shown(obj.get("tool_call_id"))
                );
                moved.push(serde_json::json!({"type": "text", "text": label}));
                moved.push(opts.block_of(p, style, false)?);
            }
            out.push(Value::Object(msg));
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
                    let mut nb = b.as_object().cloned().unwrap_or_default();
                    nb.remove("parts");
                    let mut content = vec![text_value(b.get("content"))];
                    for p in parts {
                        content.push(opts.block_of(p, style, false)?);
                    }
                    nb.insert("content".into(), Value::Array(content));
                    wired.push(Value::Object(nb));
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

/// `{"type":"text","text": <the string, or "">}`.
fn text_value(v: Option<&Value>) -> Value {
    let text = v.and_then(Value::as_str).unwrap_or_default();
    serde_json::json!({"type": "text", "text": text})
}

/// A value as the label shows it: a string as itself, absent as `None`.
fn shown(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "None".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn png() -> Part {
        Part::from_value(
            &json!({"type":"image","mimeType":"image/png","data":"iVBORw0KGgo=","name":"a.png"}),
        )
        .unwrap()
    }

    #[test]
    fn media_types_come_from_the_extension_table_only() {
        // content.py MEDIA_TYPES / test_multimodal.py's extension table checks.
        assert_eq!(
            media_type_of("x/shot.PNG"),
            Some(("image/png", PartKind::Image))
        );
        assert_eq!(
            media_type_of("a.jpeg"),
            Some(("image/jpeg", PartKind::Image))
        );
        assert_eq!(
            media_type_of("doc.pdf"),
            Some(("application/pdf", PartKind::File))
        );
        assert_eq!(media_type_of("s.wav"), Some(("audio/wav", PartKind::Audio)));
        assert_eq!(
            media_type_of("s.mp3"),
            Some(("audio/mpeg", PartKind::Audio))
        );
        assert_eq!(media_type_of("notes.txt"), None);
        assert_eq!(media_type_of("README"), None);
        assert_eq!(media_type_of("dir.png/file"), None);
        assert_eq!(media_type_of(".png"), None);
        assert_eq!(media_type_of("photo.svg"), None);
    }

    #[test]
    fn decoded_length_is_read_off_the_padding() {
        for raw in [&b""[..], b"a", b"ab", b"abc", b"abcd", &[0u8; 1000]] {
            assert_eq!(decoded_len(&encode_base64(raw)), raw.len());
        }
    }

    #[test]
    fn shape_rules_name_what_is_wrong() {
        let err = |v: Value| Part::from_value(&v).unwrap_err();
        assert_eq!(err(json!({"type":"text"})), "a text part needs text");
        assert_eq!(
            err(json!({"type":"video","mimeType":"v"})),
            "unknown content part type \"video\""
        );
        assert_eq!(
            err(json!({"type":"image","data":"AA=="})),
            "a image part needs a mimeType"
        );
        assert!(err(
            json!({"type":"image","mimeType":"image/png","data":"AA==","url":"https://x/a.png"})
        )
        .contains("both data and url"));
        assert!(err(json!({"type":"file","mimeType":"application/pdf"}))
            .contains("neither data nor url"));
        assert!(
            err(json!({"type":"file","mimeType":"application/pdf","data":3}))
                .contains("\"data\" must be a string")
        );
        assert!(err(json!("x")).contains("must be an object"));
    }

    #[test]
    fn the_canonical_object_carries_only_what_the_part_has() {
        assert_eq!(
            png().to_value().to_string(),
            r#"{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo=","name":"a.png"}"#
        );
        let url = Part::from_value(
            &json!({"type":"file","mimeType":"application/pdf","url":"https://h/d.pdf"}),
        )
        .unwrap();
        assert_eq!(
            url.to_value(),
            json!({"type":"file","mimeType":"application/pdf","url":"https://h/d.pdf"})
        );
        assert!(is_part_value(&png().to_value()));
        assert!(!is_part_value(
            &json!({"type":"image_url","image_url":{"url":"x"}})
        ));
        assert!(!is_part_value(&json!({"type":"tool_result","content":"x"})));
    }

    #[test]
    fn blocks_per_style_follow_the_allow_list() {
        // content.py encode_part; test_multimodal.py's per-style block shapes.
        let p = png();
        assert_eq!(
            p.to_block(Style::OpenAi).unwrap(),
            json!({"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}})
        );
        assert_eq!(
            p.to_block(Style::Anthropic).unwrap(),
            json!({"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}})
        );
        let pdf = Part::from_value(
            &json!({"type":"file","mimeType":"application/pdf","data":"JVBERg==","name":"r.pdf"}),
        )
        .unwrap();
        assert_eq!(
            pdf.to_block(Style::OpenAi).unwrap(),
            json!({"type":"file","file":{"filename":"r.pdf","file_data":"data:application/pdf;base64,JVBERg=="}})
        );
        assert_eq!(pdf.to_block(Style::Anthropic).unwrap()["type"], "document");
        let linked = Part::from_value(
            &json!({"type":"file","mimeType":"application/pdf","url":"https://h/d.pdf"}),
        )
        .unwrap();
        assert_eq!(
            linked.to_block(Style::Anthropic).unwrap(),
            json!({"type":"document","source":{"type":"url","url":"https://h/d.pdf"}})
        );
        // OpenAI chat has no URL form for a file.
        assert!(linked.to_block(Style::OpenAi).is_err());
        let mp3 = Part::from_value(&json!({"type":"audio","mimeType":"audio/mpeg","data":"SUQz"}))
            .unwrap();
        assert_eq!(
            mp3.to_block(Style::OpenAi).unwrap(),
            json!({"type":"input_audio","input_audio":{"data":"SUQz","format":"mp3"}})
        );
        let refusal = mp3.to_block(Style::Anthropic).unwrap_err();
        assert_eq!(
            refusal.to_string(),
            "no \"anthropic\" block shape for a audio part (audio/mpeg)"
        );
        assert_eq!(
            mp3.to_block_or_placeholder(Style::Anthropic),
            json!({"type":"text","text":"[unsupported audio part (audio/mpeg, 3 bytes)]"})
        );
        let ogg = Part::from_value(&json!({"type":"audio","mimeType":"audio/ogg","data":"AA=="}))
            .unwrap();
        assert!(ogg.to_block(Style::OpenAi).is_err());
    }

    #[test]
    fn a_part_described_in_words() {
        assert_eq!(png().describe(), "image (image/png, 8 bytes)");
        let url = Part::from_value(
            &json!({"type":"image","mimeType":"image/gif","url":"https://h/a.gif"}),
        )
        .unwrap();
        assert_eq!(url.describe(), "image (image/gif, 0 bytes)");
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
