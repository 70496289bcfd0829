//! The loop of SPEC §8 with the suspension rule of §10: call the provider,
//! run the tool calls (concurrently, results in call order), feed the
//! results back, until an answer without tool calls, a halt, or `maxTurns`.

use super::callbacks::{
    bad_reply, callback_error, with_stop, Callbacks, HostFn, RunData, RunStop, Slot,
};
use super::metrics::MetricEvent;
use super::observe::{Event, Observer};
use super::outcome::{RunOutcome, RunStatus, Settled};
use super::progress::ProgressEvents;
use super::provider::Exchange;
use super::shape::{self, Body, Call, Fed, Usage};
use super::stream;
use super::Client;
use crate::cancel::CancelToken;
use crate::error::{Error, ErrorCode, Result};
use crate::provider::failover::{Leg, Served};
use crate::provider::http::{self, default_verdict, FailedAttempt, Verdict};
use crate::provider::Style;
use crate::tool::{ExecContext, ToolResult};
use crate::toolkit::Toolkit;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Instant;

/// One run in progress.
pub(crate) struct Run<'a> {
    pub client: &'a Client,
    pub toolkit: &'a Toolkit,
    pub callbacks: Arc<Callbacks>,
    pub cancel: &'a CancelToken,
    pub deadline: Option<Instant>,
    pub data: RunData,
    pub system: String,
    pub messages: Vec<Value>,
    /// The toolkit's declarations (shared with its other runs until a
    /// `beforeLLM` hook replaces them).
    pub tools: Arc<Vec<Value>>,
    /// The calls run so far, in order: the RunResult's `toolCalls`.
    pub tool_calls: Vec<Settled>,
    pub turns: u32,
    pub usage: Usage,
    /// SPEC §8 Streaming: provider turns are streamed and the run's events
    /// go to the `onEvent` slot.
    pub streaming: bool,
    pub observer: Option<Arc<dyn Observer>>,
    pub started: Instant,
    /// The upstream of a client with `upstreams` that answered the last
    /// turn (or is being tried).
    pub served: Option<Served>,
    /// While a streamed run's tools run: their MCP progress, as
    /// `tool_progress` events (see `super::progress`).
    pub progress: Option<ProgressEvents>,
}

/// What a tool phase came to: the settled calls to feed back, in call order,
/// and the Request the run halts on, if any.
pub(crate) struct Phase {
    pub settled: Vec<Settled>,
    pub halt: Option<Value>,
}

/// `metadata.pending` when it is a Request (an object).
pub(crate) fn pending_of(r: &ToolResult) -> Option<&Value> {
    r.metadata
        .as_ref()?
        .get("pending")
        .filter(|p| p.is_object())
}

fn prompt_of(request: &Value) -> String {
    match request.get("prompt") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

fn result_json(r: &ToolResult) -> Value {
    r.to_json()
}

fn ms_since(t: Instant) -> u64 {
    u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)
}

