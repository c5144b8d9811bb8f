//! A prompt's user content as AIPerf 0.13 renders it: the plain text when the prompt has no
//! media, else a list of parts — the text, then each image, each audio clip, each video —
//! in the chat shapes (`text`, `image_url`, `input_audio`, `video_url`) or the Responses
//! shapes (`input_text`, `input_image`; audio as in chat; no video, which the configuration
//! refuses). The body builders call these for the user message of the prompt itself.

use serde_json::{json, Value};

use crate::data::media::Media;
use crate::data::Prompt;

/// Which API's part shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parts {
    Chat,
    Responses,
}

/// The prompt's content: its text as a string without media, else the list of parts (the
/// text skipped when empty). A run that includes a medium sends a list even when a prompt
/// got none of it, as AIPerf does.
pub fn content_parts(prompt: &Prompt, shapes: Parts) -> Value {
    let Some(media) = &prompt.media else {
        return prompt.text.as_str().into();
    };
    let mut parts = Vec::with_capacity(1 + media.images.len() + media.audios.len());
    if !prompt.text.is_empty() {
        parts.push(text_part(&prompt.text, shapes));
    }
    parts.extend(media_parts(media, shapes));
    match parts.is_empty() {
        true => "".into(),
        false => Value::Array(parts),
    }
}

/// The Responses API's `input` of a prompt: the text alone as it was sent before media,
/// or with media one user message of parts (`"type": "message"`, as AIPerf writes it).
pub fn responses_input(prompt: &Prompt) -> Value {
    match &prompt.media {
        None => prompt.text.as_str().into(),
        Some(_) => json!([{
            "role": "user",
            "content": content_parts(prompt, Parts::Responses),
            "type": "message",
        }]),
    }
}

fn text_part(text: &str, shapes: Parts) -> Value {
    match shapes {
        Parts::Chat => json!({"type": "text", "text": text}),
        Parts::Responses => json!({"type": "input_text", "text": text}),
    }
}

fn media_parts(media: &Media, shapes: Parts) -> impl Iterator<Item = Value> + '_ {
    let images = media.images.iter().map(move |url| match shapes {
        Parts::Chat => json!({"type": "image_url", "image_url": {"url": &**url}}),
        Parts::Responses => json!({"type": "input_image", "image_url": &**url}),
    });
    let audios = media.audios.iter().map(|clip| {
        json!({"type": "input_audio",
               "input_audio": {"data": &*clip.base64, "format": clip.format}})
    });
    let videos =
        (media.videos.iter()).map(|url| json!({"type": "video_url", "video_url": {"url": &**url}}));
    images.chain(audios).chain(videos)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::data::media::AudioClip;

    fn prompt(media: Option<Media>) -> Prompt {
        Prompt {
            text: " this derived Saw you the field Came you".into(),
            media: media.map(Arc::new),
            ..Prompt::default()
        }
    }

    fn all_media() -> Media {
        Media {
            images: vec!["data:image/jpeg;base64,/9j/4AAQ".into()],
            audios: vec![AudioClip {
                format: "wav",
                base64: "UklGR".into(),
            }],
            videos: vec!["data:video/webm;base64,GkXfo".into()],
        }
    }

    /// The shape of AIPerf 0.13's verified chat example (the spec's §1.1), with a video
    /// after the audio (§0.2's order).
    #[test]
    fn chat_parts_follow_aiperfs_example() {
        assert_eq!(
            content_parts(&prompt(Some(all_media())), Parts::Chat),
            json!([
                {"type": "text", "text": " this derived Saw you the field Came you"},
                {"type": "image_url", "image_url": {"url": "data:image/jpeg;base64,/9j/4AAQ"}},
                {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}},
                {"type": "video_url", "video_url": {"url": "data:video/webm;base64,GkXfo"}}
            ])
        );
        assert_eq!(
            content_parts(&prompt(None), Parts::Chat),
            json!(" this derived Saw you the field Came you"),
            "one text and no media: a plain string"
        );
        assert_eq!(
            content_parts(&prompt(Some(Media::default())), Parts::Chat),
            json!([{"type": "text", "text": " this derived Saw you the field Came you"}]),
            "an included medium without items: still parts"
        );
    }

    #[test]
    fn responses_parts_are_input_text_and_input_image() {
        let mut media = all_media();
        media.videos.clear();
        assert_eq!(
            responses_input(&prompt(Some(media))),
            json!([{"role": "user", "type": "message", "content": [
                {"type": "input_text", "text": " this derived Saw you the field Came you"},
                {"type": "input_image", "image_url": "data:image/jpeg;base64,/9j/4AAQ"},
                {"type": "input_audio", "input_audio": {"data": "UklGR", "format": "wav"}}
            ]}])
        );
        assert_eq!(
            responses_input(&prompt(None)),
            json!(" this derived Saw you the field Came you")
        );
    }
}
