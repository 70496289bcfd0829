//! The pure SPEC §11 helpers (what the translate_helpers vectors call by
//! name): reading OpenAI-shaped messages, tools and tool choices, and
//! writing them in Anthropic's shape. They live with their dialect (the
//! readers in `provider/openai.rs`, the Anthropic writers in
//! `provider/anthropic.rs`); this path stays.

pub use crate::provider::anthropic::{
    openai_messages_to_anthropic, openai_tool_choice_to_anthropic, openai_tools_to_anthropic,
    Converted,
};
pub use crate::provider::openai::{
    args_object, args_string, content_text, has_system_message, tool_calls_json, tool_calls_of,
    ToolCall,
};
pub use crate::provider::turn::{finish_reason_for, is_blank};