impl Run<'_> {
    pub fn emit<'e>(&self, event: impl FnOnce() -> Event<'e>) {
        if let Some(o) = &self.observer {
            o.event(&event());
        }
    }

    /// Reports how the run ended.
    pub fn report(&self, outcome: &Result<RunOutcome>) {
        let ms = ms_since(self.started);
        match outcome {
            Ok(result) => self.emit(|| Event::Done { result, ms }),
            Err(error) => self.emit(|| Event::Failed { error, ms }),
        }
    }

    fn style(&self) -> Style {
        self.client.config.style
    }

    fn model(&self) -> &str {
        self.served
            .as_ref()
            .map_or(&self.client.config.model, |s| &s.model)
    }

    /// Cancelled, or past the deadline: the error the run ends with.
    pub fn check_abort(&self) -> Result<()> {
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(self.timed_out());
        }
        Ok(())
    }

    fn timed_out(&self) -> Error {
        Error::new(
            ErrorCode::Timeout,
            format!(
                "the run did not finish within timeoutMs ({} ms)",
                self.client.config.timeout_ms.unwrap_or(0)
            ),
        )
    }

    /// Calls a slot, if set. A failure is `callback_error` naming the slot —
    /// or `cancelled` when the run was cancelled meanwhile (a host callback
    /// typically fails because it saw the cancellation).
    fn call(&self, slot: Slot, event: impl FnOnce() -> Value) -> Result<Option<Value>> {
        let Some(f) = self.callbacks.get(slot) else {
            return Ok(None);
        };
        self.invoke(slot, f, &event())
    }

    fn invoke(&self, slot: Slot, f: &HostFn, event: &Value) -> Result<Option<Value>> {
        let stop = RunStop {
            cancel: self.cancel.clone(),
            deadline: self.deadline,
        };
        let outcome = with_stop(stop, || f(event, self.data));
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        // A callback that failed past the deadline (a boundary that stopped
        // waiting for it fails it so) ends the run as the deadline would.
        if outcome.is_err() && self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(self.timed_out());
        }
        match outcome {
            Ok(Some(Value::Null)) | Ok(None) => Ok(None),
            Ok(Some(v)) => Ok(Some(v)),
            Err(message) => Err(callback_error(slot, &message)),
        }
    }

    /// The LLM turns from `turn` on, until the run ends.
    pub fn drive(&mut self, mut turn: u32) -> Result<RunOutcome> {
        loop {
            if turn >= self.client.max_turns {
                let text = shape::text_at_limit(self.style(), &self.messages);
                return Ok(self.finish(text, RunStatus::Incomplete));
            }
            self.check_abort()?;
            let t0 = Instant::now();
            let answer = self.llm_turn(turn);
            self.emit(|| Event::Llm {
                model: self.model(),
                turn,
                ms: ms_since(t0),
                raw: answer.as_ref().ok().map(|(raw, _)| raw),
            });
            let (raw, counted) = answer?;
            self.usage.add_usage(counted);
            let usage = self.usage;
            self.emit(|| Event::Usage { usage });
            if self.callbacks.get(Slot::AfterLlm).is_some() {
                let model = self.model().to_string();
                self.call(
                    Slot::AfterLlm,
                    || json!({"response": raw, "model": model, "turn": turn}),
                )?;
            }
            self.turns += 1;
            let (message, calls, text) = shape::take_turn(self.style(), raw);
            if calls.len() > stream::MAX_TOOL_CALLS {
                // Refused before any of them runs.
                return Err(stream::too_many_calls(calls.len()));
            }
            shape::append_turn(&mut self.messages, message);
            if let Some(text) = text {
                return Ok(self.finish(text, RunStatus::Done));
            }
            for c in &calls {
                self.emit(|| Event::ToolCall {
                    id: &c.id,
                    name: &c.name,
                    args: &c.args,
                });
            }
            let phase = self.tool_phase(calls, turn)?;
            if let Some(request) = self.feed(phase) {
                return Ok(self.halted(request));
            }
            turn += 1;
        }
    }

    /// SPEC §8 `beforeLLM`: the hook may replace the transcript and the tools
    /// for the rest of the run.
    pub(super) fn before_llm(&mut self, turn: u32) -> Result<()> {
        if self.callbacks.get(Slot::BeforeLlm).is_none() {
            return Ok(());
        }
        let event = json!({
            "messages": self.messages,
            "tools": *self.tools,
            "model": self.model(),
            "turn": turn,
        });
        let Some(reply) = self.call(Slot::BeforeLlm, || event)? else {
            return Ok(());
        };
        let Value::Object(mut reply) = reply else {
            return Err(bad_reply(
                Slot::BeforeLlm,
                "an object {messages?, tools?}",
                &reply,
            ));
        };
        for (key, slot) in [("messages", 0), ("tools", 1)] {
            match reply.remove(key) {
                None | Some(Value::Null) => {}
                Some(Value::Array(list)) if slot == 0 => self.messages = list,
                Some(Value::Array(list)) => self.tools = Arc::new(list),
                Some(other) => {
                    return Err(bad_reply(
                        Slot::BeforeLlm,
                        &format!("{key} as an array"),
                        &other,
                    ))
                }
            }
        }
        Ok(())
    }

    /// SPEC §8 Gap 1: the body after `requestParams`, through the client's
    /// `bodyTransform` (its reply the body to send; no reply: unchanged).
    /// `None` without the slot, so that the body goes out as it is built.
    fn body_transform(&self, body: &Body<'_>) -> Result<Option<Value>> {
        if self.callbacks.get(Slot::BodyTransform).is_none() {
            return Ok(None);
        }
        let original = body.to_value();
        match self.call(Slot::BodyTransform, || original.clone())? {
            None => Ok(Some(original)),
            Some(v @ Value::Object(_)) => Ok(Some(v)),
            Some(other) => Err(bad_reply(
                Slot::BodyTransform,
                "the body as a JSON object",
                &other,
            )),
        }
    }

    /// SPEC §8 Gap 2: the client's `httpClient` as the provider call's
    /// transport. The event is `{method: "POST", url, headers, body,
    /// stream}` (`body` the request's JSON text); the reply `{status,
    /// headers?, body}` (`body` the answer's text, the whole SSE text for a
    /// stream, or JSON, which is sent on as its text).
    fn http_client(&self) -> Option<http::Transport> {
        let f = self.callbacks.get(Slot::HttpClient)?.clone();
        let stop = RunStop {
            cancel: self.cancel.clone(),
            deadline: self.deadline,
        };
        let data = self.data;
        Some(http::Transport(Arc::new(
            move |req: &http::TransportRequest<'_>| {
                let headers: Map<String, Value> = req
                    .headers
                    .iter()
                    .map(|(k, v)| {
                        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
                        (k.as_str().to_string(), Value::String(v))
                    })
                    .collect();
                let event = json!({
                    "method": "POST",
                    "url": req.url,
                    "headers": headers,
                    "body": String::from_utf8_lossy(req.body),
                    "stream": req.stream,
                });
                let reply = with_stop(stop.clone(), || f(&event, data))
                    .map_err(|m| callback_error(Slot::HttpClient, &m))?;
                transport_reply(reply)
            },
        )))
    }

    /// One provider round trip, with `onError` consulted on each failure;
    /// through one upstream (`leg`) of a client with `upstreams`. The answer
    /// comes back with the usage it counts, read once for the `llm` metric
    /// and the run's sum.
    pub(super) fn complete(&self, turn: u32, leg: Option<&Leg<'_>>) -> Result<(Value, Usage)> {
        let params = &self.client.config.request_params;
        // §8A: a transcript holding content parts goes out with them as the
        // style's blocks; one without parts goes out as it is.
        let wired;
        // Gemini results carry their media as parts already
        // (shape::gemini_parts); responses results carry text only.
        let messages: &[Value] = if matches!(self.style(), Style::OpenAi | Style::Anthropic)
            && crate::provider::blocks::transcript_has_parts(&self.messages)
        {
            wired = crate::provider::blocks::wire_messages(
                self.style(),
                &self.messages,
                &Default::default(),
            )
            .map_err(|e| Error::new(ErrorCode::InvalidArgument, format!("content part: {e}")))?;
            &wired
        } else {
            &self.messages
        };
        let body = Body {
            style: self.style(),
            model: self.model(),
            system: &self.system,
            messages,
            tools: &self.tools,
            params,
            stream: self.streaming,
        };
        let on_error = self.callbacks.get(Slot::OnError).cloned();
        let mut classify = |info: &FailedAttempt| -> Result<Verdict> {
            let Some(f) = &on_error else {
                return Ok(default_verdict(info));
            };
            let mut event = Map::new();
            if let Some(s) = info.status {
                event.insert("status".into(), json!(s));
            }
            event.insert("error".into(), json!(info.error));
            event.insert("attempt".into(), json!(info.attempt));
            event.insert("retryable".into(), json!(info.retryable));
            match self.invoke(Slot::OnError, f, &Value::Object(event))? {
                None => Ok(default_verdict(info)),
                Some(Value::String(v)) if v == "retry" => Ok(Verdict::Retry),
                Some(Value::String(v)) if v == "fail" => Ok(Verdict::Fail),
                Some(other) => Err(bad_reply(Slot::OnError, "\"retry\" or \"fail\"", &other)),
            }
        };
        let mut classify_leg = |info: &FailedAttempt| match leg {
            Some(leg) => leg.classify(info, &mut classify),
            None => classify(info),
        };
        let started = Instant::now();
        let mut event_failed = None;
        let mut on_text = |delta: &str| {
            if let Some(leg) = leg {
                leg.commit();
            }
            if event_failed.is_none() {
                event_failed = self.event(|| json!({"type": "text", "delta": delta})).err();
            }
        };
        let transformed = self.body_transform(&body)?;
        let transport = self.http_client();
        let exchange = Exchange {
            body: &body,
            transformed,
            transport,
            turn,
            deadline: leg.map_or(self.deadline, |l| l.deadline),
            cancel: self.cancel,
            classify: &mut classify_leg,
            on_text: if self.streaming {
                Some(&mut on_text)
            } else {
                None
            },
            data: self.data,
        };
        let outcome = match leg {
            Some(leg) => super::provider::complete_at(leg.config, exchange, &|| leg.commit()),
            None => self.client.provider.complete(exchange),
        };
        let mut tokens = Usage::default();
        if let Ok(raw) = &outcome {
            tokens.add(self.style(), raw);
        }
        self.metric(&MetricEvent::Llm {
            model: self.model(),
            ok: outcome.is_ok(),
            ms: started.elapsed().as_secs_f64() * 1000.0,
            prompt_tokens: tokens.prompt,
            completion_tokens: tokens.completion,
        });
        if let Some(e) = event_failed {
            return Err(e);
        }
        match outcome {
            Err(e) if e.code == ErrorCode::Timeout && self.deadline.is_some() => {
                Err(self.timed_out())
            }
            other => other.map(|raw| (raw, tokens)),
        }
    }

    /// Runs the calls of one turn (concurrently when there are several),
    /// then resolves their suspensions in call order (SPEC §10).
    pub fn tool_phase(&mut self, calls: Vec<Call>, turn: u32) -> Result<Phase> {
        for c in &calls {
            self.event(
                || json!({"type": "tool_call", "id": c.id, "name": c.name, "args": c.args}),
            )?;
        }
        self.progress = self.progress_events();
        let executed = self.execute_all(calls, turn);
        // Every progress of these calls is out before their results.
        if let Some(progress) = self.progress.take() {
            progress.finish();
        }
        let executed = executed?;
        self.check_abort()?;
        let phase = self.resolve(executed, turn)?;
        // A halted turn's last result is the halt's placeholder, not a
        // result: its `pending` event was the news.
        let real = phase.settled.len() - usize::from(phase.halt.is_some());
        for s in &phase.settled[..real] {
            self.event(|| {
                json!({"type": "tool_result", "id": s.call.id, "name": s.call.name,
                       "output": s.result.output, "isError": s.result.is_error})
            })?;
        }
        Ok(phase)
    }

    /// The `tool_progress` events of a tool phase, on a streamed run with
    /// an `onEvent`.
    fn progress_events(&self) -> Option<ProgressEvents> {
        if !self.streaming {
            return None;
        }
        let on_event = self.callbacks.get(Slot::OnEvent)?.clone();
        let stop = RunStop {
            cancel: self.cancel.clone(),
            deadline: self.deadline,
        };
        Some(ProgressEvents::new(on_event, self.data, stop))
    }

    /// Sends a stream event to the `onEvent` slot, on a streamed run.
    pub fn event(&self, event: impl FnOnce() -> Value) -> Result<()> {
        if !self.streaming {
            return Ok(());
        }
        self.call(Slot::OnEvent, event).map(|_| ())
    }

    /// Records a metric event and hands it to `onMetric`, if set; a failing
    /// `onMetric` never fails the run.
    pub fn metric(&self, event: &MetricEvent) {
        self.client.observe(&self.callbacks, self.data, event);
    }

    /// The `tool` metric of one execution (SPEC §8; a suspension is
    /// `pending`, never an error, §10).
    fn tool_metric(&self, name: &str, took: std::time::Duration, result: &ToolResult) {
        let source = self
            .toolkit
            .source_of(name)
            .map_or("custom", crate::tool::Source::as_str);
        let pending = pending_of(result).is_some();
        self.metric(&MetricEvent::Tool {
            tool: name,
            source,
            is_error: result.is_error && !pending,
            pending,
            ms: took.as_secs_f64() * 1000.0,
        });
    }

    fn execute_all(&self, calls: Vec<Call>, turn: u32) -> Result<Vec<Settled>> {
        if calls.len() <= 1 {
            return calls
                .into_iter()
                .map(|c| self.execute_one(c, turn))
                .collect();
        }
        let calls = match self.execute_together(calls) {
            Ok(settled) => return Ok(settled),
            Err(calls) => calls,
        };
        let run: &Self = self;
        run_bounded(calls, tool_workers(), |c| run.execute_one(c, turn))
            .into_iter()
            .collect()
    }

    /// The calls of a turn at once on this thread, when no tool hook is set
    /// and every call is to a tool that runs as a future (MCP tools; see
    /// [`Toolkit::execute_concurrently`]): the same results, metrics and
    /// timings as [`Run::execute_one`] on each, without a thread per call.
    /// The calls back when that cannot be done.
    fn execute_together(&self, calls: Vec<Call>) -> std::result::Result<Vec<Settled>, Vec<Call>> {
        // (One context for all the calls: no relay of each call's progress.)
        if self.callbacks.get(Slot::BeforeTool).is_some()
            || self.callbacks.get(Slot::AfterTool).is_some()
            || self.progress.is_some()
        {
            return Err(calls);
        }
        let started = Instant::now();
        let pairs: Vec<(&str, &Value)> = calls.iter().map(|c| (c.name.as_str(), &c.args)).collect();
        let Some(results) = self
            .toolkit
            .execute_concurrently(&pairs, &self.tool_ctx(None))
        else {
            return Err(calls);
        };
        drop(pairs);
        Ok(calls
            .into_iter()
            .zip(results)
            .map(|(call, (result, ready))| {
                let took = ready.saturating_duration_since(started);
                self.tool_metric(&call.name, took, &result);
                let ms = if self.observer.is_some() {
                    u64::try_from(took.as_millis()).unwrap_or(u64::MAX)
                } else {
                    0
                };
                Settled { call, result, ms }
            })
            .collect())
    }

    /// One call through `beforeTool` (short-circuit or rewrite), the tool,
    /// and `afterTool` (skipped on a suspension).
    fn execute_one(&self, call: Call, turn: u32) -> Result<Settled> {
        let mut call = call;
        let started = Instant::now();
        let before = self.call(
            Slot::BeforeTool,
            || json!({"name": call.name, "args": call.args, "id": call.id, "turn": turn}),
        )?;
        if let Some(reply) = before {
            let Value::Object(mut reply) = reply else {
                return Err(bad_reply(
                    Slot::BeforeTool,
                    "an object {result} or {args}",
                    &reply,
                ));
            };
            match reply.remove("result") {
                None | Some(Value::Null) => {}
                Some(r) => {
                    let result = ToolResult::from_json(&r).ok_or_else(|| {
                        bad_reply(
                            Slot::BeforeTool,
                            "result as a ToolResult {output, isError?, metadata?}",
                            &r,
                        )
                    })?;
                    self.tool_metric(&call.name, started.elapsed(), &result);
                    return Ok(Settled {
                        call,
                        result,
                        ms: 0,
                    });
                }
            }
            match reply.remove("args") {
                None | Some(Value::Null) => {}
                Some(a) => call.args = a,
            }
        }
        let t0 = self.observer.as_ref().map(|_| Instant::now());
        let mut ctx = self.tool_ctx(None);
        if let Some(progress) = &self.progress {
            ctx.relay = Some(progress.relay(&call.id, &call.name));
        }
        let result = self.toolkit.execute_borrowed(&call.name, &call.args, &ctx);
        self.tool_metric(&call.name, started.elapsed(), &result);
        let ms = t0.map_or(0, ms_since);
        let result = if pending_of(&result).is_some() {
            result
        } else {
            self.after_tool(&call, result, turn)?
        };
        Ok(Settled { call, result, ms })
    }

    /// SPEC §8 `afterTool`: the hook may replace the result.
    fn after_tool(&self, call: &Call, result: ToolResult, turn: u32) -> Result<ToolResult> {
        let reply = self.call(Slot::AfterTool, || {
            json!({"name": call.name, "args": call.args, "result": result_json(&result),
                   "id": call.id, "turn": turn})
        })?;
        let Some(reply) = reply else {
            return Ok(result);
        };
        match reply.get("result") {
            None | Some(Value::Null) => Ok(result),
            Some(r) => ToolResult::from_json(r).ok_or_else(|| {
                bad_reply(
                    Slot::AfterTool,
                    "{result: {output, isError?, metadata?}}",
                    &reply,
                )
            }),
        }
    }

    /// The §10 loop rule over a turn's results, in call order. Without a
    /// `waitFor` the first suspension halts the turn: its placeholder is the
    /// Request's prompt, and the calls after it are left out. A relay
    /// call's Request is given its call id; when the halt is one, it carries
    /// every relay call of the turn (the addendum; [`crate::relay_tool`]).
    fn resolve(&self, executed: Vec<Settled>, turn: u32) -> Result<Phase> {
        let mut settled = Vec::with_capacity(executed.len());
        let mut executed = executed.into_iter();
        while let Some(mut s) = executed.next() {
            let Some(mut request) = pending_of(&s.result).cloned() else {
                settled.push(s);
                continue;
            };
            crate::relay_tool::stamp(&mut request, &s.call.id);
            if self.callbacks.get(Slot::WaitFor).is_none() && crate::relay_tool::is_relay(&request)
            {
                for later in executed.as_slice() {
                    if let Some(p) = pending_of(&later.result) {
                        let mut p = p.clone();
                        crate::relay_tool::stamp(&mut p, &later.call.id);
                        crate::relay_tool::merge(&mut request, &p);
                    }
                }
            }
            self.event(|| json!({"type": "pending", "request": request}))?;
            self.emit(|| Event::Pending { request: &request });
            match self.callbacks.get(Slot::WaitFor) {
                None => {
                    s.result = ToolResult::error(prompt_of(&request));
                    settled.push(s);
                    return Ok(Phase {
                        settled,
                        halt: Some(request),
                    });
                }
                Some(f) => {
                    let answer = self.wait_for(f, &request)?;
                    s.result = self.answered(&s.call, &request, answer, turn)?;
                    settled.push(s);
                }
            }
        }
        Ok(Phase {
            settled,
            halt: None,
        })
    }

    /// Asks the host's `waitFor` and checks its Answer: `ok` a boolean, `id`
    /// the Request's (filled in when left out).
    fn wait_for(&self, f: &HostFn, request: &Value) -> Result<Value> {
        let reply = self.invoke(Slot::WaitFor, f, request)?;
        let answer = reply.ok_or_else(|| {
            callback_error(Slot::WaitFor, "it set no Answer {id, ok, data?, reason?}")
        })?;
        let checked = crate::answer::check_against(answer, request).map_err(|(why, got)| {
            bad_reply(
                Slot::WaitFor,
                &format!("an Answer {{id, ok, data?, reason?}} ({why})"),
                &got,
            )
        })?;
        self.check_abort()?;
        Ok(checked)
    }

    /// The result a resolved suspension feeds back: `ok` re-runs the same
    /// call once with `ctx.answer` (a second suspension is `unresolved`);
    /// not `ok` is `declined/expired`.
    pub fn answered(
        &self,
        call: &Call,
        request: &Value,
        answer: Value,
        turn: u32,
    ) -> Result<ToolResult> {
        let prompt = prompt_of(request);
        if answer.get("ok") != Some(&Value::Bool(true)) {
            return Ok(ToolResult::error(format!("declined/expired: {prompt}")));
        }
        let ctx = self.tool_ctx(Some(answer));
        let started = Instant::now();
        let retried = self.toolkit.execute(&call.name, call.args.clone(), &ctx);
        self.tool_metric(&call.name, started.elapsed(), &retried);
        let retried = self.after_tool(call, retried, turn)?;
        if pending_of(&retried).is_some() {
            return Ok(ToolResult::error(format!("unresolved: {prompt}")));
        }
        Ok(retried)
    }

    /// The execute context of a tool call of this run: the run's cancel
    /// token, and what is left of its deadline, so a cancelled or timed-out
    /// run stops the tools that can be interrupted (docs/hostile.md, the host
    /// boundary) instead of waiting for them.
    fn tool_ctx(&self, answer: Option<Value>) -> ExecContext {
        let left = self.deadline.map(|d| {
            u64::try_from(d.saturating_duration_since(Instant::now()).as_millis())
                .unwrap_or(u64::MAX)
        });
        ExecContext {
            timeout_ms: left,
            answer,
            deadline: self.deadline,
            cancel: Some(self.cancel.clone()),
            relay: None,
            run_tag: self.client.run_tag,
        }
    }

    /// Appends a phase's results to the transcript and to `toolCalls`; gives
    /// the Request the run halts on, if any.
    pub fn feed(&mut self, phase: Phase) -> Option<Value> {
        let fed: Vec<Fed> = phase
            .settled
            .iter()
            .map(|s| Fed {
                id: &s.call.id,
                name: &s.call.name,
                output: &s.result.output,
                is_error: s.result.is_error,
                parts: &s.result.parts,
            })
            .collect();
        let messages = shape::result_messages(self.style(), &fed);
        self.messages.extend(messages);
        for s in &phase.settled {
            self.emit(|| Event::ToolResult {
                id: &s.call.id,
                name: &s.call.name,
                result: &s.result,
                ms: s.ms,
            });
        }
        self.tool_calls
            .extend(phase.settled.into_iter().map(Settled::kept));
        phase.halt
    }

    /// Ends a run halted on `request`.
    pub fn halted(&mut self, request: Value) -> RunOutcome {
        self.finish(prompt_of(&request), RunStatus::Pending(request))
    }

    /// How the run ended: the RunResult's parts, moved out of the run.
    fn finish(&mut self, text: String, status: RunStatus) -> RunOutcome {
        RunOutcome {
            text,
            messages: std::mem::take(&mut self.messages),
            calls: std::mem::take(&mut self.tool_calls),
            turns: self.turns,
            usage: self.usage,
            model: self.model().to_string(),
            upstream: self.served.as_ref().map(Served::to_json),
            status,
        }
    }
}

