//! The media flags read with AIPerf 0.13's effective rules, and their bad values.

use clap::Parser;

use super::*;
use crate::cli::{normalize_args, refuse_aiperf_only, Cli, Command};
use crate::config::Config;
use inferperf_wire::error::EXIT_BAD_OPTION;

fn config(args: &[&str]) -> RunResult<Config> {
    let mut all = vec!["inferperf", "profile", "-m", "m"];
    all.extend_from_slice(args);
    let line = normalize_args(all.iter().map(|s| s.to_string()).collect());
    assert_eq!(refuse_aiperf_only(&line), None, "every media flag is taken");
    let cli = Cli::try_parse_from(line).expect("flags parse");
    let Command::Profile(p) = cli.command else {
        panic!("expected profile");
    };
    Config::from_args(&p)
}

fn media(args: &[&str]) -> MediaConfig {
    let mut all = vec!["--endpoint-type", "chat"];
    all.extend_from_slice(args);
    config(&all).unwrap().data.media
}

fn refused(args: &[&str], expected: &str) {
    let mut all = vec!["--endpoint-type", "chat"];
    all.extend_from_slice(args);
    let error = config(&all).unwrap_err();
    assert_eq!(error.exit_code(), EXIT_BAD_OPTION, "{error}");
    let message = error.to_string();
    assert!(message.contains(expected), "{args:?}: {message}");
    assert_eq!(message.lines().count(), 1, "one sentence: {message}");
}

#[test]
fn no_media_flag_no_media() {
    assert_eq!(media(&[]), MediaConfig::default());
    assert!(!media(&[]).is_on());
}

#[test]
fn a_typed_size_turns_images_on_with_aiperfs_effective_defaults() {
    let image = media(&["--image-width-mean", "64.9"]).image.unwrap();
    assert_eq!(image.batch, 1, "a shape flag implies one image");
    assert_eq!(
        image.width,
        Side {
            mean: 64,
            stddev: 0
        },
        "whole pixels"
    );
    assert_eq!(
        image.height,
        Side {
            mean: 512,
            stddev: 0
        },
        "the untyped side"
    );
    assert_eq!(image.format, ImageFormat::Jpeg, "jpeg, not --help's png");
    assert_eq!(image.source, ImageSource::Noise);
    let image = media(&[
        "--image-width-mean",
        "16",
        "--image-height-mean",
        "8",
        "--image-height-stddev",
        "2.7",
        "--batch-size-image",
        "3",
        "--image-format",
        "RANDOM",
        "--image-source",
        "assets",
        "--image-source-sampling",
        "shuffle_cycle",
    ])
    .image
    .unwrap();
    assert_eq!(image.height, Side { mean: 8, stddev: 2 });
    assert_eq!(
        (image.batch, image.format, image.source, image.sampling),
        (
            3,
            ImageFormat::Random,
            ImageSource::Assets,
            Sampling::ShuffleCycle
        )
    );
    // The format alone includes images, none of them: the content still goes as parts.
    let image = media(&["--image-format", "png"]).image.unwrap();
    assert_eq!((image.batch, image.format), (0, ImageFormat::Png));
    assert_eq!(media(&["--image-width-mean", "0"]).image, None);
}

#[test]
fn audio_takes_aiperfs_lists_and_units() {
    let audio = media(&["--audio-length-mean", "2"]).audio.unwrap();
    assert_eq!(
        (audio.batch, audio.length_mean, audio.format, audio.channels),
        (1, 2.0, AudioFormat::Wav, 1)
    );
    assert_eq!((audio.sample_rates, audio.depths), (vec![16_000], vec![16]));
    let audio = media(&[
        "--audio-length-mean",
        "1",
        "--audio-sample-rates",
        "8,44100",
        "--audio-sample-rates",
        "22.05",
        "--audio-depths",
        "8,24",
        "--audio-num-channels",
        "2",
        "--audio-format",
        "mp3",
    ])
    .audio
    .unwrap();
    assert_eq!(
        audio.sample_rates,
        [8_000, 44_100, 22_050],
        "kHz, or Hz above 96"
    );
    assert_eq!((audio.depths, audio.channels), (vec![8, 24], 2));
    // A batch alone takes AIPerf's 10-second clips; other flags alone include none.
    let audio = media(&["--audio-batch-size", "2"]).audio.unwrap();
    assert_eq!((audio.batch, audio.length_mean), (2, 10.0));
    assert_eq!(
        media(&["--audio-num-channels", "2"]).audio.unwrap().batch,
        0
    );
}

