//! Reading an answer by its shape, for the types whose server is anyone's (`template`,
//! `raw`), as AIPerf reads them: the JMESPath `response_field` first when given, else
//! embeddings (`data[*].embedding` of `"object": "embedding"` items, `embeddings`,
//! `embedding`), then rankings (`rankings`, `results`), then text (`text`, `content`,
//! `response`, `output`, `result` — a string, or a list of strings joined — then
//! `choices[0].text`, `.message.content`, `.delta.content`). A body that is not JSON is
//! text. Text is output; embeddings and rankings are an answer without tokens.

use serde_json::Value;

use super::Reading;
use crate::backend::api::openai::events::{shown, ChunkFacts};
use crate::backend::{Exchange, Failure, Malformation};

/// What an answer was found to hold.
#[derive(Debug, PartialEq)]
enum Found {
    Text(String),
    /// Embeddings or rankings: data without tokens.
    Data,
    Nothing,
}

/// Reads one event or whole answer. With a field, a miss is nothing unless `fallback`
/// (raw's way: then by shape); `whole` makes nothing a bad response.
pub fn read(
    data: &[u8],
    reading: &Reading,
    fallback: bool,
    whole: bool,
    ex: &mut Exchange<'_>,
) -> Result<ChunkFacts, Failure> {
    let found = match serde_json::from_slice::<Value>(data) {
        Err(_) => match String::from_utf8_lossy(data).trim() {
            "" => Found::Nothing,
            text => Found::Text(text.to_string()),
        },
        Ok(json) => match (&reading.field, fallback) {
            (Some(field), fallback) => match by_field(field, &json) {
                Found::Nothing if fallback => by_shape(&json),
                found => found,
            },
            (None, _) => by_shape(&json),
        },
    };
    match found {
        Found::Text(text) => {
            ex.content(&text);
            Ok(ChunkFacts {
                content: true,
                output: true,
                ..ChunkFacts::default()
            })
        }
        Found::Data => Ok(ChunkFacts::default()),
        Found::Nothing if whole => Err(Failure::bad(
            Malformation::MissingOutput,
            match &reading.field {
                Some(field) => format!(
                    "the answer has nothing at response_field {}: {}",
                    field.as_str(),
                    shown(data)
                ),
                None => format!(
                    "the answer holds no text, embeddings or rankings where they are looked for: {}",
                    shown(data)
                ),
            },
        )),
        Found::Nothing => Ok(ChunkFacts::default()),
    }
}

fn by_field(field: &jmespath::Expression<'static>, json: &Value) -> Found {
    let Ok(found) = field.search(json) else {
        return Found::Nothing;
    };
    let Ok(value) = serde_json::to_value(&*found) else {
        return Found::Nothing;
    };
    if !truthy(&value) {
        return Found::Nothing;
    }
    convert(&value)
}

/// Python's truth of a value (an empty string, list or object, 0, false and null are not).
fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// A found value: a list of numbers or of lists is embeddings, of objects rankings, a
/// string text.
fn convert(value: &Value) -> Found {
    match value {
        Value::String(text) => Found::Text(text.clone()),
        Value::Array(items) => match items.first() {
            Some(Value::Number(_) | Value::Array(_) | Value::Object(_)) => Found::Data,
            _ => Found::Nothing,
        },
        _ => Found::Nothing,
    }
}

fn by_shape(json: &Value) -> Found {
    let Value::Object(object) = json else {
        return convert(json);
    };
    let data = object.get("data").and_then(Value::as_array);
    let embedding_items = data.is_some_and(|d| {
        d.first()
            .and_then(|i| i.get("object"))
            .and_then(Value::as_str)
            == Some("embedding")
    });
    let listed = |key: &str| {
        object
            .get(key)
            .and_then(Value::as_array)
            .is_some_and(|l| !l.is_empty())
    };
    if embedding_items || listed("embeddings") || listed("embedding") {
        return Found::Data;
    }
    if ["rankings", "results"]
        .iter()
        .any(|k| object.get(*k).is_some_and(Value::is_array))
    {
        return Found::Data;
    }
    for key in ["text", "content", "response", "output", "result"] {
        match object.get(key) {
            Some(Value::String(text)) => return Found::Text(text.clone()),
            Some(Value::Array(items))
                if !items.is_empty() && items.iter().all(Value::is_string) =>
            {
                return Found::Text(items.iter().filter_map(Value::as_str).collect());
            }
            _ => {}
        }
    }
    let choice = object.get("choices").and_then(|c| c.get(0));
    let texts = [
        choice.and_then(|c| c.get("text")),
        choice
            .and_then(|c| c.get("message"))
            .and_then(|m| m.get("content")),
        choice
            .and_then(|c| c.get("delta"))
            .and_then(|d| d.get("content")),
    ];
    texts
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find(|t| !t.is_empty())
        .map_or(Found::Nothing, |t| Found::Text(t.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn shapes_are_found_in_aiperfs_order() {
        let text = |t: &str| Found::Text(t.into());
        let cases = [
            (
                json!({"data": [{"object": "embedding", "embedding": [0.1]}]}),
                Found::Data,
            ),
            (json!({"embeddings": [[0.1, 0.2]]}), Found::Data),
            (json!({"results": [], "text": "x"}), Found::Data),
            (json!({"text": ["a", "b"]}), text("ab")),
            (json!({"content": "c", "response": "r"}), text("c")),
            (json!({"choices": [{"delta": {"content": "d"}}]}), text("d")),
            (
                json!({"choices": [{"message": {"content": "m"}}]}),
                text("m"),
            ),
            (json!([{"index": 0, "score": 0.5}]), Found::Data),
            (json!({"usage": {"prompt_tokens": 3}}), Found::Nothing),
        ];
        for (answer, expected) in cases {
            assert_eq!(by_shape(&answer), expected, "{answer}");
        }
        let field = jmespath::compile("outputs[0].generated").unwrap();
        let answer = json!({"outputs": [{"generated": "g"}], "text": "t"});
        assert_eq!(by_field(&field, &answer), text("g"));
        assert_eq!(by_field(&field, &json!({"outputs": []})), Found::Nothing);
    }
}
