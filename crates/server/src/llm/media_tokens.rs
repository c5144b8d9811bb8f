//! How the `llm` kind counts the media parts of a prompt, so that a multimodal run's time to
//! first token has a truth: each medium costs prompt tokens by a stated model, added to the
//! prompt's `usage.prompt_tokens` and prefilled at `prefill_us_per_token` like text.
//!
//! - an image (`image_url`, `input_image`): ⌈width/32⌉ × ⌈height/32⌉ tokens, one per 32×32
//!   patch, its size read from the PNG or JPEG header;
//! - an audio clip (`input_audio`, WAV or MP3): 25 tokens per second of its duration,
//!   rounded up, read from the WAV header or the MP3 frames;
//! - a video (`video_url`, WebM or MP4): its frames × the tokens of one frame as an image,
//!   read from the container (an audio track costs nothing).
//!
//! Media travel as base64 `data:` URLs (audio as bare base64 with its format); anything
//! else, or bytes that do not read as the medium, is one sentence for a 400.

use std::io::Cursor;

use base64::Engine as _;
use serde_json::Value;

/// The side of the square patch an image token covers, in pixels.
pub(crate) const PATCH_PIXELS: u64 = 32;
/// Tokens per second of audio.
pub(crate) const AUDIO_TOKENS_PER_SECOND: f64 = 25.0;

/// A media part's cost, and a name of its content (the same bytes, the same name) from
/// which the prefix cache's units are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MediaCost {
    pub tokens: u64,
    pub content: u64,
}

/// The cost of a content part when it is a medium; `None` for any other part.
pub(crate) fn part_cost(part: &Value) -> Result<Option<MediaCost>, String> {
    let kind = part.get("type").and_then(Value::as_str).unwrap_or("");
    let (tokens, bytes) = match kind {
        "image_url" | "input_image" => {
            let (_, bytes) = data_url(url_of(part.get("image_url"), kind)?, "image")?;
            (image_tokens(&bytes)?, bytes)
        }
        "input_audio" => {
            let audio = part.get("input_audio");
            let field = |name| audio.and_then(|a| a.get(name)).and_then(Value::as_str);
            let (Some(data), Some(format)) = (field("data"), field("format")) else {
                return Err(
                    "an input_audio part needs input_audio.data (base64) and input_audio.format"
                        .into(),
                );
            };
            let bytes = unbase64(data, "input_audio.data")?;
            (audio_tokens(&bytes, format)?, bytes)
        }
        "video_url" => {
            let (mime, bytes) = data_url(url_of(part.get("video_url"), kind)?, "video")?;
            (video_tokens(&bytes, &mime)?, bytes)
        }
        _ => return Ok(None),
    };
    let content = bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    Ok(Some(MediaCost { tokens, content }))
}

/// The URL of an `image_url`/`video_url` field: `{"url": …}` (chat) or a string
/// (Responses' `input_image`).
fn url_of<'a>(field: Option<&'a Value>, kind: &str) -> Result<&'a str, String> {
    let url = match field {
        Some(Value::String(url)) => Some(url.as_str()),
        Some(object) => object.get("url").and_then(Value::as_str),
        None => None,
    };
    url.ok_or_else(|| format!("a {kind} part needs a URL ({kind}.url)"))
}

/// The MIME subtype and bytes of a base64 `data:` URL of `kind` (`image`, `video`).
fn data_url(url: &str, kind: &str) -> Result<(String, Vec<u8>), String> {
    let parsed = url
        .strip_prefix("data:")
        .and_then(|rest| rest.split_once(','));
    let Some((head, body)) = parsed.filter(|(head, _)| head.ends_with(";base64")) else {
        let shown: String = url.chars().take(40).collect();
        return Err(format!(
            "the embedded server reads a {kind} from a base64 data: URL only (data:{kind}/...;base64,...), not '{shown}'"
        ));
    };
    let mime = head.trim_end_matches(";base64");
    let Some(subtype) = mime.strip_prefix(&format!("{kind}/")) else {
        return Err(format!(
            "a {kind} data: URL must be of type {kind}/..., not {mime}"
        ));
    };
    Ok((
        subtype.to_string(),
        unbase64(body, &format!("the {kind}'s data"))?,
    ))
}

fn unbase64(text: &str, what: &str) -> Result<Vec<u8>, String> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| format!("{what} is not standard base64 ({e})"))
}