#[test]
fn video_needs_both_sides_and_takes_its_effective_defaults() {
    let video = media(&["--video-width", "64", "--video-height", "48"])
        .video
        .unwrap();
    assert_eq!((video.batch, video.fps, video.duration), (1, 4, 1.0));
    assert_eq!(
        (video.format, video.synth),
        (VideoFormat::Webm, VideoSynth::MovingShapes)
    );
    assert_eq!((video.codec.as_str(), &video.audio), ("libvpx-vp9", &None));
    assert_eq!(video.frames(), 4);
    let video = media(&[
        "--video-width",
        "64",
        "--video-height",
        "48",
        "--video-synth-type",
        "grid-clock",
        "--video-format",
        "mp4",
        "--video-audio-num-channels",
        "2",
        "--video-audio-sample-rate",
        "48000",
        "--batch-size-video",
        "2",
    ])
    .video
    .unwrap();
    let audio = video.audio.unwrap();
    assert_eq!((video.synth, video.batch), (VideoSynth::GridClock, 2));
    assert_eq!((audio.sample_rate, audio.channels), (48_000, 2));
    assert_eq!(
        (audio.codec.as_str(), audio.depth),
        ("libopus", 16),
        "mp4's default"
    );
}

#[test]
fn bad_media_flags_get_one_sentence() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--image-format", "gif"],
            "--image-format 'gif' is not one of png, jpeg, random",
        ),
        (
            &["--image-width-stddev", "4"],
            "--image-width-stddev needs --image-width-mean",
        ),
        (
            &["--image-source", "/no/such/dir"],
            "neither noise, assets nor a folder",
        ),
        (
            &["--image-source-sampling", "sequential-cycle"],
            "noise has no pictures",
        ),
        (
            &["--image-width-mean", "1e9"],
            "--image-width-mean is 1000000000",
        ),
        (&["--audio-length-mean", "0.001"], "at least 0.01 seconds"),
        (
            &["--audio-length-mean", "1", "--audio-depths", "12"],
            "--audio-depths 12 is not a bit depth",
        ),
        (
            &[
                "--audio-length-mean",
                "1",
                "--audio-format",
                "mp3",
                "--audio-sample-rates",
                "44.2",
            ],
            "mp3 cannot hold 44200 Hz",
        ),
        (
            &["--audio-length-mean", "1", "--audio-num-channels", "3"],
            "not 1 (mono) or 2",
        ),
        (
            &["--audio-format", "ogg"],
            "--audio-format 'ogg' is not one of wav, mp3",
        ),
        (
            &["--video-width", "64"],
            "--video-width needs --video-height",
        ),
        (&["--video-fps", "8"], "--video-fps shapes synthetic videos"),
        (
            &[
                "--video-width",
                "64",
                "--video-height",
                "48",
                "--video-synth-type",
                "waves",
            ],
            "is not one of moving-shapes, grid-clock, noise",
        ),
        (
            &[
                "--video-width",
                "64",
                "--video-height",
                "48",
                "--video-audio-codec",
                "libopus",
            ],
            "needs an audio track",
        ),
        (
            &[
                "--video-width",
                "64",
                "--video-height",
                "48",
                "--video-codec=-x",
            ],
            "not an ffmpeg encoder name",
        ),
        (
            &[
                "--video-width",
                "8192",
                "--video-height",
                "8192",
                "--video-duration",
                "100",
            ],
            "GiB of frames",
        ),
        (
            &[
                "--video-width",
                "64",
                "--video-height",
                "48",
                "--video-duration",
                "0",
            ],
            "above 0 seconds",
        ),
        (&["--image-batch-size", "5000"], "too many per prompt"),
    ];
    for (args, expected) in cases {
        refused(args, expected);
    }
}

#[test]
fn media_go_on_synthetic_chat_or_responses_prompts_only() {
    let on_triton = config(&["--image-width-mean", "64"])
        .unwrap_err()
        .to_string();
    assert!(
        on_triton.contains("add --endpoint-type chat"),
        "{on_triton}"
    );
    let completions = ["--endpoint-type", "completions", "--audio-length-mean", "1"];
    let message = config(&completions).unwrap_err().to_string();
    assert!(
        message.contains("v1/completions has no place for them"),
        "{message}"
    );
    let responses = ["--endpoint-type", "responses", "--image-width-mean", "8"];
    assert!(config(&responses).unwrap().data.media.image.is_some());
    let video = [
        "--endpoint-type",
        "responses",
        "--video-width",
        "8",
        "--video-height",
        "8",
    ];
    let message = config(&video).unwrap_err().to_string();
    assert!(
        message.contains("The Responses API takes no video"),
        "{message}"
    );
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("p.jsonl");
    std::fs::write(&file, "{\"text\": \"x\"}\n").unwrap();
    let from_file = [
        "--input-file",
        file.to_str().unwrap(),
        "--image-width-mean",
        "8",
    ];
    refused(&from_file, "this run's prompts come from a file");
}
