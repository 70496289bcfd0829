//! The simplification experiment of issue 14: the Anthropic-style conversion
//! written the ordinary way, with typed serde structs over the borrowed input
//! (`#[serde(borrow)]`, `Cow<str>` where a string may hold escapes, `&RawValue`
//! for schemas and other pass-through values) and the bodies written by
//! serde_json. It does the work `translate/conversion` does for this bench's
//! workload (request -> provider body, provider answer -> OpenAI-shaped
//! result) and `benches/translate.rs` checks that it writes the same bytes
//! before timing it. It is a measurement, not a replacement: it reads only
//! the shapes the bench and the common vectors use (a field of another type
//! is an error here, where `src/translate` reads it the way every port does).

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Number, Value};
use std::borrow::Cow;
use std::fmt;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request<'a> {
    #[serde(borrow)]
    messages: Vec<Message<'a>>,
    #[serde(borrow, default)]
    tools: Vec<ToolIn<'a>>,
    #[serde(borrow, rename = "toolChoice")]
    tool_choice: Option<&'a RawValue>,
    #[serde(borrow)]
    system: Option<Cow<'a, str>>,
    #[serde(rename = "maxTokens")]
    max_tokens: Option<Number>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Content<'a>,
    #[serde(borrow, default)]
    tool_calls: Vec<CallIn<'a>>,
    #[serde(borrow)]
    tool_call_id: Option<Cow<'a, str>>,
}

/// A message's `content`: a string, an array of parts, or anything else
/// (which reads as no text).
#[derive(Default)]
enum Content<'a> {
    #[default]
    None,
    Text(Cow<'a, str>),
    /// The parts as given: their text is read from them, and a parts array
    /// with no text passes through as it came.
    Parts(Vec<&'a RawValue>),
}

#[derive(Deserialize)]
struct Part<'a> {
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Content<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Content<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("message content")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                Ok(Content::Text(Cow::Owned(s.to_owned())))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut parts = Vec::new();
                while let Some(p) = seq.next_element()? {
                    parts.push(p);
                }
                Ok(Content::Parts(parts))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                while map
                    .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                    .is_some()
                {}
                Ok(Content::None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Content::None)
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Content::None)
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Content::None)
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
                Ok(Content::None)
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Content::None)
            }
        }
        d.deserialize_any(V)
    }
}

impl Content<'_> {
    fn text(&self) -> Cow<'_, str> {
        match self {
            Content::Text(s) => Cow::Borrowed(s),
            Content::Parts(parts) => {
                let texts: Vec<Cow<str>> = parts
                    .iter()
                    .filter_map(|p| serde_json::from_str::<Part>(p.get()).ok()?.text)
                    .collect();
                match texts.len() {
                    0 => Cow::Borrowed(""),
                    _ => Cow::Owned(texts.concat()),
                }
            }
            Content::None => Cow::Borrowed(""),
        }
    }
}

#[derive(Deserialize)]
struct CallIn<'a> {
    #[serde(borrow, default)]
    id: Cow<'a, str>,
    #[serde(borrow)]
    function: Option<FunctionCall<'a>>,
}

#[derive(Deserialize)]
struct FunctionCall<'a> {
    #[serde(borrow, default)]
    name: Cow<'a, str>,
    #[serde(borrow)]
    arguments: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ToolIn<'a> {
    #[serde(borrow)]
    function: Option<FunctionDecl<'a>>,
}

#[derive(Deserialize)]
struct FunctionDecl<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    description: Option<Cow<'a, str>>,
    #[serde(borrow)]
    parameters: Option<&'a RawValue>,
}

// ---- the provider body ----------------------------------------------------

#[derive(Serialize)]
struct Body<'a> {
    model: &'a str,
    max_tokens: Number,
    messages: Vec<Turn<'a>>,
    #[serde(skip_serializing_if = "str::is_empty")]
    system: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<ToolOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_choice: Option<Value>,
}

