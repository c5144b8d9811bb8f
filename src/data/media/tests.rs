use base64::Engine as _;

use super::*;
use crate::config::media::{
    AudioFormat, AudioSettings, ImageFormat, ImageSettings, ImageSource, Sampling, Side,
    VideoFormat, VideoSettings, VideoSynth,
};

fn unbase64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .expect("standard base64")
}

/// The bytes of a data URL, and its MIME type.
fn data_url(url: &str) -> (String, Vec<u8>) {
    let (head, body) = url.split_once(',').expect("a data URL");
    let mime = head
        .strip_prefix("data:")
        .and_then(|h| h.strip_suffix(";base64"))
        .expect("data:MIME;base64,");
    (mime.to_string(), unbase64(body))
}

fn images(format: ImageFormat, source: ImageSource, batch: u32) -> MediaConfig {
    MediaConfig {
        image: Some(ImageSettings {
            batch,
            width: Side {
                mean: 64,
                stddev: 0,
            },
            height: Side {
                mean: 32,
                stddev: 0,
            },
            format,
            source,
            sampling: Sampling::RandomWithReplacement,
        }),
        ..MediaConfig::default()
    }
}

fn clips(format: AudioFormat, depths: Vec<u16>, channels: u16) -> MediaConfig {
    MediaConfig {
        audio: Some(AudioSettings {
            batch: 1,
            length_mean: 0.5,
            length_stddev: 0.0,
            format,
            sample_rates: vec![16_000],
            depths,
            channels,
        }),
        ..MediaConfig::default()
    }
}

#[test]
fn images_decode_back_to_their_size_and_format() {
    for (asked, mime, decoded) in [
        (ImageFormat::Jpeg, "image/jpeg", ::image::ImageFormat::Jpeg),
        (ImageFormat::Png, "image/png", ::image::ImageFormat::Png),
    ] {
        for source in [ImageSource::Noise, ImageSource::Assets] {
            let media = make(&images(asked, source.clone(), 2), 7, 3).unwrap();
            assert_eq!(media.len(), 3);
            for url in media.iter().flat_map(|m| &m.images) {
                let (got, bytes) = data_url(url);
                assert_eq!(got, mime);
                assert_eq!(image::decode(&bytes), (decoded, 64, 32), "{source:?}");
            }
            assert_eq!(media[0].images.len(), 2, "the batch");
        }
    }
}

#[test]
fn random_format_and_spread_sizes_vary_per_image() {
    let mut config = images(ImageFormat::Random, ImageSource::Noise, 1);
    let settings = config.image.as_mut().unwrap();
    settings.width = Side {
        mean: 40,
        stddev: 8,
    };
    let media = make(&config, 3, 40).unwrap();
    let decoded: Vec<_> = (media.iter())
        .map(|m| image::decode(&data_url(&m.images[0]).1))
        .collect();
    assert!(decoded.iter().any(|d| d.0 == ::image::ImageFormat::Png));
    assert!(decoded.iter().any(|d| d.0 == ::image::ImageFormat::Jpeg));
    assert!(decoded.iter().any(|d| d.1 != 40), "the width spreads");
    assert!(decoded.iter().all(|d| d.2 == 32), "the height does not");
}

#[test]
fn a_folder_of_pictures_is_resized_and_encoded_again() {
    let dir = tempfile::tempdir().unwrap();
    let picture = ::image::RgbImage::from_pixel(10, 10, ::image::Rgb([200, 10, 10]));
    picture.save(dir.path().join("a.png")).unwrap();
    std::fs::write(dir.path().join("broken.jpg"), b"not a picture").unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"skipped").unwrap();
    let mut config = images(ImageFormat::Jpeg, ImageSource::Folder(dir.path().into()), 1);
    config.image.as_mut().unwrap().sampling = Sampling::SequentialCycle;
    let media = make(&config, 1, 4).unwrap();
    for m in &media {
        let bytes = data_url(&m.images[0]).1;
        assert_eq!(image::decode(&bytes).1, 64);
        let decoded = ::image::load_from_memory(&bytes).unwrap().to_rgb8();
        let red = decoded.get_pixel(30, 15).0;
        assert!(red[0] > 150 && red[1] < 60, "the picture's colour: {red:?}");
    }
    let empty = tempfile::tempdir().unwrap();
    let config = images(
        ImageFormat::Png,
        ImageSource::Folder(empty.path().into()),
        1,
    );
    let message = make(&config, 1, 1).unwrap_err().to_string();
    assert!(
        message.contains("holds no .png, .jpg or .jpeg"),
        "{message}"
    );
}

