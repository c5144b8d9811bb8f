//! Synthetic audio clips as AIPerf makes them: per clip a length drawn from a normal
//! distribution (at least 0.01 s), a sample rate and a bit depth drawn from their lists, and
//! Gaussian noise (standard deviation 0.3, clipped to ±1) scaled to the depth and written as
//! WAV (PCM_U8, PCM_16, PCM_24 or PCM_32, with the sample values AIPerf's writer gives) or
//! MP3 (LAME). A clip is `input_audio` data: its container's name and its bytes in base64.

use std::io::Cursor;
use std::sync::Arc;

use rand::rngs::SmallRng;

use super::sample::{derive, noise, normal_at_least, pick};
use super::AudioClip;
use crate::config::media::{AudioFormat, AudioSettings};
use inferperf_wire::error::{RunError, RunResult};

/// The shortest clip AIPerf makes, in seconds.
const MIN_SECONDS: f64 = 0.01;

/// Makes a run's clips, one after another, from the run's seed.
pub struct AudioMaker<'a> {
    settings: &'a AudioSettings,
    duration: SmallRng,
    format: SmallRng,
    data: SmallRng,
}

impl<'a> AudioMaker<'a> {
    pub fn new(settings: &'a AudioSettings, seed: u64) -> AudioMaker<'a> {
        AudioMaker {
            settings,
            duration: derive(seed, "dataset.audio.duration"),
            format: derive(seed, "dataset.audio.format"),
            data: derive(seed, "dataset.audio.data"),
        }
    }

    /// The next clip.
    pub fn next_clip(&mut self) -> RunResult<AudioClip> {
        let s = self.settings;
        let seconds = normal_at_least(
            &mut self.duration,
            s.length_mean,
            s.length_stddev,
            MIN_SECONDS,
        );
        let rate = pick(&mut self.format, &s.sample_rates);
        let depth = pick(&mut self.format, &s.depths);
        let frames = (seconds * f64::from(rate)) as usize;
        let signal = noise(&mut self.data, frames * usize::from(s.channels));
        let bytes = match s.format {
            AudioFormat::Wav => wav(&signal, rate, depth, s.channels)?,
            AudioFormat::Mp3 => mp3(&signal, rate, s.channels)?,
        };
        Ok(AudioClip {
            format: s.format.name(),
            base64: Arc::from(super::base64(&bytes)),
        })
    }
}

/// The noise as the integers AIPerf's writer stores at `depth` bits: scaled to the depth's
/// largest value and truncated (8 bits: scaled as 16 and stored as the high byte; 24 bits:
/// scaled as 24 and stored shifted down by a byte, as libsndfile stores 32-bit integers).
pub fn pcm_values(signal: &[f64], depth: u16) -> Vec<i32> {
    let scale = |bits: i32| f64::from((1i64 << (bits - 1)) as i32 - 1);
    signal
        .iter()
        .map(|&x| match depth {
            8 => (x * scale(16)) as i32 >> 8,
            16 => (x * scale(16)) as i32,
            24 => (x * scale(24)) as i32 >> 8,
            _ => (x * 2_147_483_647.0) as i32,
        })
        .collect()
}

/// A RIFF WAV file of integer PCM (interleaved channels).
pub fn wav(signal: &[f64], rate: u32, depth: u16, channels: u16) -> RunResult<Vec<u8>> {
    let spec = hound::WavSpec {
        channels,
        sample_rate: rate,
        bits_per_sample: depth,
        sample_format: hound::SampleFormat::Int,
    };
    let failed =
        |e: hound::Error| RunError::failed(format!("Writing a synthetic WAV clip failed: {e}."));
    let mut out = Cursor::new(Vec::new());
    let mut writer = hound::WavWriter::new(&mut out, spec).map_err(failed)?;
    for value in pcm_values(signal, depth) {
        match depth {
            8 => writer.write_sample(value as i8),
            16 => writer.write_sample(value as i16),
            _ => writer.write_sample(value),
        }
        .map_err(failed)?;
    }
    writer.finalize().map_err(failed)?;
    let mut bytes = out.into_inner();
    mono_is_centre(&mut bytes, channels);
    Ok(bytes)
}

/// hound writes 24- and 32-bit files with the extensible header, whose channel mask says
/// front-left for one channel; a mono file's is front-centre (ffmpeg's libopus refuses a
/// lone front-left channel).
fn mono_is_centre(wav: &mut [u8], channels: u16) {
    const EXTENSIBLE: [u8; 2] = 0xfffe_u16.to_le_bytes();
    const MASK_AT: std::ops::Range<usize> = 40..44;
    if channels == 1 && wav.get(20..22) == Some(&EXTENSIBLE[..]) && wav.len() >= MASK_AT.end {
        wav[MASK_AT].copy_from_slice(&4u32.to_le_bytes());
    }
}

/// An MP3 file (LAME's defaults for the rate and channels) of the noise at 16 bits.
pub fn mp3(signal: &[f64], rate: u32, channels: u16) -> RunResult<Vec<u8>> {
    use mp3lame_encoder::{Builder, FlushNoGap, InterleavedPcm, MonoPcm};
    let failed =
        |what: &str| RunError::failed(format!("Encoding a synthetic MP3 clip failed: {what}."));
    let mut builder = Builder::new().ok_or_else(|| failed("LAME could not start"))?;
    builder
        .set_num_channels(channels as u8)
        .map_err(|e| failed(&e.to_string()))?;
    builder
        .set_sample_rate(rate)
        .map_err(|e| failed(&e.to_string()))?;
    let mut encoder = builder.build().map_err(|e| failed(&e.to_string()))?;
    let samples: Vec<i16> = pcm_values(signal, 16)
        .into_iter()
        .map(|v| v as i16)
        .collect();
    let mut out = Vec::with_capacity(mp3lame_encoder::max_required_buffer_size(samples.len()));
    let encoded = match channels {
        1 => encoder.encode_to_vec(MonoPcm(&samples), &mut out),
        _ => encoder.encode_to_vec(InterleavedPcm(&samples), &mut out),
    };
    encoded.map_err(|e| failed(&e.to_string()))?;
    out.reserve(7200);
    (encoder.flush_to_vec::<FlushNoGap>(&mut out)).map_err(|e| failed(&e.to_string()))?;
    Ok(out)
}