#[derive(Serialize)]
struct Turn<'a> {
    role: &'static str,
    content: TurnContent<'a>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum TurnContent<'a> {
    Text(Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
    Parts(&'a [&'a RawValue]),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block<'a> {
    Text {
        text: Cow<'a, str>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Map<String, Value>,
    },
    ToolResult {
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<&'a str>,
        content: Cow<'a, str>,
    },
}

#[derive(Serialize)]
struct ToolOut<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a RawValue,
}

/// Tool-call arguments as an object: a string holding a JSON object, or an
/// object; anything else is `{}`.
fn args_object(raw: Option<&RawValue>) -> Map<String, Value> {
    let Some(raw) = raw else {
        return Map::new();
    };
    let text = raw.get();
    let object = match text.as_bytes().first() {
        Some(b'"') => serde_json::from_str::<Cow<str>>(text)
            .ok()
            .and_then(|s| serde_json::from_str::<Map<String, Value>>(s.trim()).ok()),
        Some(b'{') => serde_json::from_str::<Map<String, Value>>(text).ok(),
        _ => None,
    };
    object.unwrap_or_default()
}

fn tool_choice(raw: Option<&RawValue>) -> Option<Value> {
    let v: Value = serde_json::from_str(raw?.get()).ok()?;
    match &v {
        Value::String(s) if s == "required" || s == "any" => {
            Some(serde_json::json!({"type": "any"}))
        }
        Value::String(s) if s == "none" => Some(serde_json::json!({"type": "none"})),
        Value::Object(o) => {
            let name = o.get("function").and_then(|f| f.get("name"))?;
            if name.is_null() || name.as_str() == Some("") {
                return None;
            }
            Some(serde_json::json!({"type": "tool", "name": name}))
        }
        _ => None,
    }
}

const EMPTY_SCHEMA: &str = r#"{"type":"object","properties":{}}"#;

/// Request text in, Anthropic provider body out.
pub fn provider_body(request_text: &str, model: &str) -> serde_json::Result<Vec<u8>> {
    let request: Request = serde_json::from_str(request_text)?;
    let empty_schema: &RawValue = serde_json::from_str(EMPTY_SCHEMA)?;
    let mut messages = Vec::with_capacity(request.messages.len());
    let mut system: Vec<Cow<str>> = Vec::new();
    let mut pending: Vec<Block> = Vec::new();
    fn drain<'a>(pending: &mut Vec<Block<'a>>, messages: &mut Vec<Turn<'a>>) {
        if !pending.is_empty() {
            messages.push(Turn {
                role: "user",
                content: TurnContent::Blocks(std::mem::take(pending)),
            });
        }
    }
    for m in &request.messages {
        match m.role.as_deref().unwrap_or("") {
            "system" | "developer" => {
                drain(&mut pending, &mut messages);
                let text = m.content.text();
                if !text.is_empty() {
                    system.push(text);
                }
            }
            "tool" | "function" => pending.push(Block::ToolResult {
                tool_use_id: m.tool_call_id.as_deref().filter(|id| !id.is_empty()),
                content: m.content.text(),
            }),
            "assistant" => {
                drain(&mut pending, &mut messages);
                let mut blocks = Vec::new();
                let text = m.content.text();
                if !text.is_empty() {
                    blocks.push(Block::Text { text });
                }
                for call in &m.tool_calls {
                    let Some(f) = &call.function else { continue };
                    blocks.push(Block::ToolUse {
                        id: &call.id,
                        name: &f.name,
                        input: args_object(f.arguments),
                    });
                }
                if !blocks.is_empty() {
                    messages.push(Turn {
                        role: "assistant",
                        content: TurnContent::Blocks(blocks),
                    });
                }
            }
            _ => {
                drain(&mut pending, &mut messages);
                let text = m.content.text();
                if !text.is_empty() {
                    messages.push(Turn {
                        role: "user",
                        content: TurnContent::Text(text),
                    });
                } else if let Content::Parts(parts) = &m.content {
                    if !parts.is_empty() {
                        messages.push(Turn {
                            role: "user",
                            content: TurnContent::Parts(parts),
                        });
                    }
                }
            }
        }
    }
    drain(&mut pending, &mut messages);
    let joined = system.join("\n\n");
    let system_text = match request.system.as_deref() {
        Some(s) => s,
        None => &joined,
    };
    let tools = request
        .tools
        .iter()
        .filter_map(|t| {
            let f = t.function.as_ref()?;
            let name = f.name.as_deref().filter(|n| !n.is_empty())?;
            Some(ToolOut {
                name,
                description: f.description.as_deref().filter(|d| !d.is_empty()),
                input_schema: f
                    .parameters
                    .filter(|p| p.get().starts_with('{'))
                    .unwrap_or(empty_schema),
            })
        })
        .collect();
    let max_tokens = request
        .max_tokens
        .filter(|n| n.as_f64().is_some_and(|f| f > 0.0))
        .unwrap_or_else(|| Number::from(4096));
    let body = Body {
        model,
        max_tokens,
        messages,
        system: if system_text.trim().is_empty() {
            ""
        } else {
            system_text
        },
        tools,
        tool_choice: tool_choice(request.tool_choice),
    };
    let mut out = Vec::with_capacity(request_text.len() + 1024);
    serde_json::to_writer(&mut out, &body)?;
    Ok(out)
}

