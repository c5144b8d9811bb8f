//! The settings of AIPerf's synthetic media — images, audio clips and videos attached to
//! each synthetic prompt — checked once, with AIPerf 0.13's effective rules (not its
//! `--help`): a medium exists only when one of its flags was typed; its untyped settings take
//! AIPerf's configuration defaults (images 512×512 JPEG from noise, clips of 10 s at 16 kHz
//! and 16 bits, videos of 1 s at 4 fps as VP9 WebM); a typed shape flag (size, length,
//! source) sets one item per prompt unless the batch size is typed. The media go on OpenAI
//! chat requests (responses: images and audio) with synthetic prompts only.

use std::path::PathBuf;

use super::{Endpoint, InputData, OpenAiConfig, PromptSource, ServiceKind};
use crate::cli::MediaArgs;
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::number::within;

/// An image side when its flags were not typed (AIPerf's `ImageConfig` default).
const DEFAULT_IMAGE_SIDE: f64 = 512.0;
/// A clip's length when its flag was not typed (AIPerf's `AudioConfig` default).
const DEFAULT_AUDIO_SECONDS: f64 = 10.0;
const MIN_AUDIO_SECONDS: f64 = 0.01;
/// Bounds that keep one item within memory: a mean image side, a clip's mean length, a
/// video's side, rate and length.
const MAX_IMAGE_SIDE: f64 = 16_384.0;
const MAX_AUDIO_SECONDS: f64 = 3_600.0;
const MAX_VIDEO_SIDE: u32 = 8_192;
const MAX_VIDEO_FPS: u32 = 240;
const MAX_VIDEO_SECONDS: f64 = 600.0;
/// The raw RGB frames of one video, piped to ffmpeg, at most.
const MAX_VIDEO_RAW_BYTES: f64 = 4.0 * 1024.0 * 1024.0 * 1024.0;
/// Items of one medium per prompt, at most.
const MAX_BATCH: u32 = 1_000;
/// The bit depths AIPerf writes (PCM_U8, PCM_16, PCM_24, PCM_32).
const DEPTHS: [u16; 4] = [8, 16, 24, 32];
/// The sample rates an MP3 can have, in Hz.
pub const MP3_RATES: [u32; 9] = [8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000];

/// The media of each synthetic prompt; a medium is `Some` when AIPerf would include it.
/// An included medium may have a batch of 0: then the prompt's content is still sent as a
/// list of parts, without any of that medium, as AIPerf sends it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MediaConfig {
    pub image: Option<ImageSettings>,
    pub audio: Option<AudioSettings>,
    pub video: Option<VideoSettings>,
}

impl MediaConfig {
    /// Whether any medium is included.
    pub fn is_on(&self) -> bool {
        self.image.is_some() || self.audio.is_some() || self.video.is_some()
    }
}

/// A size drawn per item: `max(1, ceil(normal(mean, stddev)))`, or `max(1, mean)` without a
/// spread (AIPerf truncates both to whole pixels first).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Side {
    pub mean: u32,
    pub stddev: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Jpeg,
    /// PNG or JPEG, drawn per image.
    Random,
}

/// Where an image's pixels come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageSource {
    Noise,
    /// Pictures inferperf draws itself.
    Assets,
    /// The PNG and JPEG files of a folder.
    Folder(PathBuf),
}

