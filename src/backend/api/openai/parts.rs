//! A prompt's parts beyond its text (`data::parts::Parts`: AIPerf's `texts`, media,
//! `tools`, `extra` and context message) written into an OpenAI body as AIPerf writes
//! them: a chat message's content becomes a list of text, then image, audio and video
//! parts; the context message follows the system message; completions and embeddings take
//! every text as a list; the Responses API takes the system prompt as `instructions`; the
//! line's `extra` fields go in last.

use serde_json::{json, Map, Value};

use crate::config::Endpoint;
use crate::data::parts::Parts;
use crate::data::Prompt;

/// Writes `prompt`'s parts into `body`, built for `endpoint` without them.
pub fn apply(body: &mut Map<String, Value>, endpoint: Endpoint, prompt: &Prompt) {
    if endpoint == Endpoint::Responses {
        if let Some(system) = &prompt.system {
            body.insert("instructions".into(), (&**system).into());
        }
    }
    let Some(parts) = prompt.parts.as_deref() else {
        return;
    };
    match endpoint {
        Endpoint::Chat => chat(body, prompt, parts),
        Endpoint::Completions => texts_as_list(body, "prompt", prompt, parts),
        Endpoint::Embeddings => texts_as_list(body, "input", prompt, parts),
        Endpoint::Responses => responses(body, prompt, parts),
        // The other types' bodies take no dataset parts beyond their own fields.
        _ => return,
    }
    if let Some(tools) = &parts.tools {
        if matches!(endpoint, Endpoint::Chat | Endpoint::Responses) {
            body.insert("tools".into(), tools.clone());
        }
    }
    for (key, value) in &parts.extra {
        body.insert(key.clone(), value.clone());
    }
}

/// The context message after the system message, and the prompt's message as parts.
fn chat(body: &mut Map<String, Value>, prompt: &Prompt, parts: &Parts) {
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    if prompt.messages.is_some() {
        return;
    }
    if parts.has_content_parts() {
        if let Some(last) = messages.last_mut() {
            last["content"] = Value::Array(chat_content(prompt, parts));
        }
    }
    if let Some(context) = &parts.user_context {
        let after_system = messages.first().is_some_and(|m| m["role"] == "system") as usize;
        messages.insert(after_system, json!({"role": "user", "content": &**context}));
    }
}

/// Text parts, then images, audio and video, in AIPerf's order; empty texts left out.
fn chat_content(prompt: &Prompt, parts: &Parts) -> Vec<Value> {
    let texts = std::iter::once(&prompt.text).chain(&parts.texts);
    let mut content: Vec<Value> = texts
        .filter(|t| !t.is_empty())
        .map(|t| json!({"type": "text", "text": t}))
        .collect();
    content.extend(
        parts
            .images
            .iter()
            .map(|u| json!({"type": "image_url", "image_url": {"url": u}})),
    );
    content.extend(parts.audios.iter().map(|a| {
        let (format, data) = audio(a);
        json!({"type": "input_audio", "input_audio": {"data": data, "format": format}})
    }));
    content.extend(
        parts
            .videos
            .iter()
            .map(|u| json!({"type": "video_url", "video_url": {"url": u}})),
    );
    content
}

/// AIPerf's audio string, `FORMAT,BASE64` or a `data:audio/FORMAT;base64,` URL: the
/// format and the data.
fn audio(value: &str) -> (&str, &str) {
    if let Some(rest) = value.strip_prefix("data:audio/") {
        let (format, data) = rest.split_once(',').unwrap_or((rest, ""));
        let format = format
            .split(';')
            .next()
            .filter(|f| !f.is_empty())
            .unwrap_or("wav");
        return (format, data);
    }
    value.split_once(',').unwrap_or(("wav", value))
}

/// Every non-empty text of the prompt as a list, in `field`.
fn texts_as_list(body: &mut Map<String, Value>, field: &str, prompt: &Prompt, parts: &Parts) {
    if parts.texts.is_empty() {
        return;
    }
    let texts: Vec<Value> = std::iter::once(&prompt.text)
        .chain(&parts.texts)
        .filter(|t| !t.is_empty())
        .map(|t| Value::String(t.clone()))
        .collect();
    body.insert(field.into(), Value::Array(texts));
}

