//! SPEC §8 Conversation memory: where `ask` (and `stream` with an `id`)
//! keeps each conversation's transcript between calls. The default store is
//! in memory, per client, for the life of the process; a host supplies its
//! own (a file, a database) as a `get`/`save` pair.

use crate::error::{Error, ErrorCode, Result};
use crate::json::type_name;
use crate::store::{Kind, MemoryStore, Store};
use serde_json::Value;
use std::sync::Arc;

/// A conversation store: `get(id)` gives the transcript saved under `id`
/// (none before the first save), `save(id, messages)` replaces it. Called
/// from any thread; the loop holds no lock of its own while it calls.
pub trait ConversationStore: Send + Sync {
    fn get(&self, id: &str) -> Result<Option<Vec<Value>>>;
    fn save(&self, id: &str, messages: &[Value]) -> Result<()>;
}

/// The default store: the conversation records of a memory store
/// ([`crate::store::MemoryStore`]), copied in and out so that no caller
/// shares one with the store. Like an A2A agent's memory store it keeps
/// at most [`MEMORY_STORE_CONVERSATIONS`](crate::limits::MEMORY_STORE_CONVERSATIONS)
/// conversations: past it the one saved longest ago is forgotten, and an
/// `ask` under its id starts anew. A host that must keep every
/// conversation names a durable store (`sqlite:`, `postgres://`, its own).
#[derive(Default)]
pub struct InMemoryStore(MemoryStore);

impl InMemoryStore {
    pub fn new() -> Self {
        InMemoryStore::default()
    }
}

impl ConversationStore for InMemoryStore {
    fn get(&self, id: &str) -> Result<Option<Vec<Value>>> {
        Ok(match self.0.get(Kind::Conversation, id) {
            Ok(Some(Value::Array(messages))) => Some(messages),
            _ => None,
        })
    }

    fn save(&self, id: &str, messages: &[Value]) -> Result<()> {
        self.0
            .put(Kind::Conversation, id, Value::Array(messages.to_vec()));
        Ok(())
    }
}

/// A host callback of the store: the event JSON in, an optional reply out,
/// a failure as its message.
pub type StoreFn = dyn Fn(&Value) -> std::result::Result<Option<Value>, String> + Send + Sync;

/// A store the host keeps through its `storeGet` and `storeSave` slots.
/// `storeGet` is called with `{"id"}` and answers the messages array (or
/// null, or nothing, for an id never saved); `storeSave` is called with
/// `{"id", "messages"}`.
pub struct HostStore<G, S> {
    pub get: G,
    pub save: S,
}

fn store_error(slot: &str, message: &str) -> Error {
    Error::new(
        ErrorCode::CallbackError,
        format!("the {slot} callback failed: {message}"),
    )
}

impl<G, S> ConversationStore for HostStore<G, S>
where
    G: Fn(&Value) -> std::result::Result<Option<Value>, String> + Send + Sync,
    S: Fn(&Value) -> std::result::Result<Option<Value>, String> + Send + Sync,
{
    fn get(&self, id: &str) -> Result<Option<Vec<Value>>> {
        let reply =
            (self.get)(&serde_json::json!({"id": id})).map_err(|m| store_error("storeGet", &m))?;
        match reply {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(list)) => {
                if let Some((i, m)) = list.iter().enumerate().find(|(_, m)| !m.is_object()) {
                    return Err(Error::new(
                        ErrorCode::CallbackError,
                        format!(
                            "the storeGet callback answered a transcript whose message {i} is {}, not an object",
                            type_name(m)
                        ),
                    ));
                }
                Ok(Some(list))
            }
            Some(other) => Err(Error::new(
                ErrorCode::CallbackError,
                format!(
                    "the storeGet callback answered {}; expected the messages array or null",
                    type_name(&other)
                ),
            )),
        }
    }

    fn save(&self, id: &str, messages: &[Value]) -> Result<()> {
        (self.save)(&serde_json::json!({"id": id, "messages": messages}))
            .map(|_| ())
            .map_err(|m| store_error("storeSave", &m))
    }
}

