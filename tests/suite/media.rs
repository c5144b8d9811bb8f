//! AIPerf's synthetic media against the embedded server's `llm` kind, whose cost model
//! (docs/embedded-server.md) is the truth: a run with images, audio clips or videos must see
//! the server count each prompt's words plus its media's tokens (an image one per 32×32
//! patch, audio 25 a second, a video its frames' patches), and its time to first token grow
//! by their prefill. Also: the Responses API's parts, a bad media part answered 400, and a
//! video run without ffmpeg refused with one sentence.

use std::process::Command;

use inferperf::measure::level::LevelResult;
use serde_json::json;

use crate::common;

const SEED: &str = "5";

/// A streamed chat run of `count` requests, one at a time, with prompts of `isl` words
/// counted by a word tokenizer, then `extra`.
async fn run(addr: &str, tokenizer: &str, isl: &str, count: &str, extra: &[&str]) -> LevelResult {
    let mut flags = vec!["--isl", isl, "--osl", "2", "--random-seed", SEED];
    flags.extend(["--concurrency", "1", "--request-count", count]);
    flags.extend_from_slice(extra);
    let mut results = common::profile(&common::chat_flags(addr, tokenizer, &flags)).await;
    results.remove(0)
}

/// The server's prompt tokens over the run, and the client's text tokens.
fn counted(level: &LevelResult) -> (u128, u128) {
    let tokens = level.merged.tokens.as_ref().expect("token figures");
    (tokens.usage_input_tokens.sum(), tokens.input_tokens.sum())
}

