//! Ordered failover in the loop (issue 29): a turn of a client with
//! `upstreams` goes through [`crate::provider::failover::run`], `beforeLLM`
//! seen again for each upstream tried (with that upstream's model), each
//! upstream's own model sent. The transcript stays in the one style every
//! upstream of a looping client shares
//! ([`crate::provider::failover::check_one_style`]).

use super::run::Run;
use crate::error::Result;
use crate::provider::failover::{self, Served};
use crate::provider::turn::Usage;
use serde_json::Value;

impl Run<'_> {
    /// `beforeLLM` and the provider round trip of one turn, through the
    /// client's upstreams when it has some: the answer and what it counted.
    pub(super) fn llm_turn(&mut self, turn: u32) -> Result<(Value, Usage)> {
        let client = self.client;
        if client.config.upstreams.is_empty() || !client.provider.fails_over() {
            self.before_llm(turn)?;
            return self.complete(turn, None);
        }
        let (answer, served) = failover::run(&client.config, self.deadline, |leg| {
            self.served = Some(Served {
                index: leg.index,
                base_url: leg.config.base_url.clone(),
                model: leg.config.model.clone(),
                style: leg.config.style,
            });
            self.before_llm(turn)?;
            self.complete(turn, Some(leg))
        })?;
        self.served = served;
        Ok(answer)
    }
}