// ---- the provider's answer ------------------------------------------------

#[derive(Deserialize)]
struct Reply<'a> {
    #[serde(borrow, default)]
    content: Vec<BlockIn<'a>>,
    #[serde(borrow)]
    stop_reason: Option<Cow<'a, str>>,
    usage: Option<UsageIn>,
}

#[derive(Deserialize)]
struct BlockIn<'a> {
    #[serde(borrow, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow)]
    input: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct UsageIn {
    input_tokens: Option<Number>,
    output_tokens: Option<Number>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    text: String,
    tool_calls: Vec<CallOut<'a>>,
    finish_reason: &'static str,
    usage: Usage,
    model: &'a str,
    raw: &'a RawValue,
}

#[derive(Serialize)]
struct CallOut<'a> {
    id: &'a str,
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Usage {
    prompt_tokens: u64,
    completion_tokens: u64,
    total_tokens: u64,
}

fn tokens(n: &Option<Number>) -> u64 {
    match n {
        Some(n) => n.as_u64().unwrap_or_else(|| match n.as_f64() {
            Some(f) if f.is_finite() && f >= 0.0 => f as u64,
            _ => 0,
        }),
        None => 0,
    }
}

/// An Anthropic answer's text in, the OpenAI-shaped result out.
pub fn read_response(reply_text: &str, model: &str) -> serde_json::Result<Vec<u8>> {
    let reply: Reply = serde_json::from_str(reply_text)?;
    let raw: &RawValue = serde_json::from_str(reply_text)?;
    let of_type = |t: &'static str| {
        reply
            .content
            .iter()
            .filter(move |b| b.kind.as_deref() == Some(t))
    };
    let text: String = of_type("text").filter_map(|b| b.text.as_deref()).collect();
    let tool_calls: Vec<CallOut> = of_type("tool_use")
        .map(|b| CallOut {
            id: b.id.as_deref().unwrap_or(""),
            name: b.name.as_deref().unwrap_or(""),
            arguments: b
                .input
                .map(RawValue::get)
                .filter(|i| *i != "null")
                .unwrap_or("{}"),
        })
        .collect();
    let finish_reason = if !tool_calls.is_empty() {
        "tool_calls"
    } else {
        match reply.stop_reason.as_deref() {
            Some("max_tokens" | "length") => "length",
            Some("refusal" | "content_filter") => "content_filter",
            _ => "stop",
        }
    };
    let (p, c) = reply.usage.as_ref().map_or((0, 0), |u| {
        (tokens(&u.input_tokens), tokens(&u.output_tokens))
    });
    let answer = Answer {
        text,
        tool_calls,
        finish_reason,
        usage: Usage {
            prompt_tokens: p,
            completion_tokens: c,
            total_tokens: p.saturating_add(c),
        },
        model,
        raw,
    };
    let mut out = Vec::with_capacity(2 * reply_text.len() + 256);
    serde_json::to_writer(&mut out, &answer)?;
    Ok(out)
}