fn ttft_ms(level: &LevelResult) -> f64 {
    level.merged.first_response.mean() / 1e6
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn images_cost_their_patches_in_usage_and_in_time_to_first_token() {
    let server =
        common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1,prefill_us_per_token=400"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let tokenizer = tokenizer.to_str().unwrap();
    let text = run(&addr, tokenizer, "8", "6", &[]).await;
    assert_eq!(counted(&text), (6 * 8, 6 * 8), "text alone: the words");
    // 64x32: 2x1 patches; two images per prompt.
    let small = [
        "--image-width-mean",
        "64",
        "--image-height-mean",
        "32",
        "--image-batch-size",
        "2",
    ];
    let level = run(&addr, tokenizer, "8", "6", &small).await;
    assert_eq!(
        counted(&level),
        (6 * (8 + 2 * 2), 6 * 8),
        "words + 2 images of 2 patches"
    );
    // 256x256 PNGs: 64 patches, 25.6 ms of prefill more than the text's 3.2 ms.
    let large = [
        "--image-width-mean",
        "256",
        "--image-height-mean",
        "256",
        "--image-format",
        "png",
    ];
    let level = run(&addr, tokenizer, "8", "6", &large).await;
    assert_eq!(counted(&level).0, 6 * (8 + 64));
    let (with, without) = (ttft_ms(&level), ttft_ms(&text));
    let expected = 2.0 + 0.4 * 72.0;
    assert!(
        with >= expected - 1.0 && with < expected + 15.0,
        "TTFT {with} ms, expected {expected}"
    );
    assert!(
        with - without > 20.0,
        "TTFT {with} ms against {without} ms without images"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn audio_costs_25_tokens_a_second_wav_and_mp3() {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let tokenizer = tokenizer.to_str().unwrap();
    // 1 s clips at 16 kHz, 8 and 24 bits drawn per clip, stereo: 25 tokens each.
    let wav = [
        "--audio-length-mean",
        "1",
        "--audio-depths",
        "8,24",
        "--audio-num-channels",
        "2",
        "--batch-size-audio",
        "2",
    ];
    let level = run(&addr, tokenizer, "5", "4", &wav).await;
    assert_eq!(counted(&level), (4 * (5 + 2 * 25), 4 * 5));
    // MP3's length is LAME's frames: the clips the run sent, read back, set the truth.
    let mp3 = [
        "--audio-length-mean",
        "0.5",
        "--audio-format",
        "mp3",
        "--audio-sample-rates",
        "24",
    ];
    let args = common::chat_flags(
        &addr,
        tokenizer,
        &[&["--isl", "5", "--random-seed", SEED][..], &mp3].concat(),
    );
    let media = &common::config(&args).data.media;
    let clips = inferperf::data::media::make(media, SEED.parse().unwrap(), 4).unwrap();
    let expected: u128 = (clips
        .iter()
        .map(|m| mp3_tokens(&m.audios[0].base64))
        .sum::<u128>())
        + 4 * 5;
    let level = run(&addr, tokenizer, "5", "4", &mp3).await;
    assert_eq!(counted(&level).0, expected);
}

fn mp3_tokens(base64: &str) -> u128 {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(base64)
        .unwrap();
    let seconds = mp3_duration::from_read(&mut std::io::Cursor::new(bytes)).unwrap();
    assert!((0.4..0.8).contains(&seconds.as_secs_f64()), "{seconds:?}");
    (seconds.as_secs_f64() * 25.0 - 1e-9).ceil() as u128
}

fn ffmpeg_present() -> bool {
    Command::new("ffmpeg").arg("-version").output().is_ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn videos_cost_their_frames_when_ffmpeg_is_there() {
    if !ffmpeg_present() {
        eprintln!("ffmpeg is not installed (apt-get install ffmpeg): videos are not checked");
        return;
    }
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let tokenizer = tokenizer.to_str().unwrap();
    // AIPerf's effective 1 s at 4 fps: 4 frames of 2x1 patches; an audio track (here mono
    // 24-bit noise in Opus, as AIPerf's tutorial asks) costs nothing.
    let webm = [
        "--num-prompts",
        "3",
        "--video-width",
        "64",
        "--video-height",
        "32",
        "--video-audio-num-channels",
        "1",
        "--video-audio-codec",
        "libopus",
        "--video-audio-depth",
        "24",
    ];
    let level = run(&addr, tokenizer, "5", "3", &webm).await;
    assert_eq!(counted(&level), (3 * (5 + 4 * 2), 3 * 5));
    let mp4 = [
        "--num-prompts",
        "2",
        "--video-width",
        "64",
        "--video-height",
        "64",
        "--video-format",
        "mp4",
        "--video-fps",
        "3",
        "--video-duration",
        "2",
        "--video-synth-type",
        "grid_clock",
    ];
    let level = run(&addr, tokenizer, "5", "2", &mp4).await;
    assert_eq!(
        counted(&level).0,
        2 * (5 + 6 * 4),
        "6 frames of 2x2 patches"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_responses_api_takes_input_image_parts() {
    let server = common::start_server(&["chat=llm:ttft_ms=2,itl_ms=1"]).await;
    let addr = server.http_addr.to_string();
    let dir = tempfile::tempdir().unwrap();
    let tokenizer = common::word_tokenizer(dir.path());
    let flags = [
        "-m",
        "chat",
        "--endpoint-type",
        "responses",
        "--streaming",
        "-u",
        &addr,
        "--tokenizer",
        tokenizer.to_str().unwrap(),
        "--isl",
        "6",
        "--osl",
        "2",
        "--image-width-mean",
        "96",
        "--image-height-mean",
        "40",
        "--audio-length-mean",
        "0.2",
        "--concurrency",
        "1",
        "--request-count",
        "3",
    ];
    let level = common::profile(&flags).await.remove(0);
    // 3x2 patches and 5 audio tokens beside the 6 words.
    assert_eq!(counted(&level), (3 * (6 + 6 + 5), 3 * 6));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_media_part_is_a_400_with_a_sentence() {
    let server = common::start_server(&["chat=llm:ttft_ms=1"]).await;
    let http = crate::server_util::Http::new(server.http_addr);
    let body = json!({"model": "chat", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,aGVsbG8="}}
    ]}]});
    let answer = http
        .send(
            hyper::Method::POST,
            "/v1/chat/completions",
            body.to_string().into(),
            None,
        )
        .await;
    assert_eq!(answer.status, 400);
    let message = answer.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(message.contains("neither a PNG nor a JPEG"), "{message}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_video_run_without_ffmpeg_says_to_install_it() {
    let server = common::start_server(&["chat=llm:ttft_ms=1"]).await;
    let empty = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_inferperf"))
        .args([
            "profile",
            "-m",
            "chat",
            "--endpoint-type",
            "chat",
            "--tokenizer",
            "builtin",
        ])
        .args(["-u", &server.http_addr.to_string()])
        .args([
            "--video-width",
            "32",
            "--video-height",
            "32",
            "--num-prompts",
            "1",
        ])
        .env("PATH", empty.path())
        .output()
        .await
        .unwrap();
    let stderr = common::stderr(&out);
    assert_eq!(out.status.code(), Some(99), "{stderr}");
    assert!(stderr.contains("apt-get install ffmpeg"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    let bad = common::run_cli(&[
        "profile",
        "-m",
        "chat",
        "--image-format",
        "gif",
        "--endpoint-type",
        "chat",
    ])
    .await;
    assert_eq!(bad.status.code(), Some(3));
    assert!(common::stderr(&bad).contains("--image-format 'gif' is not one of png, jpeg, random"));
}