pub(crate) fn cancelled() -> Error {
    Error::new(ErrorCode::Cancelled, "the run was cancelled")
}

/// The most tool calls of one turn that run at once: four per core, at least
/// eight, at most 256. A turn that asks for more queues the rest in call
/// order; an unbounded thread per call let 10,000 calls of one answer start
/// 8,000 threads (issue 25 M1).
pub fn tool_workers() -> usize {
    static WORKERS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *WORKERS.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        cores.saturating_mul(4).clamp(8, 256)
    })
}

/// Runs `work` on every item with at most `workers` at once (this thread is
/// one of them), items taken in order, and gives the outcomes in item order.
/// A panic in `work` becomes that item's internal error; the other items
/// still run.
fn run_bounded<C: Send, T: Send>(
    items: Vec<C>,
    workers: usize,
    work: impl Fn(C) -> Result<T> + Sync,
) -> Vec<Result<T>> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Mutex, PoisonError};
    let n = items.len();
    let items: Vec<Mutex<Option<C>>> = items.into_iter().map(|c| Mutex::new(Some(c))).collect();
    // One lock for every outcome, held only to put one in: a lock per
    // slot would make each slot the larger, and four of a turn's calls
    // past 1 KiB, a request from glibc's large bins that first
    // consolidates its fast bins. The slots become the answer in place.
    let outcomes: Mutex<Vec<Option<Result<T>>>> = Mutex::new((0..n).map(|_| None).collect());
    let next = AtomicUsize::new(0);
    let worker = || loop {
        let i = next.fetch_add(1, Ordering::Relaxed);
        if i >= n {
            break;
        }
        let item = items[i]
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(item) = item else { continue };
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(item)))
            .unwrap_or_else(|panic| {
                Err(Error::new(
                    ErrorCode::Internal,
                    format!(
                        "internal error: a tool call panicked: {}",
                        crate::toolkit::panic_message(&panic)
                    ),
                ))
            });
        outcomes.lock().unwrap_or_else(PoisonError::into_inner)[i] = Some(outcome);
    };
    // The other workers on the pooled threads (no thread start per call
    // once the pool has threads waiting), this thread the first of them.
    // Helpers are handed over as they are needed: this thread hands the
    // first before it starts, to start only after `limits::HELPER_DELAY`
    // (or as soon as this thread blocks on the library's I/O), and each
    // helper, as it starts, hands two more at once while calls are still
    // waiting to be taken. Calls that end sooner are all done here, one
    // after another, and no thread is woken for them (the helper is taken
    // back, not waited for); calls that block reach every worker within
    // the delay and a few thread wake-ups (the doubling's depth: 8 for 256
    // workers).
    let helpers = workers.clamp(1, n.max(1)) - 1;
    let handed = AtomicUsize::new(0);
    struct Crew<'w, W> {
        worker: &'w W,
        next: &'w AtomicUsize,
        handed: &'w AtomicUsize,
        helpers: usize,
        n: usize,
    }
    fn hand<'scope, 'env, W: Fn() + Sync>(
        scope: &'scope crate::sys::scope::Scope<'scope, 'env>,
        crew: &'scope Crew<'scope, W>,
        later: bool,
    ) {
        if crew.next.load(Ordering::Relaxed) >= crew.n
            || crew.handed.fetch_add(1, Ordering::Relaxed) >= crew.helpers
        {
            return;
        }
        let helper = Box::new(move || {
            hand(scope, crew, false);
            hand(scope, crew, false);
            (crew.worker)();
        });
        if later {
            scope.spawn_later(helper);
        } else {
            scope.spawn(helper);
        }
    }
    let crew = Crew {
        worker: &worker,
        next: &next,
        handed: &handed,
        helpers,
        n,
    };
    crate::runtime::run_scoped("tn-tools", |scope| {
        hand(scope, &crew, true);
        worker();
    });
    outcomes
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
        .into_iter()
        .map(|slot| {
            slot.unwrap_or_else(|| {
                Err(Error::new(
                    ErrorCode::Internal,
                    "internal error: a tool call was never run".to_string(),
                ))
            })
        })
        .collect()
}