/// The Responses API's input as message items: the context message first, then the
/// prompt's text and image parts.
fn responses(body: &mut Map<String, Value>, prompt: &Prompt, parts: &Parts) {
    if !parts.has_content_parts() && parts.user_context.is_none() {
        return;
    }
    let mut items = Vec::new();
    if let Some(context) = &parts.user_context {
        items.push(json!({"type": "message", "role": "user", "content": &**context}));
    }
    let texts = std::iter::once(&prompt.text).chain(&parts.texts);
    let mut content: Vec<Value> = texts
        .filter(|t| !t.is_empty())
        .map(|t| json!({"type": "input_text", "text": t}))
        .collect();
    content.extend(
        parts
            .images
            .iter()
            .map(|u| json!({"type": "input_image", "image_url": u})),
    );
    content.extend(parts.audios.iter().map(|a| {
        let (format, data) = audio(a);
        json!({"type": "input_audio", "input_audio": {"data": data, "format": format}})
    }));
    let content = match (content.len(), parts.has_content_parts()) {
        (1, false) => Value::String(prompt.text.clone()),
        _ => Value::Array(content),
    };
    items.push(json!({"type": "message", "role": "user", "content": content}));
    body.insert("input".into(), Value::Array(items));
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn prompt(parts: Parts) -> Prompt {
        Prompt {
            text: "look".into(),
            system: Some("be brief".into()),
            parts: Some(Arc::new(parts)),
            ..Prompt::default()
        }
    }

    fn chat_body(prompt: &Prompt) -> Map<String, Value> {
        let mut body = Map::new();
        let mut messages = vec![json!({"role": "system", "content": "be brief"})];
        messages.push(json!({"role": "user", "content": prompt.text}));
        body.insert("messages".into(), Value::Array(messages));
        body
    }

    #[test]
    fn a_chat_message_carries_parts_in_aiperfs_order() {
        let p = prompt(Parts {
            texts: vec!["and this".into()],
            images: vec!["data:image/png;base64,AA".into()],
            audios: vec!["wav,UklG".into()],
            videos: vec!["https://x/v.mp4".into()],
            tools: Some(json!([{"type": "function"}])),
            extra: [("temperature".to_string(), json!(0.2))]
                .into_iter()
                .collect(),
            user_context: Some("I am Ann.".into()),
        });
        let mut body = chat_body(&p);
        apply(&mut body, Endpoint::Chat, &p);
        assert_eq!(
            body["messages"],
            json!([
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "I am Ann."},
                {"role": "user", "content": [
                    {"type": "text", "text": "look"},
                    {"type": "text", "text": "and this"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
                    {"type": "input_audio", "input_audio": {"data": "UklG", "format": "wav"}},
                    {"type": "video_url", "video_url": {"url": "https://x/v.mp4"}}]}
            ])
        );
        assert_eq!(body["tools"], json!([{"type": "function"}]));
        assert_eq!(body["temperature"], json!(0.2));
    }

    #[test]
    fn other_endpoints_take_texts_as_lists() {
        let p = prompt(Parts {
            texts: vec!["b".into()],
            ..Parts::default()
        });
        let mut body = Map::new();
        apply(&mut body, Endpoint::Completions, &p);
        assert_eq!(body["prompt"], json!(["look", "b"]));
        let mut body = Map::new();
        apply(&mut body, Endpoint::Embeddings, &p);
        assert_eq!(body["input"], json!(["look", "b"]));
        let mut body = Map::new();
        apply(&mut body, Endpoint::Responses, &p);
        assert_eq!(body["instructions"], "be brief");
        assert_eq!(
            body["input"],
            json!([{"type": "message", "role": "user", "content": [
                {"type": "input_text", "text": "look"}, {"type": "input_text", "text": "b"}]}])
        );
        assert_eq!(audio("data:audio/mp3;base64,QQ"), ("mp3", "QQ"));
    }
}