/// The conversations of a client whose `store` key names a durable store
/// (`file:<dir>`, `sqlite:<path>`, `postgres://…`, `host:<name>`): each
/// transcript is a record of kind `conversation` under its id, the records
/// an A2A agent on the same store keeps for its `contextId`s.
pub struct DurableStore(pub Arc<dyn Store>);

impl DurableStore {
    /// A failure of the store, naming it: a host store's as a callback
    /// error, any other's as an internal one.
    fn failed(&self, message: String) -> Error {
        let code = if self.0.selector().starts_with("host:") {
            ErrorCode::CallbackError
        } else {
            ErrorCode::Internal
        };
        Error::new(code, message)
    }
}

impl ConversationStore for DurableStore {
    fn get(&self, id: &str) -> Result<Option<Vec<Value>>> {
        match self
            .0
            .get(Kind::Conversation, id)
            .map_err(|m| self.failed(m))?
        {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Array(list)) if list.iter().all(Value::is_object) => Ok(Some(list)),
            Some(other) => Err(self.failed(format!(
                "store \"{}\": the conversation {} is {}, not an array of messages",
                self.0.selector(),
                serde_json::to_string(id).unwrap_or_default(),
                type_name(&other)
            ))),
        }
    }

    fn save(&self, id: &str, messages: &[Value]) -> Result<()> {
        self.0
            .save(Kind::Conversation, id, &Value::Array(messages.to_vec()))
            .map_err(|m| self.failed(m))
    }
}

/// A client's `store` key: `None` (or `"memory"`) keeps the client's own
/// in-memory store; any other selector ([`crate::store::resolve`]) names
/// the durable store `ask` keeps its conversations in.
pub fn configured(v: Option<&Value>) -> Result<Option<Arc<dyn Store>>> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() || s == "memory" => Ok(None),
        Some(Value::String(s)) => crate::store::resolve(Some(s)).map(Some),
        Some(other) => Err(Error::invalid_config(format!(
            "client.store must be a store selector string (\"memory\", \"file:<dir>\", \"sqlite:<path>\", \"postgres://…\", \"host:<name>\"), got {}",
            type_name(other)
        ))),
    }
}

