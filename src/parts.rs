//! Content parts (SPEC §1B): the neutral [`Part`], its fixed media table
//! and the base64 helpers.
//!
//! A part is text, or media carried as bytes (standard padded base64) or as a
//! URL — never as a path, since a path means nothing once a transcript is
//! stored, replayed or sent across a process boundary. Media types come only
//! from the fixed extension table below: never sniffed from the bytes, never
//! looked up in the machine's mime database (which differs between hosts and
//! would make two ports disagree).
//!
//! A part's provider blocks (§8A) are the provider layer's:
//! `provider::blocks` holds the positive list (every (style, part type)
//! pair has a block shape in its dialect file or is refused by name) and
//! the transcript as the loop sends it.

use serde_json::{Map, Value};

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

/// A `data:` URL's media type and base64 payload (`data:image/png;base64,…`
/// → `("image/png", "…")`; no media type → `application/octet-stream`);
/// `None` for any other URL, and for a `data:` URL that is not base64.
pub fn data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let mime = meta.strip_suffix(";base64")?;
    Some((
        if mime.is_empty() {
            "application/octet-stream"
        } else {
            mime
        },
        data,
    ))
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

    /// The text block a part becomes where its style has no block for it
    /// (§8A): a `text` block holding [`Part::placeholder_text`].
    pub fn placeholder_block(&self) -> Value {
        serde_json::json!({"type": "text", "text": self.placeholder_text()})
    }
}

/// A canonical §1B part that is not text.
pub fn is_media_value(v: &Value) -> bool {
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

/// A small PNG image part, the fixture of the block tests here and in
/// `provider::blocks`.
#[cfg(test)]
pub(crate) fn png_fixture() -> Part {
    Part::from_value(&serde_json::json!({
        "type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo=", "name": "a.png"
    }))
    .expect("a valid part")
}

#[cfg(test)]
mod tests {
    use super::png_fixture as png;
    use super::*;
    use serde_json::json;

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
    fn a_part_described_in_words() {
        assert_eq!(png().describe(), "image (image/png, 8 bytes)");
        let url = Part::from_value(
            &json!({"type":"image","mimeType":"image/gif","url":"https://h/a.gif"}),
        )
        .unwrap();
        assert_eq!(url.describe(), "image (image/gif, 0 bytes)");
    }
}
