//! The fields of a turn in AIPerf's single_turn, multi_turn and random_pool lines, with
//! AIPerf's names: `text`/`texts` (strings or `{"name", "contents"}` objects),
//! `image`/`images`, `audio`/`audios`, `video`/`videos` (a URL, a data URL — for audio also
//! `wav,BASE64` — or a local file, read and encoded as AIPerf encodes it) and `extra` (body
//! fields merged last); a rankings line's texts named `query` and `passages`. Each bad field
//! is one sentence naming the line.

use std::path::Path;

use base64::Engine;
use serde_json::{Map, Value};

use crate::data::parts::Parts;
use inferperf_wire::error::{RunError, RunResult};

/// A bad line: one sentence naming the file, the line and what is wrong.
pub(super) fn bad(origin: &str, what: impl std::fmt::Display) -> RunError {
    RunError::bad_option(format!("--input-file {origin}: {what}."))
}

/// A turn's texts and media, as given.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct TurnFields {
    /// Every text, in order (the first is the prompt's text, the rest its other parts).
    pub texts: Vec<String>,
    pub parts: Parts,
    /// A rankings request's passages: the contents of a `texts` object named `passages`
    /// (its query is the `query` object's, the first text).
    pub passages: Option<Vec<String>>,
}

/// Which media kind a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Media {
    Image,
    Audio,
    Video,
}

/// Reads a turn's texts, media and `extra`; `folder` is where relative media paths are.
pub(super) fn read(origin: &str, map: &Map<String, Value>, folder: &Path) -> RunResult<TurnFields> {
    let mut parts = Parts {
        images: media(origin, map, Media::Image, folder)?,
        audios: media(origin, map, Media::Audio, folder)?,
        videos: media(origin, map, Media::Video, folder)?,
        ..Parts::default()
    };
    match map.get("extra") {
        None | Some(Value::Null) => {}
        Some(Value::Object(extra)) => parts.extra = extra.clone(),
        Some(_) => return Err(bad(origin, "\"extra\" must be an object of request fields")),
    }
    let (passages, rest) = split_passages(map);
    let texts = strings(origin, rest.as_ref().unwrap_or(map), "text", "texts")?;
    if texts.is_empty() && !parts.has_content_parts() {
        return Err(bad(
            origin,
            "no \"text\", \"texts\", \"image(s)\", \"audio(s)\" or \"video(s)\"; a turn needs content",
        ));
    }
    Ok(TurnFields {
        texts,
        parts,
        passages,
    })
}