/// Checks a conversation id: a string that is not empty.
pub fn check_id(v: &Value) -> Result<Option<String>> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) if !s.is_empty() => Ok(Some(s.clone())),
        Value::String(_) => Err(Error::invalid_argument(
            "id: a conversation id must not be empty",
        )),
        other => Err(Error::invalid_argument(format!(
            "id must be a string, got {}",
            type_name(other)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::HashMap;
    use std::sync::Mutex;

    #[test]
    fn the_in_memory_store_forgets_the_conversation_saved_longest_ago_past_its_cap() {
        let store = InMemoryStore::new();
        let n = crate::limits::MEMORY_STORE_CONVERSATIONS;
        let say = |i: usize| vec![json!({"role": "user", "content": format!("m{i}")})];
        for i in 0..n {
            store.save(&format!("c{i}"), &say(i)).expect("save");
        }
        // Saved again: now the latest, so c1 goes first.
        store.save("c0", &say(0)).expect("save");
        store.save(&format!("c{n}"), &say(n)).expect("save");
        assert_eq!(store.get("c1").expect("get"), None);
        assert_eq!(store.get("c0").expect("get"), Some(say(0)));
        assert_eq!(store.get(&format!("c{n}")).expect("get"), Some(say(n)));
        assert_eq!(store.get("c2").expect("get"), Some(say(2)));
    }

    #[test]
    fn the_in_memory_store_keeps_each_id_apart_and_copies() {
        let store = InMemoryStore::new();
        assert_eq!(store.get("a").expect("get"), None);
        let mut messages = vec![json!({"role": "user", "content": "hi"})];
        store.save("a", &messages).expect("save");
        messages.push(json!({"role": "assistant", "content": "changed after"}));
        assert_eq!(
            store.get("a").expect("get"),
            Some(vec![json!({"role": "user", "content": "hi"})])
        );
        assert_eq!(store.get("b").expect("get"), None);
        store.save("a", &messages).expect("save");
        assert_eq!(store.get("a").expect("get").map(|m| m.len()), Some(2));
    }

    #[test]
    fn a_host_store_round_trips_through_its_two_callbacks() {
        let kept: Arc<Mutex<HashMap<String, Value>>> = Arc::default();
        let (g, s) = (Arc::clone(&kept), Arc::clone(&kept));
        let store = HostStore {
            get: move |e: &Value| {
                let id = e["id"].as_str().unwrap_or_default().to_string();
                Ok(g.lock().expect("lock").get(&id).cloned())
            },
            save: move |e: &Value| {
                let id = e["id"].as_str().unwrap_or_default().to_string();
                s.lock().expect("lock").insert(id, e["messages"].clone());
                Ok(None)
            },
        };
        assert_eq!(store.get("t").expect("get"), None);
        store
            .save("t", &[json!({"role": "user", "content": "x"})])
            .expect("save");
        assert_eq!(
            store.get("t").expect("get"),
            Some(vec![json!({"role": "user", "content": "x"})])
        );
    }

    #[test]
    fn a_host_store_that_fails_or_answers_the_wrong_shape_is_a_named_error() {
        let store = HostStore {
            get: |_: &Value| Ok(Some(json!({"not": "a list"}))),
            save: |_: &Value| Err("disk full".to_string()),
        };
        let e = store.get("t").expect_err("wrong shape");
        assert_eq!(e.code, ErrorCode::CallbackError);
        assert!(e.message.contains("storeGet") && e.message.contains("an object"));
        let e = store.save("t", &[]).expect_err("failing save");
        assert!(e.message.contains("storeSave") && e.message.contains("disk full"));
        let store = HostStore {
            get: |_: &Value| Ok(Some(json!([1]))),
            save: |_: &Value| Ok(None),
        };
        let e = store.get("t").expect_err("a message that is not an object");
        assert!(e.message.contains("message 0"), "{}", e.message);
    }

    #[test]
    fn ids_are_non_empty_strings() {
        assert_eq!(check_id(&json!("a")).expect("id"), Some("a".into()));
        assert_eq!(check_id(&Value::Null).expect("no id"), None);
        assert!(check_id(&json!("")).is_err());
        assert!(check_id(&json!(3)).is_err());
    }

    #[test]
    fn a_durable_store_keeps_conversations_as_records_and_names_itself_when_wrong() {
        assert!(configured(None).expect("none").is_none());
        assert!(configured(Some(&json!("memory")))
            .expect("memory")
            .is_none());
        let e = configured(Some(&json!(3))).err().expect("not a selector");
        assert_eq!(e.code, ErrorCode::InvalidConfig);
        assert!(
            e.message.starts_with("client.store must be"),
            "{}",
            e.message
        );
        let e = configured(Some(&json!("redis://x")))
            .err()
            .expect("unknown");
        assert!(e.message.contains("unknown A2A store"), "{}", e.message);
        let records: Arc<dyn Store> = Arc::new(crate::store::MemoryStore::default());
        let store = DurableStore(Arc::clone(&records));
        assert_eq!(store.get("c1").expect("get"), None);
        let messages = vec![json!({"role": "user", "content": "hi"})];
        store.save("c1", &messages).expect("save");
        assert_eq!(
            records.get(Kind::Conversation, "c1"),
            Ok(Some(json!(messages)))
        );
        assert_eq!(store.get("c1").expect("get"), Some(messages));
        records
            .save(Kind::Conversation, "bad", &json!({"not": "a list"}))
            .expect("save");
        let e = store.get("bad").expect_err("wrong shape");
        assert_eq!(e.code, ErrorCode::Internal);
        assert!(
            e.message
                .contains("store \"memory\": the conversation \"bad\" is an object"),
            "{}",
            e.message
        );
    }
}
