//! AIPerf's synthetic media, made once when the dataset is built and attached to every
//! synthetic prompt: images (PNG or JPEG), audio clips (WAV or MP3) and videos (WebM or MP4,
//! encoded by the ffmpeg program). Each medium draws from its own generators seeded by the
//! run's seed and the medium's concern (sizes, formats, pixels, samples), as AIPerf derives
//! one generator per concern, so a rerun with the same seed makes the same bytes. The media
//! are held encoded (base64, as data URLs for images and videos); the OpenAI adapter puts
//! them into a request's content parts.

mod assets;
mod audio;
mod draw;
mod frames;
mod image;
mod sample;
mod video;

use std::sync::Arc;

use crate::config::media::MediaConfig;
use inferperf_wire::error::RunResult;

/// The media of one prompt, in AIPerf's order within each medium. Present (even empty) when
/// the run includes a medium: the prompt's content then goes as a list of parts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Media {
    /// `data:image/png;base64,…` or `data:image/jpeg;base64,…`.
    pub images: Vec<Arc<str>>,
    pub audios: Vec<AudioClip>,
    /// `data:video/webm;base64,…` or `data:video/mp4;base64,…`.
    pub videos: Vec<Arc<str>>,
}

/// An encoded audio clip: its container's name (`wav`, `mp3`) and its bytes in base64.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioClip {
    pub format: &'static str,
    pub base64: Arc<str>,
}

/// Makes the media of `prompts` prompts: each gets its batch of each included medium.
pub fn make(config: &MediaConfig, seed: u64, prompts: usize) -> RunResult<Vec<Media>> {
    let mut all = vec![Media::default(); prompts];
    if let Some(settings) = &config.image {
        let mut maker = image::ImageMaker::new(settings, seed)?;
        for media in &mut all {
            for _ in 0..settings.batch {
                media.images.push(maker.next_image()?);
            }
        }
    }
    if let Some(settings) = &config.audio {
        let mut maker = audio::AudioMaker::new(settings, seed);
        for media in &mut all {
            for _ in 0..settings.batch {
                media.audios.push(maker.next_clip()?);
            }
        }
    }
    if let Some(settings) = &config.video {
        let batch = settings.batch as usize;
        let mut videos = video::make_videos(settings, seed, prompts * batch)?.into_iter();
        for media in &mut all {
            media.videos.extend(videos.by_ref().take(batch));
        }
    }
    Ok(all)
}

/// Standard base64 of bytes.
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests;