/// The contents of the `texts` objects named `passages`, and the line without them (`None`:
/// the line has none).
fn split_passages(map: &Map<String, Value>) -> (Option<Vec<String>>, Option<Map<String, Value>>) {
    let Some(Value::Array(items)) = map.get("texts") else {
        return (None, None);
    };
    let named = |item: &Value| item.get("name").and_then(Value::as_str) == Some("passages");
    if !items.iter().any(named) {
        return (None, None);
    }
    let passages = (items.iter().filter(|i| named(i)))
        .filter_map(|i| i.get("contents").and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect();
    let mut rest = map.clone();
    let others: Vec<Value> = items.iter().filter(|i| !named(i)).cloned().collect();
    rest.insert("texts".into(), Value::Array(others));
    (Some(passages), Some(rest))
}

/// The values of a singular field or its plural list (strings, or objects whose
/// `contents` list strings), not both.
fn strings(
    origin: &str,
    map: &Map<String, Value>,
    one: &str,
    many: &str,
) -> RunResult<Vec<String>> {
    let single = map.get(one).filter(|v| !v.is_null());
    let list = map.get(many).filter(|v| !v.is_null());
    match (single, list) {
        (Some(_), Some(_)) => Err(bad(
            origin,
            format_args!("\"{one}\" and \"{many}\" cannot both be given"),
        )),
        (Some(Value::String(s)), None) => Ok(vec![s.clone()]),
        (Some(_), None) => Err(bad(origin, format_args!("\"{one}\" must be a string"))),
        (None, Some(Value::Array(items))) => {
            let mut out = Vec::new();
            for item in items {
                match item {
                    Value::String(s) => out.push(s.clone()),
                    Value::Object(o) => match o.get("contents").and_then(Value::as_array) {
                        Some(contents) => out.extend(
                            contents
                                .iter()
                                .filter_map(Value::as_str)
                                .map(str::to_string),
                        ),
                        None => {
                            return Err(bad(
                                origin,
                                format_args!(
                                    "a \"{many}\" object needs a \"contents\" list of strings"
                                ),
                            ))
                        }
                    },
                    _ => return Err(bad(origin, format_args!("\"{many}\" must list strings"))),
                }
            }
            Ok(out.into_iter().filter(|s| !s.is_empty()).collect())
        }
        (None, Some(_)) => Err(bad(origin, format_args!("\"{many}\" must be a list"))),
        (None, None) => Ok(Vec::new()),
    }
}

/// A media field's values, each a URL, a data URL or a file read and encoded.
fn media(
    origin: &str,
    map: &Map<String, Value>,
    kind: Media,
    folder: &Path,
) -> RunResult<Vec<String>> {
    let (one, many) = match kind {
        Media::Image => ("image", "images"),
        Media::Audio => ("audio", "audios"),
        Media::Video => ("video", "videos"),
    };
    strings(origin, map, one, many)?
        .into_iter()
        .map(|value| encoded(origin, &value, kind, folder))
        .collect()
}

/// A media value as it is sent: URLs and encoded values as given, a local file encoded.
fn encoded(origin: &str, value: &str, kind: Media, folder: &Path) -> RunResult<String> {
    let already = match kind {
        Media::Audio => value
            .split_once(',')
            .is_some_and(|(f, _)| matches!(f.to_ascii_lowercase().as_str(), "wav" | "mp3")),
        _ => false,
    };
    if already || value.starts_with("data:") || is_url(value) {
        return Ok(value.to_string());
    }
    let path = folder.join(value);
    let bytes = std::fs::read(&path).map_err(|e| {
        bad(
            origin,
            format_args!(
                "cannot read the media file {} ({e}); give a URL, a data URL or a readable file",
                path.display()
            ),
        )
    })?;
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let data = base64::engine::general_purpose::STANDARD.encode(bytes);
    Ok(match kind {
        Media::Image => format!("data:image/{};base64,{data}", image_type(&extension)),
        Media::Audio => match extension.as_str() {
            "wav" | "mp3" => format!("{extension},{data}"),
            _ => {
                return Err(bad(
                    origin,
                    format_args!(
                        "the audio file {} is not .wav or .mp3, the formats AIPerf sends",
                        path.display()
                    ),
                ))
            }
        },
        Media::Video => format!(
            "data:video/{};base64,{data}",
            if extension.is_empty() {
                "mp4"
            } else {
                &extension
            }
        ),
    })
}

/// `scheme://host...`.
fn is_url(value: &str) -> bool {
    value.split_once("://").is_some_and(|(scheme, rest)| {
        !scheme.is_empty()
            && !rest.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

/// The image subtype of a file extension.
pub(crate) fn image_type(extension: &str) -> &str {
    match extension {
        "jpg" | "jpeg" => "jpeg",
        "" => "png",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(value: Value, folder: &Path) -> RunResult<TurnFields> {
        read("f line 1", value.as_object().unwrap(), folder)
    }

    #[test]
    fn a_rankings_line_gives_its_query_and_passages() {
        let line = json!({"texts": [{"name": "query", "contents": ["what?"]},
                                    {"name": "passages", "contents": ["a", "b"]}]});
        let Value::Object(map) = line else {
            unreachable!()
        };
        let fields = read("r.jsonl line 1", &map, Path::new(".")).unwrap();
        assert_eq!(fields.texts, ["what?"]);
        assert_eq!(
            fields.passages,
            Some(vec!["a".to_string(), "b".to_string()])
        );
    }

    #[test]
    fn aiperf_names_of_texts_and_media_are_read() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.wav"), b"RIFF").unwrap();
        std::fs::write(dir.path().join("p.png"), [0x89, b'P']).unwrap();
        let read = fields(
            json!({"texts": ["one", {"name": "q", "contents": ["two", "three"]}],
                   "image": "p.png", "audios": ["a.wav", "mp3,AAAA"],
                   "video": "https://example.com/v.mp4", "extra": {"temperature": 0.1}}),
            dir.path(),
        )
        .unwrap();
        assert_eq!(read.texts, ["one", "two", "three"]);
        assert_eq!(read.parts.images, ["data:image/png;base64,iVA="]);
        assert_eq!(read.parts.audios, ["wav,UklGRg==", "mp3,AAAA"]);
        assert_eq!(read.parts.videos, ["https://example.com/v.mp4"]);
        assert_eq!(read.parts.extra["temperature"], json!(0.1));
        let image_only =
            fields(json!({"images": ["data:image/png;base64,AA"]}), dir.path()).unwrap();
        assert!(image_only.texts.is_empty());
    }

    #[test]
    fn bad_fields_get_one_sentence() {
        let dir = tempfile::tempdir().unwrap();
        for (value, said) in [
            (json!({"text": "a", "texts": ["b"]}), "cannot both be given"),
            (
                json!({"image": "missing.png"}),
                "cannot read the media file",
            ),
            (
                json!({"text": "a", "extra": 3}),
                "\"extra\" must be an object",
            ),
            (json!({"output_length": 3}), "a turn needs content"),
            (
                json!({"texts": [{"name": "x"}]}),
                "needs a \"contents\" list",
            ),
        ] {
            let message = fields(value, dir.path()).unwrap_err().to_string();
            assert!(message.contains(said), "{message}");
            assert!(message.starts_with("--input-file f line 1"), "{message}");
        }
    }
}