/// A `httpClient` reply as the answer to one attempt.
fn transport_reply(reply: Option<Value>) -> Result<http::TransportReply> {
    let bad = |why: &str| {
        callback_error(
            Slot::HttpClient,
            &format!("its reply {why}; expected {{status, headers?, body}}"),
        )
    };
    let Some(Value::Object(mut reply)) = reply else {
        return Err(bad("is not an object"));
    };
    let status = reply
        .get("status")
        .and_then(Value::as_u64)
        .and_then(|s| u16::try_from(s).ok())
        .filter(|s| (100..=599).contains(s))
        .ok_or_else(|| bad("has no status from 100 to 599"))?;
    let retry_after = reply
        .get("headers")
        .and_then(Value::as_object)
        .and_then(|h| {
            h.iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("retry-after"))
                .and_then(|(_, v)| v.as_str().map(str::to_string))
        });
    let body = match reply.remove("body") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::String(s)) => s.into_bytes(),
        Some(other) => serde_json::to_vec(&other).unwrap_or_default(),
    };
    Ok(http::TransportReply {
        status,
        retry_after,
        body: body.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Turn 0 calls `img`; any later turn answers "seen".
    struct CallsImg;

    impl super::super::Provider for CallsImg {
        fn complete(&self, ex: Exchange<'_>) -> Result<Value> {
            let later = ex.body.to_value()["messages"]
                .as_array()
                .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
            let message = if later {
                json!({"role": "assistant", "content": "seen"})
            } else {
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c0",
                       "type": "function", "function": {"name": "img", "arguments": "{}"}}]})
            };
            Ok(json!({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}))
        }

        fn streams(&self) -> bool {
            false
        }
    }

    #[test]
    fn a_run_holds_a_result_s_media_once_in_its_transcript_not_again_in_its_calls() {
        let toolkit = Toolkit::build_from_json(r#"{"builtins":false}"#).expect("toolkit");
        let data = "QUJD".repeat(1 << 18);
        let bytes = data.clone();
        toolkit.register(crate::native::native_tool(
            "img",
            "an image",
            None,
            Arc::new(move |_: &Value, _: &ExecContext| {
                let mut r = ToolResult::ok("one image");
                r.parts = vec![crate::parts::Part {
                    kind: crate::parts::PartKind::Image,
                    text: None,
                    mime_type: Some("image/png".into()),
                    data: Some(bytes.clone()),
                    url: None,
                    name: None,
                }]
                .into_boxed_slice();
                r
            }),
        ));
        let config = crate::translate::ClientConfig::from_json(
            &json!({"baseUrl": "http://model.invalid", "style": "openai", "model": "m"}),
        )
        .expect("config");
        let client = Client::with_provider(config, 4, Arc::new(CallsImg));
        let request = super::super::RunRequest {
            prompt: "look".into(),
            history: Vec::new(),
        };
        let outcome = client
            .run_outcome(&toolkit, &request, &CancelToken::new(), Default::default())
            .expect("run");
        assert_eq!(
            (outcome.text.as_str(), outcome.tool_call_count()),
            ("seen", 1)
        );
        assert!(
            outcome.calls[0].result.parts.is_empty(),
            "held again in toolCalls"
        );
        let transcript = serde_json::to_string(&outcome.messages).expect("json");
        assert!(transcript.contains(&data), "the image is in the transcript");
        let result = outcome.into_json();
        assert_eq!(
            result["toolCalls"],
            json!([{"name": "img", "args": {}, "output": "one image", "isError": false,
                    "metadata": null}])
        );
    }

    /// Clients assembled from one configuration and one metrics registry:
    /// each runs with the callbacks it was given from its first run, and
    /// both runs land in the one registry.
    #[test]
    fn assembled_clients_share_their_configuration_and_metrics_and_start_with_their_callbacks() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let toolkit = Toolkit::build_from_json(r#"{"builtins":false}"#).expect("toolkit");
        toolkit.register(crate::native::native_tool(
            "img",
            "an image",
            None,
            Arc::new(|_: &Value, _: &ExecContext| ToolResult::ok("none")),
        ));
        let config = Arc::new(
            crate::translate::ClientConfig::from_json(
                &json!({"baseUrl": "http://model.invalid", "style": "openai", "model": "m-shared"}),
            )
            .expect("config"),
        );
        let registry = Arc::new(super::super::metrics::Registry::new());
        let seen = Arc::new(AtomicUsize::new(0));
        let client = |tag: usize| {
            let seen = Arc::clone(&seen);
            let mut callbacks = Callbacks::default();
            let hook: crate::client::HostFn = Arc::new(move |_: &Value, _| {
                seen.fetch_add(tag, Ordering::SeqCst);
                Ok(None)
            });
            callbacks.set(Slot::BeforeTool, Some(hook));
            Client::assembled(
                Arc::clone(&config),
                4,
                Arc::new(CallsImg),
                callbacks,
                Arc::clone(&registry),
            )
        };
        let (one, two) = (client(1), client(10));
        assert!(Arc::ptr_eq(&one.config, &two.config));
        let request = super::super::RunRequest {
            prompt: "look".into(),
            history: Vec::new(),
        };
        for c in [&one, &two] {
            let outcome = c
                .run_outcome(&toolkit, &request, &CancelToken::new(), Default::default())
                .expect("run");
            assert_eq!(outcome.text, "seen");
        }
        assert_eq!(
            seen.load(Ordering::SeqCst),
            11,
            "each client's own hook, once"
        );
        let text = registry.render();
        assert!(
            text.contains("model=\"m-shared\",status=\"ok\"} 4"),
            "both clients' LLM calls in the one registry:\n{text}"
        );
    }

    #[test]
    fn bounded_work_keeps_item_order() {
        let out = run_bounded((0..50).collect(), 3, |i: u32| Ok(i * 2));
        let values: Vec<u32> = out.into_iter().map(|r| r.expect("ok")).collect();
        assert_eq!(values, (0..50).map(|i| i * 2).collect::<Vec<u32>>());
        assert!(run_bounded(Vec::<u32>::new(), 4, Ok).is_empty());
    }

    #[test]
    fn bounded_work_that_blocks_fans_out_to_every_worker() {
        // Each item waits until all eight run at once (or 20 s pass): done
        // only if the helpers, each handed over by one already started,
        // reach all eight.
        use std::sync::{Condvar, Mutex};
        use std::time::{Duration, Instant};
        let met = (Mutex::new(0usize), Condvar::new());
        let out = run_bounded((0..8).collect(), 8, |i: u32| {
            let (count, cv) = &met;
            let mut n = count.lock().expect("lock");
            *n += 1;
            cv.notify_all();
            let until = Instant::now() + Duration::from_secs(20);
            while *n < 8 && Instant::now() < until {
                n = cv
                    .wait_timeout(n, Duration::from_millis(50))
                    .expect("wait")
                    .0;
            }
            Ok((i, *n))
        });
        for (i, r) in out.into_iter().enumerate() {
            let (item, seen) = r.expect("ok");
            assert_eq!(item as usize, i);
            assert_eq!(seen, 8, "item {i} never saw all eight running at once");
        }
    }

    #[test]
    fn a_blocked_first_call_gets_a_helper_for_the_next_after_the_delay() {
        // The first call waits (not on the library's I/O) until the second
        // has started: only a helper, started after `HELPER_DELAY`, can
        // start it.
        use std::sync::{Condvar, Mutex};
        use std::time::{Duration, Instant};
        let begun = Instant::now();
        let second: (Mutex<Option<Instant>>, Condvar) = (Mutex::new(None), Condvar::new());
        let me = std::thread::current().id();
        let out = run_bounded(vec![0u32, 1], 2, |i| {
            let (at, cv) = &second;
            if i == 1 {
                *at.lock().expect("lock") = Some(Instant::now());
                cv.notify_all();
                return Ok((std::thread::current().id(), None));
            }
            let mut seen = at.lock().expect("lock");
            let until = Instant::now() + Duration::from_secs(20);
            while seen.is_none() && Instant::now() < until {
                seen = cv
                    .wait_timeout(seen, Duration::from_millis(50))
                    .expect("wait")
                    .0;
            }
            Ok((std::thread::current().id(), *seen))
        });
        let (first_on, seen) = out[0].as_ref().expect("first");
        let (second_on, _) = out[1].as_ref().expect("second");
        assert_eq!(*first_on, me);
        assert_ne!(*second_on, me, "the second call ran on a helper");
        let started = seen.expect("the second call started while the first waited");
        assert!(
            started - begun >= crate::limits::HELPER_DELAY,
            "the helper started {:?} after the calls began",
            started - begun
        );
    }

    #[test]
    fn a_panicking_item_becomes_its_own_error_and_the_rest_still_run() {
        // One worker: the panic happens on this thread, which `quietly`
        // silences.
        let out = crate::quiet_panic::quietly(|| {
            run_bounded((0..5).collect(), 1, |i: u32| {
                if i == 2 {
                    panic!("item two");
                }
                Ok(i)
            })
        });
        assert_eq!(out.len(), 5);
        for (i, r) in out.iter().enumerate() {
            match r {
                Ok(v) => assert_eq!(*v as usize, i),
                Err(e) => {
                    assert_eq!(i, 2);
                    assert!(e.message.contains("item two"), "{}", e.message);
                }
            }
        }
    }
}
