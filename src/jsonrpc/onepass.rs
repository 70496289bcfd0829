//! JSON read in one pass, without a tree, for the plain codec
//! (`plain.rs`): values checked as a tree would check them, written back
//! compact as a tree would write them, keys borrowed from the text, and
//! structs read from an object only.
//!
//! serde_json builds a `Value` tree of whatever it reads; these read the
//! same text to the same verdict (what a tree refuses, they refuse) without
//! building one, which is what the fast paths beside rmcp save.

use serde_json::Value;
use std::borrow::Cow;

/// A field that is there (absent is `None` by `default`); an explicit
/// `null` fails the read, leaving such a request to rmcp.
pub fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// `params` that are there, read as [`object`].
pub fn present_object<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    object(d).map(Some)
}

/// A struct read from a JSON object only. A derived struct also reads
/// from an array, its fields in order (`["x", {}]` as a call of `x`),
/// which rmcp's parse takes for no message at all.
pub fn object<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    struct Object<T>(std::marker::PhantomData<T>);
    impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for Object<T> {
        type Value = T;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_map(Object(std::marker::PhantomData))
}

pub fn repeated<E: serde::de::Error>(key: &str) -> E {
    E::custom(format_args!("a repeated field `{key}`"))
}

/// A value read to its end and dropped. `IgnoredAny` skips a value without
/// reading it: a number out of range, a string that is not UTF-8 or holds
/// a lone surrogate, nesting past the parser's depth limit all pass. A
/// tree of the same value fails on each, and so rmcp's path drops such an
/// answer; with this the one-pass read fails on the same values, and the
/// answer goes the general way, where it is dropped alike.
pub struct Checked;

impl<'de> serde::Deserialize<'de> for Checked {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Checked)
    }
}

impl<'de> serde::de::Visitor<'de> for Checked {
    type Value = Checked;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_str<E>(self, _: &str) -> Result<Checked, E> {
        Ok(Checked)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Checked, A::Error> {
        while seq.next_element::<Checked>()?.is_some() {}
        Ok(Checked)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Checked, A::Error> {
        while map.next_key::<Checked>()?.is_some() {
            map.next_value::<Checked>()?;
        }
        Ok(Checked)
    }
}

/// A JSON value as the compact text `Value::to_string` gives it, written
/// while it is read (no tree built); a `null` reads as absent, as
/// `shape_call_result` takes it. An object with a repeated key fails the
/// read (a tree keeps the key's first place and its last value), so such an
/// answer is read the general way.
pub struct Compact(pub String);

impl<'de> serde::Deserialize<'de> for Compact {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut out = Vec::new();
        serde::de::DeserializeSeed::deserialize(Write(&mut out), d)?;
        // Only serde_json's writer wrote here: UTF-8.
        String::from_utf8(out)
            .map(Compact)
            .map_err(serde::de::Error::custom)
    }
}

/// Writes the value it reads into the buffer, compact.
struct Write<'o>(&'o mut Vec<u8>);

impl<'de> serde::de::DeserializeSeed<'de> for Write<'_> {
    type Value = ();
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Write<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }
    fn visit_bool<E>(self, v: bool) -> Result<(), E> {
        self.0.extend_from_slice(if v { b"true" } else { b"false" });
        Ok(())
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        serde_json::to_writer(&mut *self.0, &v).map_err(E::custom)
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        serde_json::to_writer(&mut *self.0, &v).map_err(E::custom)
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        // As a tree holds it (`Value::from` would make a non-finite one
        // null; the parser never yields one).
        serde_json::to_writer(&mut *self.0, &Value::from(v)).map_err(E::custom)
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        serde_json::to_writer(&mut *self.0, v).map_err(E::custom)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.0.push(b'[');
        let mut first = true;
        loop {
            let at = self.0.len();
            if !first {
                self.0.push(b',');
            }
            if seq.next_element_seed(Write(&mut *self.0))?.is_none() {
                self.0.truncate(at);
                break;
            }
            first = false;
        }
        self.0.push(b']');
        Ok(())
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.0.push(b'{');
        // The keys seen: a list while the object is small, a set after.
        let mut keys: Vec<Cow<'de, str>> = Vec::new();
        let mut many: Option<std::collections::HashSet<Cow<'de, str>>> = None;
        let mut first = true;
        while let Some(Key(key)) = map.next_key()? {
            let repeated = match &mut many {
                Some(set) => !set.insert(key.clone()),
                None if keys.contains(&key) => true,
                None => {
                    keys.push(key.clone());
                    if keys.len() > 16 {
                        many = Some(keys.drain(..).collect());
                    }
                    false
                }
            };
            if repeated {
                return Err(serde::de::Error::custom("a repeated key"));
            }
            if !first {
                self.0.push(b',');
            }
            first = false;
            serde_json::to_writer(&mut *self.0, key.as_ref()).map_err(serde::de::Error::custom)?;
            self.0.push(b':');
            map.next_value_seed(Write(&mut *self.0))?;
        }
        self.0.push(b'}');
        Ok(())
    }
}

/// An object key, borrowed from the line when it has no escapes.
pub struct Key<'de>(pub Cow<'de, str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Key<'de>, E> {
                Ok(Key(Cow::Owned(v.to_string())))
            }
        }
        d.deserialize_str(V)
    }
}