#[test]
fn wav_clips_have_the_asked_header_and_aiperfs_sample_values() {
    for depth in [8u16, 16, 24, 32] {
        for channels in [1u16, 2] {
            let media = make(&clips(AudioFormat::Wav, vec![depth], channels), 5, 1).unwrap();
            let clip = &media[0].audios[0];
            assert_eq!(clip.format, "wav");
            let bytes = unbase64(&clip.base64);
            assert_eq!(&bytes[..4], b"RIFF");
            let reader = hound::WavReader::new(std::io::Cursor::new(&bytes)).unwrap();
            let spec = reader.spec();
            assert_eq!(
                (spec.sample_rate, spec.bits_per_sample, spec.channels),
                (16_000, depth, channels)
            );
            assert_eq!(reader.duration(), 8_000, "0.5 s at 16 kHz");
            if depth > 16 && channels == 1 {
                assert_eq!(bytes[40..44], 4u32.to_le_bytes(), "mono is front-centre");
            }
        }
    }
    // AIPerf's writer: 8 bits store the high byte of a 16-bit value, 24 bits a 24-bit value
    // shifted down a byte.
    assert_eq!(audio::pcm_values(&[0.1, -0.1], 8), [12, -13]);
    assert_eq!(audio::pcm_values(&[0.1], 16), [3276]);
    assert_eq!(audio::pcm_values(&[0.1], 24), [3276]);
    assert_eq!(audio::pcm_values(&[1.0], 32), [i32::MAX]);
}

#[test]
fn mp3_clips_are_mpeg_audio_of_the_asked_length() {
    let media = make(&clips(AudioFormat::Mp3, vec![16], 2), 5, 1).unwrap();
    let clip = &media[0].audios[0];
    assert_eq!(clip.format, "mp3");
    let bytes = unbase64(&clip.base64);
    assert_eq!(
        (bytes[0], bytes[1] & 0xe0),
        (0xff, 0xe0),
        "an MPEG frame sync"
    );
    let seconds = mp3_duration::from_read(&mut std::io::Cursor::new(&bytes))
        .unwrap()
        .as_secs_f64();
    assert!((0.4..0.8).contains(&seconds), "{seconds}");
}

#[test]
fn a_seed_makes_the_same_bytes_and_another_seed_others() {
    let mut config = images(ImageFormat::Png, ImageSource::Noise, 1);
    config.audio = clips(AudioFormat::Wav, vec![8, 16, 24], 1).audio;
    let first = make(&config, 11, 3).unwrap();
    assert_eq!(first, make(&config, 11, 3).unwrap());
    let other = make(&config, 12, 3).unwrap();
    assert_ne!(first[0].images, other[0].images);
    assert_ne!(first[0].audios, other[0].audios);
    assert_ne!(
        first[0].images, first[1].images,
        "each prompt its own image"
    );
}

fn ffmpeg_present() -> bool {
    std::process::Command::new("ffmpeg")
        .arg("-version")
        .output()
        .is_ok()
}

fn videos(format: VideoFormat, synth: VideoSynth) -> MediaConfig {
    MediaConfig {
        video: Some(VideoSettings {
            batch: 1,
            width: 64,
            height: 48,
            fps: 4,
            duration: 1.0,
            format,
            codec: "libvpx-vp9".into(),
            synth,
            audio: None,
        }),
        ..MediaConfig::default()
    }
}

#[test]
fn videos_are_encoded_by_ffmpeg_when_it_is_there() {
    if !ffmpeg_present() {
        eprintln!("ffmpeg is not installed: the video encoding is not checked");
        return;
    }
    let config = videos(VideoFormat::Webm, VideoSynth::Noise);
    let media = make(&config, 9, 2).unwrap();
    let (mime, bytes) = data_url(&media[0].videos[0]);
    assert_eq!(mime, "video/webm");
    assert_eq!(&bytes[..4], [0x1a, 0x45, 0xdf, 0xa3], "an EBML header");
    assert_eq!(media, make(&config, 9, 2).unwrap(), "the same frames");
    assert_ne!(media[0].videos, media[1].videos);
    let mp4 = make(&videos(VideoFormat::Mp4, VideoSynth::GridClock), 9, 1).unwrap();
    let (mime, bytes) = data_url(&mp4[0].videos[0]);
    assert_eq!((mime.as_str(), &bytes[4..8]), ("video/mp4", &b"ftyp"[..]));
    let mut bad = videos(VideoFormat::Webm, VideoSynth::MovingShapes);
    bad.video.as_mut().unwrap().codec = "no-such-encoder".into();
    let message = make(&bad, 1, 1).unwrap_err().to_string();
    assert!(message.contains("--video-codec"), "{message}");
}

#[test]
fn a_medium_with_no_item_still_marks_the_prompt() {
    let mut config = images(ImageFormat::Png, ImageSource::Noise, 0);
    let mut entries = vec![crate::data::prompts::entry(
        crate::data::Prompt {
            text: "a".into(),
            ..Default::default()
        },
        "p".into(),
    )];
    crate::data::attach_media(&mut entries, &config, 1).unwrap();
    let media = entries[0].prompt.as_ref().unwrap().media.clone().unwrap();
    assert!(media.images.is_empty());
    config.image = None;
    let mut plain = entries.clone();
    plain[0].prompt.as_mut().unwrap().media = None;
    crate::data::attach_media(&mut plain, &config, 1).unwrap();
    assert!(plain[0].prompt.as_ref().unwrap().media.is_none());
}