/// How the pictures of a finite source are picked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sampling {
    RandomWithReplacement,
    ShuffleCycle,
    SequentialCycle,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ImageSettings {
    pub batch: u32,
    pub width: Side,
    pub height: Side,
    pub format: ImageFormat,
    pub source: ImageSource,
    pub sampling: Sampling,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AudioFormat {
    Wav,
    Mp3,
}

impl AudioFormat {
    /// The name AIPerf sends as `input_audio.format`.
    pub fn name(self) -> &'static str {
        match self {
            AudioFormat::Wav => "wav",
            AudioFormat::Mp3 => "mp3",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct AudioSettings {
    pub batch: u32,
    /// Seconds: drawn from a normal distribution, at least 0.01.
    pub length_mean: f64,
    pub length_stddev: f64,
    pub format: AudioFormat,
    /// One drawn per clip, in Hz.
    pub sample_rates: Vec<u32>,
    /// One drawn per clip, in bits.
    pub depths: Vec<u16>,
    pub channels: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VideoFormat {
    Webm,
    Mp4,
}

impl VideoFormat {
    /// The container's name, for ffmpeg's `-f` and the MIME type.
    pub fn name(self) -> &'static str {
        match self {
            VideoFormat::Webm => "webm",
            VideoFormat::Mp4 => "mp4",
        }
    }
}

/// What a synthetic video's frames show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VideoSynth {
    MovingShapes,
    GridClock,
    Noise,
}

/// A video's audio track: Gaussian noise as long as the video.
#[derive(Debug, Clone, PartialEq)]
pub struct VideoAudio {
    pub sample_rate: u32,
    pub channels: u16,
    pub depth: u16,
    /// The ffmpeg audio encoder.
    pub codec: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VideoSettings {
    pub batch: u32,
    pub width: u32,
    pub height: u32,
    pub fps: u32,
    pub duration: f64,
    pub format: VideoFormat,
    /// The ffmpeg video encoder.
    pub codec: String,
    pub synth: VideoSynth,
    pub audio: Option<VideoAudio>,
}

impl VideoSettings {
    /// Frames per video: `int(duration × fps)`, as AIPerf (0: the video is left out).
    pub fn frames(&self) -> u32 {
        (self.duration * f64::from(self.fps)) as u32
    }
}

/// Reads the media flags. `llm` is the OpenAI settings of an OpenAI run; `input_data`
/// tells whether the prompts are synthetic; `pooled`: they come from a random_pool, which
/// takes the batch sizes (drawing its own media), and no other media flag.
pub(super) fn parse(
    args: &MediaArgs,
    kind: ServiceKind,
    llm: Option<&OpenAiConfig>,
    input_data: &InputData,
    pooled: bool,
) -> RunResult<MediaConfig> {
    let Some(flag) = args.first_given() else {
        return Ok(MediaConfig::default());
    };
    if pooled && args.only_batch_sizes() {
        return Ok(MediaConfig::default());
    }
    check_run(flag, kind, llm, input_data)?;
    let media = MediaConfig {
        image: images(args)?,
        audio: audio(args)?,
        video: video(args)?,
    };
    if let (Some(Endpoint::Responses), Some(_)) = (llm.map(|l| l.endpoint), &media.video) {
        return Err(RunError::bad_option(
            "The Responses API takes no video (AIPerf refuses it too): use --endpoint-type chat with --video-width and --video-height.",
        ));
    }
    Ok(media)
}

/// Media go on the synthetic prompts of an OpenAI chat or responses run.
fn check_run(
    flag: &str,
    kind: ServiceKind,
    llm: Option<&OpenAiConfig>,
    input_data: &InputData,
) -> RunResult<()> {
    let Some(llm) = llm.filter(|_| kind == ServiceKind::OpenAi) else {
        return Err(RunError::bad_option(format!(
            "{flag} attaches synthetic media to OpenAI chat requests: add --endpoint-type chat (or --service-kind openai)."
        )));
    };
    if matches!(llm.endpoint, Endpoint::Completions | Endpoint::Embeddings) {
        return Err(RunError::bad_option(format!(
            "{flag} attaches media to chat or responses requests, and {} has no place for them: use --endpoint-type chat.",
            llm.endpoint.path()
        )));
    }
    let from_file = !matches!(llm.prompt_source, PromptSource::Synthetic)
        || matches!(input_data, InputData::Json(_) | InputData::Directory(_));
    if from_file {
        return Err(RunError::bad_option(format!(
            "{flag} attaches synthetic media to synthetic prompts, and this run's prompts come from a file: drop {flag} or the input file."
        )));
    }
    Ok(())
}

/// A flag's word, with dashes and underscores alike and any case (`moving_shapes`).
fn word(text: &str) -> String {
    text.trim().to_ascii_lowercase().replace('_', "-")
}

fn choice<T: Copy>(flag: &str, text: &str, choices: &[(&str, T)]) -> RunResult<T> {
    let given = word(text);
    match choices.iter().find(|(name, _)| *name == given) {
        Some((_, value)) => Ok(*value),
        None => {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            Err(RunError::bad_option(format!(
                "{flag} '{text}' is not one of {}.",
                names.join(", ")
            )))
        }
    }
}

fn batch(flag: &str, typed: Option<u32>, shaped: bool) -> RunResult<u32> {
    match typed {
        Some(n) if n > MAX_BATCH => Err(RunError::bad_option(format!(
            "{flag} {n} is too many per prompt: give 0 to {MAX_BATCH}."
        ))),
        Some(n) => Ok(n),
        None => Ok(shaped as u32),
    }
}

/// A mean and spread typed as floats: `None` when neither was typed.
fn spread(
    mean: (&str, Option<f64>),
    stddev: (&str, Option<f64>),
    max: f64,
    unit: &str,
) -> RunResult<Option<(f64, f64)>> {
    match (mean.1, stddev.1) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(RunError::bad_option(format!(
            "{} needs {} (AIPerf refuses a spread without a mean).",
            stddev.0, mean.0
        ))),
        (Some(m), s) => Ok(Some((
            within(mean.0, m, 0.0, max, unit)?,
            within(stddev.0, s.unwrap_or(0.0), 0.0, max, unit)?,
        ))),
    }
}

fn images(args: &MediaArgs) -> RunResult<Option<ImageSettings>> {
    let typed = [
        args.image_width_mean.is_some() || args.image_width_stddev.is_some(),
        args.image_height_mean.is_some() || args.image_height_stddev.is_some(),
        args.image_batch_size.is_some(),
        args.image_source.is_some(),
        args.image_source_sampling.is_some(),
    ];
    if !typed.contains(&true) && args.image_format.is_none() {
        return Ok(None);
    }
    let side = |mean, stddev| {
        spread(mean, stddev, MAX_IMAGE_SIDE, "pixels")
            .map(|s| s.unwrap_or((DEFAULT_IMAGE_SIDE, 0.0)))
    };
    let width = side(
        ("--image-width-mean", args.image_width_mean),
        ("--image-width-stddev", args.image_width_stddev),
    )?;
    let height = side(
        ("--image-height-mean", args.image_height_mean),
        ("--image-height-stddev", args.image_height_stddev),
    )?;
    let formats = [
        ("png", ImageFormat::Png),
        ("jpeg", ImageFormat::Jpeg),
        ("random", ImageFormat::Random),
    ];
    let format = match &args.image_format {
        Some(text) => choice("--image-format", text, &formats)?,
        None => ImageFormat::Jpeg,
    };
    let source = image_source(args.image_source.as_deref())?;
    let sampling = image_sampling(args.image_source_sampling.as_deref(), &source)?;
    let batch = batch(
        "--image-batch-size",
        args.image_batch_size,
        typed.contains(&true),
    )?;
    // AIPerf includes images when both mean sides are above 0.
    if width.0 <= 0.0 || height.0 <= 0.0 {
        return Ok(None);
    }
    let whole = |(mean, stddev): (f64, f64)| Side {
        mean: mean as u32,
        stddev: stddev as u32,
    };
    Ok(Some(ImageSettings {
        batch,
        width: whole(width),
        height: whole(height),
        format,
        source,
        sampling,
    }))
}

fn image_source(text: Option<&str>) -> RunResult<ImageSource> {
    let Some(text) = text else {
        return Ok(ImageSource::Noise);
    };
    match word(text).as_str() {
        "noise" => return Ok(ImageSource::Noise),
        "assets" => return Ok(ImageSource::Assets),
        _ => {}
    }
    let folder = PathBuf::from(text);
    if !folder.is_dir() {
        return Err(RunError::bad_option(format!(
            "--image-source {text} is neither noise, assets nor a folder: give a folder of PNG or JPEG files."
        )));
    }
    Ok(ImageSource::Folder(folder))
}

fn image_sampling(text: Option<&str>, source: &ImageSource) -> RunResult<Sampling> {
    let choices = [
        ("random-with-replacement", Sampling::RandomWithReplacement),
        ("shuffle-cycle", Sampling::ShuffleCycle),
        ("sequential-cycle", Sampling::SequentialCycle),
    ];
    let sampling = match text {
        Some(text) => choice("--image-source-sampling", text, &choices)?,
        None => Sampling::RandomWithReplacement,
    };
    if *source == ImageSource::Noise && sampling != Sampling::RandomWithReplacement {
        return Err(RunError::bad_option(
            "--image-source-sampling picks among the pictures of --image-source assets or a folder; noise has no pictures to cycle: give one of those, or drop the sampling flag.",
        ));
    }
    Ok(sampling)
}

/// kHz as given, a value above 96 taken as Hz (AIPerf's rule), in whole Hz.
fn sample_rate_hz(flag: &str, khz: f64) -> RunResult<u32> {
    let khz = if khz > 96.0 { khz / 1000.0 } else { khz };
    let khz = within(flag, khz, 1.0, 96.0, "kHz (or 1000 to 96000 Hz)")?;
    Ok((khz * 1000.0) as u32)
}

fn audio(args: &MediaArgs) -> RunResult<Option<AudioSettings>> {
    let shaped = args.audio_length_mean.is_some()
        || args.audio_length_stddev.is_some()
        || args.audio_batch_size.is_some();
    let others = args.audio_format.is_some()
        || !args.audio_sample_rates.is_empty()
        || !args.audio_depths.is_empty()
        || args.audio_num_channels.is_some();
    if !shaped && !others {
        return Ok(None);
    }
    let (length_mean, length_stddev) = spread(
        ("--audio-length-mean", args.audio_length_mean),
        ("--audio-length-stddev", args.audio_length_stddev),
        MAX_AUDIO_SECONDS,
        "seconds",
    )?
    .unwrap_or((DEFAULT_AUDIO_SECONDS, 0.0));
    let format = match &args.audio_format {
        Some(text) => choice(
            "--audio-format",
            text,
            &[("wav", AudioFormat::Wav), ("mp3", AudioFormat::Mp3)],
        )?,
        None => AudioFormat::Wav,
    };
    let sample_rates = match args.audio_sample_rates.as_slice() {
        [] => vec![16_000],
        given => (given.iter())
            .map(|&r| sample_rate_hz("--audio-sample-rates", r))
            .collect::<RunResult<_>>()?,
    };
    if let (AudioFormat::Mp3, Some(bad)) =
        (format, sample_rates.iter().find(|r| !MP3_RATES.contains(r)))
    {
        return Err(RunError::bad_option(format!(
            "--audio-format mp3 cannot hold {bad} Hz: give --audio-sample-rates from 8, 11.025, 12, 16, 22.05, 24, 32, 44.1 and 48 kHz."
        )));
    }
    let depths = match args.audio_depths.as_slice() {
        [] => vec![16],
        given => (given.iter())
            .map(|&d| depth("--audio-depths", d))
            .collect::<RunResult<_>>()?,
    };
    let channels = match args.audio_num_channels {
        None => 1,
        Some(n @ 1..=2) => n as u16,
        Some(n) => {
            return Err(RunError::bad_option(format!(
                "--audio-num-channels {n} is not 1 (mono) or 2 (stereo)."
            )))
        }
    };
    let batch = batch("--audio-batch-size", args.audio_batch_size, shaped)?;
    if length_mean <= 0.0 {
        return Ok(None);
    }
    if length_mean < MIN_AUDIO_SECONDS && batch > 0 {
        return Err(RunError::bad_option(format!(
            "--audio-length-mean {length_mean} is shorter than AIPerf's shortest clip: give at least {MIN_AUDIO_SECONDS} seconds."
        )));
    }
    Ok(Some(AudioSettings {
        batch,
        length_mean,
        length_stddev,
        format,
        sample_rates,
        depths,
        channels,
    }))
}

fn depth(flag: &str, bits: u32) -> RunResult<u16> {
    match DEPTHS.iter().find(|&&d| u32::from(d) == bits) {
        Some(&d) => Ok(d),
        None => Err(RunError::bad_option(format!(
            "{flag} {bits} is not a bit depth AIPerf writes: give 8, 16, 24 or 32."
        ))),
    }
}

#[path = "media_video.rs"]
mod video_flags;
use video_flags::video;

#[cfg(test)]
#[path = "media_tests.rs"]
mod tests;
