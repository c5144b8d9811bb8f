//! Synthetic videos encoded by the ffmpeg program, as AIPerf encodes them: the frames piped
//! in as raw RGB (`-f rawvideo -pix_fmt rgb24 -s WxH -r FPS -i pipe:`), written as the
//! container and encoder asked for in YUV 4:2:0 to a file (seekable, so WebM records its
//! duration; MP4 with `-movflags faststart`), with a Gaussian-noise WAV track muxed in when
//! the video has audio (`-acodec … -shortest`). Videos are encoded on every core at once;
//! each draws its noise from a seed taken in order from the run's, so the bytes do not
//! depend on which core made them.

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::frames::frame;
use super::sample::{derive, noise};
use crate::config::media::{VideoFormat, VideoSettings};
use inferperf_wire::error::{RunError, RunResult};

/// The program that encodes the videos, looked up on PATH.
const FFMPEG: &str = "ffmpeg";

/// The seeds one video draws from: its noise frames and its audio track.
#[derive(Clone, Copy)]
struct Seeds {
    frames: u64,
    audio: u64,
}

/// `count` videos as data URLs, in order (none when a video would have no frame).
pub fn make_videos(settings: &VideoSettings, seed: u64, count: usize) -> RunResult<Vec<Arc<str>>> {
    if count == 0 || settings.frames() == 0 {
        return Ok(Vec::new());
    }
    check_ffmpeg()?;
    // Encoding takes a while (about a second per video of VGA size): say what is going on.
    eprintln!(
        "Encoding {count} synthetic videos ({}x{}, {} frames each) with ffmpeg...",
        settings.width,
        settings.height,
        settings.frames()
    );
    let (mut frames, mut audio) = (
        derive(seed, "dataset.video.noise"),
        derive(seed, "dataset.video.audio"),
    );
    let seeds: Vec<Seeds> = (0..count)
        .map(|_| Seeds {
            frames: frames.random(),
            audio: audio.random(),
        })
        .collect();
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(count);
    let next = AtomicUsize::new(0);
    let made: Mutex<Vec<Option<RunResult<Arc<str>>>>> =
        Mutex::new((0..count).map(|_| None).collect());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(&seeds) = seeds.get(index) else {
                    break;
                };
                let video = encode(settings, seeds);
                let failed = video.is_err();
                made.lock().expect("no worker panics")[index] = Some(video);
                if failed {
                    next.store(count, Ordering::Relaxed);
                }
            });
        }
    });
    let made = made.into_inner().expect("no worker panics");
    made.into_iter().flatten().collect()
}

/// ffmpeg must be on PATH; without it, one sentence saying how to get it.
fn check_ffmpeg() -> RunResult<()> {
    match Command::new(FFMPEG).arg("-version").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(RunError::failed(format!(
            "Synthetic video needs the ffmpeg program, and `ffmpeg -version` failed ({status}): reinstall it (Debian/Ubuntu: apt-get install ffmpeg)."
        ))),
        Err(_) => Err(RunError::failed(
            "Synthetic video needs the ffmpeg program, which is not on PATH: install it (Debian/Ubuntu: apt-get install ffmpeg) or drop --video-width and --video-height.",
        )),
    }
}

/// One video: frames drawn and piped into ffmpeg, the file it wrote read back.
fn encode(settings: &VideoSettings, seeds: Seeds) -> RunResult<Arc<str>> {
    let dir = tempfile::Builder::new()
        .prefix("inferperf-video-")
        .tempdir()
        .map_err(|e| {
            RunError::failed(format!("Cannot make a folder for a synthetic video: {e}."))
        })?;
    let format = settings.format.name();
    let output = dir.path().join(format!("output.{format}"));
    let log = dir.path().join("ffmpeg.log");
    let mut command = Command::new(FFMPEG);
    command.args(["-hide_banner", "-loglevel", "error", "-y"]);
    command.args(["-f", "rawvideo", "-pix_fmt", "rgb24"]);
    command.args(["-s", &format!("{}x{}", settings.width, settings.height)]);
    command.args(["-r", &settings.fps.to_string(), "-i", "pipe:"]);
    if let Some(audio) = &settings.audio {
        let wav_path = dir.path().join("audio.wav");
        let samples = (settings.duration * f64::from(audio.sample_rate)) as usize;
        let mut rng = SmallRng::seed_from_u64(seeds.audio);
        let signal = noise(&mut rng, samples * usize::from(audio.channels));
        let wav = super::audio::wav(&signal, audio.sample_rate, audio.depth, audio.channels)?;
        std::fs::write(&wav_path, wav).map_err(|e| {
            RunError::failed(format!(
                "Cannot write a synthetic video's audio track: {e}."
            ))
        })?;
        command.arg("-i").arg(&wav_path);
        command.args(["-acodec", &audio.codec, "-shortest"]);
    }
    command.args([
        "-f",
        format,
        "-vcodec",
        &settings.codec,
        "-pix_fmt",
        "yuv420p",
    ]);
    // No random segment or track ids and no version strings: a seed makes the same bytes.
    command.args([
        "-fflags",
        "+bitexact",
        "-flags:v",
        "+bitexact",
        "-flags:a",
        "+bitexact",
    ]);
    if settings.format == VideoFormat::Mp4 {
        command.args(["-movflags", "faststart"]);
    }
    command.arg(&output);
    run_ffmpeg(command, settings, seeds, &log)?;
    let bytes = std::fs::read(&output).unwrap_or_default();
    if bytes.is_empty() {
        return Err(failure(settings, "it wrote no video"));
    }
    Ok(format!("data:video/{format};base64,{}", super::base64(&bytes)).into())
}

/// Runs ffmpeg with the frames on its standard input and its messages in `log`.
fn run_ffmpeg(
    mut command: Command,
    settings: &VideoSettings,
    seeds: Seeds,
    log: &std::path::Path,
) -> RunResult<()> {
    let log_file = std::fs::File::create(log)
        .map_err(|e| RunError::failed(format!("Cannot write ffmpeg's messages: {e}.")))?;
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(log_file);
    let mut child = command
        .spawn()
        .map_err(|e| RunError::failed(format!("Cannot start ffmpeg: {e}.")))?;
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let mut rng = SmallRng::seed_from_u64(seeds.frames);
    let size = (settings.width, settings.height);
    let frames = settings.frames();
    // A write fails when ffmpeg stops early; its exit status and messages say why.
    let _ = (0..frames)
        .try_for_each(|n| stdin.write_all(&frame(settings.synth, size, n, frames, &mut rng)));
    drop(stdin);
    let status = child
        .wait()
        .map_err(|e| RunError::failed(format!("Waiting for ffmpeg failed: {e}.")))?;
    if status.success() {
        return Ok(());
    }
    let said = std::fs::read_to_string(log).unwrap_or_default();
    let said = said
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no message");
    Err(failure(settings, &format!("{status}: {}", said.trim())))
}

fn failure(settings: &VideoSettings, why: &str) -> RunError {
    RunError::failed(format!(
        "ffmpeg could not make a {}x{} {} video with encoder {} ({why}): check --video-codec and --video-audio-codec against `ffmpeg -encoders`.",
        settings.width,
        settings.height,
        settings.format.name(),
        settings.codec
    ))
}
