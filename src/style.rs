//! The one name of a provider dialect. A client picks one (`client.style`,
//! CONTRACT §6), `tn_render` writes tool declarations for three of them, and
//! a content part (§8A) is mapped to the blocks of one. It sits on the
//! bottom floor so that every room that needs the name (`parts`, `adapter`,
//! `provider` and everything above) reads the same enum;
//! [`crate::provider::Style`] is this type.

/// A provider's wire style.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Style {
    OpenAi,
    Anthropic,
    Gemini,
    /// OpenAI's Responses API (`/responses`).
    Responses,
}

impl Style {
    /// Every style, in the order a client's error message names them.
    pub const ALL: [Style; 4] = [
        Style::OpenAi,
        Style::Anthropic,
        Style::Gemini,
        Style::Responses,
    ];

    /// The style's name in a client's JSON (and in `tn_render`).
    pub fn name(self) -> &'static str {
        match self {
            Style::OpenAi => "openai",
            Style::Anthropic => "anthropic",
            Style::Gemini => "gemini",
            Style::Responses => "responses",
        }
    }

    /// The style a name stands for (`openai`, `anthropic`, `gemini` or
    /// `responses`, exactly).
    pub fn from_name(name: &str) -> Option<Style> {
        Style::ALL.into_iter().find(|s| s.name() == name)
    }
}

#[cfg(test)]
mod tests {
    use super::Style;

    #[test]
    fn names_read_back() {
        for s in Style::ALL {
            assert_eq!(Style::from_name(s.name()), Some(s));
        }
        assert_eq!(Style::from_name("OpenAI"), None);
        assert_eq!(Style::from_name(""), None);
    }
}
