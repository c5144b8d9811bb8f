//! The video flags of the synthetic media (`--video-*`), read as AIPerf 0.13 reads them:
//! a video needs both sides; its rate, length, container, encoder and picture default to
//! AIPerf's configuration (4 fps, 1 s, WebM, libvpx-vp9, moving shapes); an audio track is
//! muxed in only with `--video-audio-num-channels` 1 or 2. Kept apart from the image and
//! audio flags so each file stays readable.

use super::{
    batch, choice, depth, sample_rate_hz, MediaArgs, VideoAudio, VideoFormat, VideoSettings,
    VideoSynth, MAX_VIDEO_FPS, MAX_VIDEO_RAW_BYTES, MAX_VIDEO_SECONDS, MAX_VIDEO_SIDE,
};
use inferperf_wire::error::{RunError, RunResult};
use inferperf_wire::number::within;

pub(super) fn video(args: &MediaArgs) -> RunResult<Option<VideoSettings>> {
    let (width, height) = match (args.video_width, args.video_height) {
        (Some(w), Some(h)) => (w, h),
        (None, None) => return no_video(args),
        (Some(_), None) => return Err(RunError::bad_option(
            "--video-width needs --video-height: a synthetic video has both (AIPerf makes none with one).",
        )),
        (None, Some(_)) => return Err(RunError::bad_option(
            "--video-height needs --video-width: a synthetic video has both (AIPerf makes none with one).",
        )),
    };
    let side = |flag: &str, px: u32| {
        within(
            flag,
            f64::from(px),
            1.0,
            f64::from(MAX_VIDEO_SIDE),
            "pixels",
        )
        .map(|v| v as u32)
    };
    let (width, height) = (
        side("--video-width", width)?,
        side("--video-height", height)?,
    );
    let fps = within(
        "--video-fps",
        f64::from(args.video_fps.unwrap_or(4)),
        1.0,
        f64::from(MAX_VIDEO_FPS),
        "frames per second",
    )? as u32;
    let duration = args.video_duration.unwrap_or(1.0);
    let duration = within(
        "--video-duration",
        duration,
        0.0,
        MAX_VIDEO_SECONDS,
        "seconds",
    )?;
    if duration <= 0.0 {
        return Err(RunError::bad_option(
            "--video-duration 0 makes no video: give a length above 0 seconds.",
        ));
    }
    let format = match &args.video_format {
        Some(text) => choice(
            "--video-format",
            text,
            &[("webm", VideoFormat::Webm), ("mp4", VideoFormat::Mp4)],
        )?,
        None => VideoFormat::Webm,
    };
    let synth = match &args.video_synth_type {
        Some(text) => choice(
            "--video-synth-type",
            text,
            &[
                ("moving-shapes", VideoSynth::MovingShapes),
                ("grid-clock", VideoSynth::GridClock),
                ("noise", VideoSynth::Noise),
            ],
        )?,
        None => VideoSynth::MovingShapes,
    };
    let raw = f64::from(width) * f64::from(height) * 3.0 * duration * f64::from(fps);
    if raw > MAX_VIDEO_RAW_BYTES {
        return Err(RunError::bad_option(format!(
            "A {width}x{height} video of {duration} s at {fps} fps is {:.1} GiB of frames: give a smaller size, rate or length.",
            raw / 1024f64.powi(3)
        )));
    }
    Ok(Some(VideoSettings {
        batch: batch("--video-batch-size", args.video_batch_size, true)?,
        width,
        height,
        fps,
        duration,
        format,
        codec: encoder("--video-codec", args.video_codec.as_deref())?
            .unwrap_or_else(|| "libvpx-vp9".into()),
        synth,
        audio: video_audio(args, format)?,
    }))
}

/// Video flags without a video size: AIPerf makes no video, and says nothing; inferperf
/// says so.
fn no_video(args: &MediaArgs) -> RunResult<Option<VideoSettings>> {
    match args.first_given_of("--video-") {
        Some(flag) => Err(RunError::bad_option(format!(
            "{flag} shapes synthetic videos, which need --video-width and --video-height: give both (or drop {flag})."
        ))),
        None => Ok(None),
    }
}

/// An ffmpeg encoder's name: one word (it is passed to ffmpeg as an argument).
fn encoder(flag: &str, text: Option<&str>) -> RunResult<Option<String>> {
    let Some(text) = text.map(str::trim) else {
        return Ok(None);
    };
    let fine = !text.is_empty()
        && !text.starts_with('-')
        && (text.chars()).all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    if !fine {
        return Err(RunError::bad_option(format!(
            "{flag} '{text}' is not an ffmpeg encoder name (such as libvpx-vp9 or libopus)."
        )));
    }
    Ok(Some(text.to_string()))
}

fn video_audio(args: &MediaArgs, format: VideoFormat) -> RunResult<Option<VideoAudio>> {
    let channels = match args.video_audio_num_channels.unwrap_or(0) {
        n @ 0..=2 => n as u16,
        n => {
            return Err(RunError::bad_option(format!(
                "--video-audio-num-channels {n} is not 0 (no audio track), 1 or 2."
            )))
        }
    };
    let codec = match &args.video_audio_codec {
        Some(text) => Some(choice(
            "--video-audio-codec",
            text,
            &[
                ("libvorbis", "libvorbis"),
                ("libopus", "libopus"),
                ("aac", "aac"),
            ],
        )?),
        None => None,
    };
    let sample_rate = args.video_audio_sample_rate.unwrap_or(44.1);
    let sample_rate = sample_rate_hz("--video-audio-sample-rate", sample_rate)?;
    let sample_rate = match sample_rate {
        8_000.. => sample_rate,
        _ => {
            return Err(RunError::bad_option(
                "--video-audio-sample-rate must be from 8 to 96 kHz.",
            ))
        }
    };
    let depth = depth("--video-audio-depth", args.video_audio_depth.unwrap_or(16))?;
    if channels == 0 {
        if let Some(codec) = codec {
            return Err(RunError::bad_option(format!(
                "--video-audio-codec {codec} needs an audio track: add --video-audio-num-channels 1 or 2."
            )));
        }
        return Ok(None);
    }
    let codec = codec.unwrap_or(match format {
        VideoFormat::Webm => "libvorbis",
        VideoFormat::Mp4 => "libopus",
    });
    Ok(Some(VideoAudio {
        sample_rate,
        channels,
        depth,
        codec: codec.to_string(),
    }))
}
