//! The rerankers' wire formats of the `embeddings` kind: NVIDIA NIM's `POST /v1/ranking`
//! (`{"model", "query": {"text"}, "passages": [{"text"}]}` → `{"rankings": [{"index",
//! "logit"}]}`), Hugging Face TEI's `POST /rerank` (`{"query", "texts"}`, no model →
//! `[{"index", "score"}]`) and Cohere's `POST /v2/rerank` (`{"model", "query",
//! "documents"}` → `{"results": [{"index", "relevance_score"}]}`). Each passage's score
//! is drawn from the query and the passage (the same pair always scores the same), and the
//! answer lists the passages best first. A pair costs its words: the query's and the
//! passage's, as a cross-encoder reads them.

use serde_json::{json, Value};

/// Which reranker API a request came on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    Nim,
    Tei,
    Cohere,
}

impl Flavor {
    /// The flavor of a route, if it is one.
    pub(crate) fn of_path(path: &str) -> Option<Flavor> {
        match path {
            "/v1/ranking" => Some(Flavor::Nim),
            "/rerank" => Some(Flavor::Tei),
            "/v2/rerank" => Some(Flavor::Cohere),
            _ => None,
        }
    }
}

/// A rerank request: the model it names (TEI's names none), the query and the passages.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rerank {
    pub model: Option<String>,
    pub query: String,
    pub passages: Vec<String>,
}

impl Rerank {
    /// The words the model reads: each passage with the query.
    pub(crate) fn tokens(&self) -> u64 {
        let query = words(&self.query);
        self.passages.iter().map(|p| query + words(p)).sum()
    }
}

fn words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

/// Reads a request of the flavor; the error is one sentence for a 400.
pub(crate) fn read(flavor: Flavor, body: &Value) -> Result<Rerank, String> {
    let text = |v: Option<&Value>, what: &str| {
        v.and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("a rerank request needs {what} (a string)"))
    };
    let (query, list, field) = match flavor {
        Flavor::Nim => (
            text(body.pointer("/query/text"), "'query.text'")?,
            "passages",
            "text",
        ),
        Flavor::Tei => (text(body.get("query"), "'query'")?, "texts", ""),
        Flavor::Cohere => (text(body.get("query"), "'query'")?, "documents", ""),
    };
    let bad = || format!("a rerank request needs '{list}', a list of passages");
    let items = body.get(list).and_then(Value::as_array).ok_or_else(bad)?;
    let passages = items
        .iter()
        .map(|item| match field {
            "" => item
                .as_str()
                .or_else(|| item.get("text").and_then(Value::as_str)),
            field => item.get(field).and_then(Value::as_str),
        })
        .map(|p| p.map(str::to_string).ok_or_else(bad))
        .collect::<Result<Vec<_>, _>>()?;
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .map(str::to_string);
    if model.is_none() && flavor != Flavor::Tei {
        return Err("a rerank request needs 'model'".into());
    }
    Ok(Rerank {
        model,
        query,
        passages,
    })
}

/// A pair's score in [0, 1), from FNV-1a over the query and the passage.
fn score(query: &str, passage: &str) -> f64 {
    let bytes = query.bytes().chain([0]).chain(passage.bytes());
    let hash = bytes.fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// The answer of the flavor: every passage's score, best first.
pub(crate) fn answer(flavor: Flavor, id: &str, request: &Rerank) -> Value {
    let mut scored: Vec<(usize, f64)> = (request.passages.iter().enumerate())
        .map(|(i, p)| (i, score(&request.query, p)))
        .collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    let list = |field: &str| -> Vec<Value> {
        scored
            .iter()
            .map(|(index, score)| json!({"index": index, field: score}))
            .collect()
    };
    match flavor {
        Flavor::Nim => json!({"rankings": list("logit")}),
        Flavor::Tei => json!(list("score")),
        Flavor::Cohere => json!({"id": id, "results": list("relevance_score"),
            "meta": {"billed_units": {"search_units": 1}}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_flavor_reads_its_request_and_answers_its_list() {
        let nim = json!({"model": "r", "query": {"text": "q w"}, "passages": [{"text": "a"}, {"text": "b c"}]});
        let request = read(Flavor::Nim, &nim).unwrap();
        assert_eq!(request.passages, ["a", "b c"]);
        assert_eq!(request.tokens(), (2 + 1) + (2 + 2));
        let answer = answer(Flavor::Nim, "x", &request);
        let rankings = answer["rankings"].as_array().unwrap();
        assert_eq!(rankings.len(), 2);
        assert!(rankings[0]["logit"].as_f64() >= rankings[1]["logit"].as_f64());
        let tei = read(Flavor::Tei, &json!({"query": "q", "texts": ["a"]})).unwrap();
        assert_eq!(tei.model, None);
        assert!(super::answer(Flavor::Tei, "x", &tei).is_array());
        let cohere = json!({"model": "r", "query": "q", "documents": ["a", "b"]});
        let cohere = read(Flavor::Cohere, &cohere).unwrap();
        let answer = super::answer(Flavor::Cohere, "x", &cohere);
        assert_eq!(answer["results"].as_array().unwrap().len(), 2);
        let same = super::answer(Flavor::Cohere, "y", &cohere);
        assert_eq!(
            answer["results"], same["results"],
            "the same pair scores the same"
        );
        let bad = read(Flavor::Cohere, &json!({"model": "r", "query": "q"})).unwrap_err();
        assert!(bad.contains("'documents'"), "{bad}");
        assert!(read(
            Flavor::Nim,
            &json!({"query": {"text": "q"}, "passages": []})
        )
        .is_err());
    }
}
