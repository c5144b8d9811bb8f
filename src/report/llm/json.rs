//! A JSON value that keeps its keys in the order they were added. The exports of GenAI-Perf
//! and AIPerf list their metrics and each metric's statistics in a fixed order (`unit`,
//! `avg`, `p1` … `p99`, `min`, `max`, `std`) that readers diff and eyeball; `serde_json`'s
//! map sorts its keys (the crate is built without `preserve_order`, which would also reorder
//! the request bodies the OpenAI adapter sends), so the exports build this instead.

/// A JSON value whose objects keep their key order.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    UInt(u64),
    Float(f64),
    Str(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

/// An object from `(key, value)` pairs, in that order.
pub fn object<K: Into<String>>(pairs: impl IntoIterator<Item = (K, Json)>) -> Json {
    Json::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

impl Json {
    /// An object's value under `key` (the first, if several).
    pub fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The text with two-space indentation, as Python's `json.dumps(…, indent=2)` writes it.
    pub fn pretty(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, Some(0));
        out
    }

    /// The text without any whitespace, as perf_analyzer's rapidjson `Writer` writes it.
    pub fn compact(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, None);
        out
    }

    /// Appends the value; `indent` is the current depth when pretty-printing.
    fn write(&self, out: &mut String, indent: Option<usize>) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::UInt(n) => out.push_str(&n.to_string()),
            Json::Float(x) => out.push_str(&serde_json::Value::from(*x).to_string()),
            Json::Str(s) => out.push_str(&serde_json::Value::from(s.as_str()).to_string()),
            Json::Array(items) => {
                write_list(out, indent, ('[', ']'), items.iter(), |out, item, depth| {
                    item.write(out, depth)
                })
            }
            Json::Object(pairs) => write_list(
                out,
                indent,
                ('{', '}'),
                pairs.iter(),
                |out, (k, v), depth| {
                    out.push_str(&serde_json::Value::from(k.as_str()).to_string());
                    out.push_str(if depth.is_some() { ": " } else { ":" });
                    v.write(out, depth);
                },
            ),
        }
    }
}

/// Writes `[a,b]` / `{…}`, one item per line when pretty-printing; empty lists stay `[]`.
fn write_list<T>(
    out: &mut String,
    indent: Option<usize>,
    (open, close): (char, char),
    items: impl ExactSizeIterator<Item = T>,
    mut each: impl FnMut(&mut String, T, Option<usize>),
) {
    out.push(open);
    if items.len() == 0 {
        out.push(close);
        return;
    }
    let inner = indent.map(|d| d + 1);
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        new_line(out, inner);
        each(out, item, inner);
    }
    new_line(out, indent);
    out.push(close);
}

fn new_line(out: &mut String, depth: Option<usize>) {
    if let Some(depth) = depth {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    }
}

impl From<&serde_json::Value> for Json {
    /// A parsed value (its objects' keys in `serde_json`'s order, which is the order the
    /// OpenAI adapter sent them in, since it serializes the same map).
    fn from(value: &serde_json::Value) -> Json {
        use serde_json::Value;
        match value {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => match n.as_u64() {
                Some(u) => Json::UInt(u),
                None => Json::Float(n.as_f64().unwrap_or(f64::NAN)),
            },
            Value::String(s) => Json::Str(s.clone()),
            Value::Array(items) => Json::Array(items.iter().map(Json::from).collect()),
            Value::Object(map) => object(map.iter().map(|(k, v)| (k.clone(), Json::from(v)))),
        }
    }
}

impl From<f64> for Json {
    fn from(x: f64) -> Json {
        Json::Float(x)
    }
}

impl From<u64> for Json {
    fn from(n: u64) -> Json {
        Json::UInt(n)
    }
}

impl From<u32> for Json {
    fn from(n: u32) -> Json {
        Json::UInt(n as u64)
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Json {
        Json::Bool(b)
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::Str(s.to_string())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::Str(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_keep_their_order_and_python_indentation() {
        let value = object([
            ("unit", Json::from("ms")),
            ("avg", Json::from(1.5)),
            ("count", Json::from(20u64)),
            ("empty", Json::Array(vec![])),
            ("list", Json::Array(vec![Json::from(1u64), Json::Null])),
            ("nested", object([("a\"b", Json::from(true))])),
        ]);
        assert_eq!(
            value.pretty(),
            "{\n  \"unit\": \"ms\",\n  \"avg\": 1.5,\n  \"count\": 20,\n  \"empty\": [],\n  \"list\": [\n    1,\n    null\n  ],\n  \"nested\": {\n    \"a\\\"b\": true\n  }\n}"
        );
        assert_eq!(
            value.compact(),
            r#"{"unit":"ms","avg":1.5,"count":20,"empty":[],"list":[1,null],"nested":{"a\"b":true}}"#
        );
        assert_eq!(Json::from(20.0).compact(), "20.0");
        assert_eq!(Json::from(f64::NAN).compact(), "null");
    }

    #[test]
    fn parsed_values_convert_whole() {
        let parsed: serde_json::Value =
            serde_json::from_str(r#"{"model":"m","max_tokens":7,"t":0.5,"s":[true]}"#).unwrap();
        let json = Json::from(&parsed);
        let back: serde_json::Value = serde_json::from_str(&json.compact()).unwrap();
        assert_eq!(back, parsed);
    }
}
