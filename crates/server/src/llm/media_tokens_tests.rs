use serde_json::json;

use super::*;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

fn png(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    image::RgbImage::new(width, height)
        .write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Png)
        .unwrap();
    bytes
}

fn jpeg(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = Vec::new();
    image::RgbImage::new(width, height)
        .write_to(&mut Cursor::new(&mut bytes), image::ImageFormat::Jpeg)
        .unwrap();
    bytes
}

fn wav(rate: u32, frames: u32, channels: u16, bits: u16) -> Vec<u8> {
    let spec = hound::WavSpec {
        channels,
        sample_rate: rate,
        bits_per_sample: bits,
        sample_format: hound::SampleFormat::Int,
    };
    let mut out = Cursor::new(Vec::new());
    let mut writer = hound::WavWriter::new(&mut out, spec).unwrap();
    for _ in 0..frames * u32::from(channels) {
        writer.write_sample(0i32).unwrap();
    }
    writer.finalize().unwrap();
    out.into_inner()
}

fn tokens(part: Value) -> u64 {
    part_cost(&part).unwrap().unwrap().tokens
}

#[test]
fn images_cost_a_token_per_32_pixel_patch() {
    let url = |mime: &str, bytes: &[u8]| format!("data:image/{mime};base64,{}", b64(bytes));
    let chat = json!({"type": "image_url", "image_url": {"url": url("png", &png(64, 32))}});
    assert_eq!(tokens(chat), 2);
    let responses = json!({"type": "input_image", "image_url": url("jpeg", &jpeg(65, 33))});
    assert_eq!(tokens(responses), 3 * 2, "a part-patch counts whole");
    assert_eq!(patch_tokens(512, 512), 256);
    assert_eq!(patch_tokens(1, 1), 1);
}

#[test]
fn audio_costs_25_tokens_a_second() {
    let part = |bytes: &[u8], format: &str| json!({"type": "input_audio", "input_audio": {"data": b64(bytes), "format": format}});
    assert_eq!(tokens(part(&wav(16_000, 16_000, 1, 16), "wav")), 25);
    assert_eq!(
        tokens(part(&wav(8_000, 4_001, 2, 24), "wav")),
        13,
        "0.500125 s, rounded up"
    );
    assert_eq!(tokens(part(&wav(44_100, 441, 1, 8), "wav")), 1);
    assert_eq!(
        audio_seconds_tokens(0.36),
        9,
        "float error does not add a token"
    );
    let silence = vec![0i16; 16_000];
    let mut encoder = mp3lame_encoder::Builder::new().unwrap();
    encoder.set_num_channels(1).unwrap();
    encoder.set_sample_rate(16_000).unwrap();
    let mut encoder = encoder.build().unwrap();
    let mut mp3 = Vec::with_capacity(mp3lame_encoder::max_required_buffer_size(16_000));
    encoder
        .encode_to_vec(mp3lame_encoder::MonoPcm(&silence), &mut mp3)
        .unwrap();
    mp3.reserve(7200);
    encoder
        .flush_to_vec::<mp3lame_encoder::FlushNoGap>(&mut mp3)
        .unwrap();
    let seconds = mp3_duration::from_read(&mut Cursor::new(&mp3)).unwrap();
    assert_eq!(
        tokens(part(&mp3, "mp3")),
        audio_seconds_tokens(seconds.as_secs_f64())
    );
    assert!(
        (25..=30).contains(&tokens(part(&mp3, "mp3"))),
        "about a second"
    );
}

#[test]
fn videos_cost_their_frames_when_ffmpeg_can_make_one() {
    let dir = tempfile::tempdir().unwrap();
    for (format, extra) in [("webm", &[][..]), ("mp4", &["-movflags", "faststart"][..])] {
        let out = dir.path().join(format!("v.{format}"));
        let made = std::process::Command::new("ffmpeg")
            .args(["-loglevel", "error", "-y", "-f", "lavfi", "-i"])
            .arg("testsrc=size=64x48:rate=4:duration=1.5")
            .args(["-f", format, "-vcodec", "libvpx-vp9", "-pix_fmt", "yuv420p"])
            .args(extra)
            .arg(&out)
            .status();
        if !made.is_ok_and(|s| s.success()) {
            eprintln!("ffmpeg is not installed: the video count is not checked");
            return;
        }
        let url = format!(
            "data:video/{format};base64,{}",
            b64(&std::fs::read(&out).unwrap())
        );
        let part = json!({"type": "video_url", "video_url": {"url": url}});
        assert_eq!(tokens(part), 6 * 2 * 2, "{format}: 6 frames of 2x2 patches");
    }
}

#[test]
fn other_parts_cost_nothing_and_bad_media_are_one_sentence() {
    assert_eq!(
        part_cost(&json!({"type": "text", "text": "a"})).unwrap(),
        None
    );
    assert_eq!(part_cost(&json!({"type": "image"})).unwrap(), None);
    let cases = [
        (
            json!({"type": "image_url", "image_url": {"url": "https://x/y.png"}}),
            "base64 data: URL only",
        ),
        (json!({"type": "image_url", "image_url": {}}), "needs a URL"),
        (
            json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}}),
            "not standard base64",
        ),
        (
            json!({"type": "image_url", "image_url": {"url": format!("data:image/gif;base64,{}", b64(b"GIF89a"))}}),
            "neither a PNG nor a JPEG",
        ),
        (
            json!({"type": "input_audio", "input_audio": {"data": b64(b"RIFFxx"), "format": "wav"}}),
            "not a readable WAV",
        ),
        (
            json!({"type": "input_audio", "input_audio": {"data": "", "format": "ogg"}}),
            "'ogg' is not one",
        ),
        (
            json!({"type": "input_audio", "input_audio": {"format": "wav"}}),
            "needs input_audio.data",
        ),
        (
            json!({"type": "video_url", "video_url": {"url": format!("data:video/webm;base64,{}", b64(b"nope"))}}),
            "not a readable WebM",
        ),
        (
            json!({"type": "video_url", "video_url": {"url": "data:image/png;base64,"}}),
            "must be of type video/",
        ),
    ];
    for (part, expected) in cases {
        let message = part_cost(&part).unwrap_err();
        assert!(message.contains(expected), "{part}: {message}");
    }
}