/// Tokens of an image of `width`×`height` pixels: one per 32×32 patch.
pub(crate) fn patch_tokens(width: u64, height: u64) -> u64 {
    width.div_ceil(PATCH_PIXELS) * height.div_ceil(PATCH_PIXELS)
}

/// A PNG or JPEG image's tokens, from its header.
fn image_tokens(bytes: &[u8]) -> Result<u64, String> {
    let reader = image::ImageReader::new(Cursor::new(bytes))
        .with_guessed_format()
        .map_err(|e| format!("the image cannot be read ({e})"))?;
    if !matches!(
        reader.format(),
        Some(image::ImageFormat::Png | image::ImageFormat::Jpeg)
    ) {
        return Err("the image is neither a PNG nor a JPEG".into());
    }
    let (width, height) = reader
        .into_dimensions()
        .map_err(|e| format!("the image's header cannot be read ({e})"))?;
    Ok(patch_tokens(width.into(), height.into()))
}

/// Seconds of audio as tokens, rounded up (a hair of float error does not add one).
pub(crate) fn audio_seconds_tokens(seconds: f64) -> u64 {
    (seconds * AUDIO_TOKENS_PER_SECOND - 1e-9).ceil().max(0.0) as u64
}

/// A WAV or MP3 clip's tokens, from its duration.
fn audio_tokens(bytes: &[u8], format: &str) -> Result<u64, String> {
    let seconds = match format {
        "wav" => {
            let reader = hound::WavReader::new(Cursor::new(bytes))
                .map_err(|e| format!("the input_audio is not a readable WAV file ({e})"))?;
            f64::from(reader.duration()) / f64::from(reader.spec().sample_rate.max(1))
        }
        "mp3" => mp3_duration::from_read(&mut Cursor::new(bytes))
            .map_err(|e| format!("the input_audio is not a readable MP3 file ({e})"))?
            .as_secs_f64(),
        other => {
            return Err(format!(
                "input_audio.format '{other}' is not one the embedded server reads: wav or mp3"
            ))
        }
    };
    Ok(audio_seconds_tokens(seconds))
}

/// A WebM or MP4 video's tokens: its frames, each as an image of the video's size.
fn video_tokens(bytes: &[u8], subtype: &str) -> Result<u64, String> {
    let (frames, width, height) = match subtype {
        "webm" => webm_frames(bytes)?,
        "mp4" => mp4_frames(bytes)?,
        other => {
            return Err(format!(
                "video/{other} is not a container the embedded server reads: webm or mp4"
            ))
        }
    };
    Ok(frames * patch_tokens(width, height))
}

/// Frames, width and height of a WebM's (Matroska's) first video track.
fn webm_frames(bytes: &[u8]) -> Result<(u64, u64, u64), String> {
    use matroska_demuxer::{Frame, MatroskaFile, TrackType};
    let bad = |e: matroska_demuxer::DemuxError| format!("the video is not a readable WebM ({e})");
    let mut file = MatroskaFile::open(Cursor::new(bytes)).map_err(bad)?;
    let track = (file.tracks().iter())
        .find(|t| t.track_type() == TrackType::Video)
        .ok_or("the WebM has no video track")?;
    let number = track.track_number().get();
    let video = track.video().ok_or("the WebM's video track has no size")?;
    let (width, height) = (video.pixel_width().get(), video.pixel_height().get());
    let mut frame = Frame::default();
    let mut frames = 0;
    while file.next_frame(&mut frame).map_err(bad)? {
        frames += u64::from(frame.track == number);
    }
    Ok((frames, width, height))
}

/// Samples, width and height of an MP4's first video track.
fn mp4_frames(bytes: &[u8]) -> Result<(u64, u64, u64), String> {
    let reader = mp4::Mp4Reader::read_header(Cursor::new(bytes), bytes.len() as u64)
        .map_err(|e| format!("the video is not a readable MP4 ({e})"))?;
    let mut tracks: Vec<&mp4::Mp4Track> = reader.tracks().values().collect();
    tracks.sort_by_key(|t| t.track_id());
    let track = (tracks.into_iter())
        .find(|t| matches!(t.track_type(), Ok(mp4::TrackType::Video)))
        .ok_or("the MP4 has no video track")?;
    Ok((
        u64::from(track.sample_count()),
        u64::from(track.width()),
        u64::from(track.height()),
    ))
}

#[cfg(test)]
#[path = "media_tokens_tests.rs"]
mod tests;
