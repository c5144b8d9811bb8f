//! Synthetic images as AIPerf makes them: per image a format (PNG or JPEG, or either drawn),
//! a width then a height drawn from their normal distributions, pixels from uniform noise or
//! from a picture (inferperf's own drawings, or a folder's PNG and JPEG files) resized to
//! that size, encoded as PNG at zlib level 6 or JPEG at quality 85 without chroma
//! subsampling, and written as a base64 data URL.

use std::path::PathBuf;
use std::sync::Arc;

use image::codecs::jpeg::JpegEncoder;
use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::imageops::FilterType as Resize;
use image::{DynamicImage, ImageEncoder, RgbImage};
use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::Rng;

use super::sample::{derive, pick, positive_normal_integer};
use crate::config::media::{ImageFormat, ImageSettings, ImageSource, Sampling};
use inferperf_wire::error::{RunError, RunResult};

/// AIPerf's JPEG quality and PNG compression level.
const JPEG_QUALITY: u8 = 85;
const PNG_LEVEL: u8 = 6;
/// The largest side a JPEG can have.
const MAX_SIDE: u32 = 65_535;

/// Makes a run's images, one after another, from the run's seed.
pub struct ImageMaker<'a> {
    settings: &'a ImageSettings,
    dimensions: SmallRng,
    format: SmallRng,
    noise: SmallRng,
    pictures: Option<Pictures>,
}

impl<'a> ImageMaker<'a> {
    pub fn new(settings: &'a ImageSettings, seed: u64) -> RunResult<ImageMaker<'a>> {
        let pictures = match &settings.source {
            ImageSource::Noise => None,
            ImageSource::Assets => Some(Pictures::assets(settings.sampling, seed)),
            ImageSource::Folder(dir) => Some(Pictures::folder(dir, settings.sampling, seed)?),
        };
        Ok(ImageMaker {
            settings,
            dimensions: derive(seed, "dataset.image.dimensions"),
            format: derive(seed, "dataset.image.format"),
            noise: derive(seed, "dataset.image.noise"),
            pictures,
        })
    }

    /// The next image, as a data URL.
    pub fn next_image(&mut self) -> RunResult<Arc<str>> {
        let format = match self.settings.format {
            ImageFormat::Random => pick(&mut self.format, &[ImageFormat::Png, ImageFormat::Jpeg]),
            fixed => fixed,
        };
        let (w, h) = (self.settings.width, self.settings.height);
        let width = positive_normal_integer(&mut self.dimensions, w.mean, w.stddev);
        let height = positive_normal_integer(&mut self.dimensions, h.mean, h.stddev);
        if width > MAX_SIDE || height > MAX_SIDE {
            return Err(RunError::bad_option(format!(
                "A synthetic image was drawn {width}x{height} pixels, beyond the {MAX_SIDE} an image side can have: give a smaller --image-width-mean, --image-height-mean or spread."
            )));
        }
        let image = match &mut self.pictures {
            Some(pictures) => pictures.next_resized(width, height)?,
            None => DynamicImage::ImageRgb8(noise_image(&mut self.noise, width, height)),
        };
        let (name, bytes) = encode(&image, format)?;
        Ok(format!("data:image/{name};base64,{}", super::base64(&bytes)).into())
    }
}

/// Uniform random RGB pixels.
fn noise_image(rng: &mut SmallRng, width: u32, height: u32) -> RgbImage {
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    rng.fill(pixels.as_mut_slice());
    RgbImage::from_raw(width, height, pixels).expect("the buffer has the image's size")
}

/// The image encoded, with its format's name in a MIME type (`png`, `jpeg`).
pub fn encode(image: &DynamicImage, format: ImageFormat) -> RunResult<(&'static str, Vec<u8>)> {
    let mut bytes = Vec::new();
    let failed =
        |e: image::ImageError| RunError::failed(format!("Encoding a synthetic image failed: {e}."));
    match format {
        ImageFormat::Png => {
            let encoder = PngEncoder::new_with_quality(
                &mut bytes,
                CompressionType::Level(PNG_LEVEL),
                FilterType::Adaptive,
            );
            let rgb;
            let image = match image {
                DynamicImage::ImageRgb8(_) | DynamicImage::ImageRgba8(_) => image,
                other => {
                    rgb = DynamicImage::ImageRgb8(other.to_rgb8());
                    &rgb
                }
            };
            let (w, h) = (image.width(), image.height());
            (encoder.write_image(image.as_bytes(), w, h, image.color().into())).map_err(failed)?;
            Ok(("png", bytes))
        }
        _ => {
            let rgb = image.to_rgb8();
            let mut encoder = JpegEncoder::new_with_quality(&mut bytes, JPEG_QUALITY);
            encoder.encode_image(&rgb).map_err(failed)?;
            Ok(("jpeg", bytes))
        }
    }
}

/// A finite source of pictures and the order they are picked in.
struct Pictures {
    source: PictureSource,
    /// The pictures still readable, by index.
    readable: Vec<usize>,
    sampling: Sampling,
    rng: SmallRng,
    /// What is left of the current shuffled cycle.
    cycle: Vec<usize>,
    /// The next index of a sequential cycle.
    next: usize,
}

enum PictureSource {
    Drawn(Vec<RgbImage>),
    /// PNG and JPEG files, sorted by name, read when picked.
    Files(Vec<PathBuf>),
}

impl Pictures {
    fn assets(sampling: Sampling, seed: u64) -> Pictures {
        Pictures::new(
            PictureSource::Drawn(super::assets::pictures()),
            sampling,
            seed,
        )
    }

    fn folder(dir: &std::path::Path, sampling: Sampling, seed: u64) -> RunResult<Pictures> {
        let shown = dir.display();
        let read = std::fs::read_dir(dir).map_err(|e| {
            RunError::bad_option(format!("Cannot read --image-source {shown}: {e}."))
        })?;
        let mut files: Vec<PathBuf> = (read.filter_map(Result::ok))
            .map(|e| e.path())
            .filter(|p| p.is_file() && is_picture(p))
            .collect();
        files.sort();
        if files.is_empty() {
            return Err(RunError::bad_option(format!(
                "--image-source {shown} holds no .png, .jpg or .jpeg file: give a folder of pictures."
            )));
        }
        Ok(Pictures::new(PictureSource::Files(files), sampling, seed))
    }

    fn new(source: PictureSource, sampling: Sampling, seed: u64) -> Pictures {
        let count = match &source {
            PictureSource::Drawn(p) => p.len(),
            PictureSource::Files(f) => f.len(),
        };
        Pictures {
            source,
            readable: (0..count).collect(),
            sampling,
            rng: derive(seed, "dataset.image.source"),
            cycle: Vec::new(),
            next: 0,
        }
    }

    /// The next picture resized to `width`×`height` (bicubic, as PIL's default); a file
    /// that cannot be read as PNG or JPEG is skipped from then on, as AIPerf skips it.
    fn next_resized(&mut self, width: u32, height: u32) -> RunResult<DynamicImage> {
        while !self.readable.is_empty() {
            let index = self.next_index();
            let picture = match &self.source {
                PictureSource::Drawn(drawn) => Some(DynamicImage::ImageRgb8(drawn[index].clone())),
                PictureSource::Files(files) => image::open(&files[index]).ok(),
            };
            match picture {
                Some(p) => return Ok(p.resize_exact(width, height, Resize::CatmullRom)),
                None => self.retire(index),
            }
        }
        Err(RunError::bad_option(
            "No file of --image-source could be read as a PNG or JPEG picture: give a folder of readable pictures.",
        ))
    }

    fn next_index(&mut self) -> usize {
        match self.sampling {
            Sampling::RandomWithReplacement => pick(&mut self.rng, &self.readable),
            Sampling::ShuffleCycle => {
                if self.cycle.is_empty() {
                    self.cycle = self.readable.clone();
                    self.cycle.shuffle(&mut self.rng);
                }
                self.cycle.pop().expect("a cycle of readable pictures")
            }
            Sampling::SequentialCycle => {
                let count = match &self.source {
                    PictureSource::Drawn(p) => p.len(),
                    PictureSource::Files(f) => f.len(),
                };
                loop {
                    let index = self.next;
                    self.next = (self.next + 1) % count;
                    if self.readable.contains(&index) {
                        return index;
                    }
                }
            }
        }
    }

    fn retire(&mut self, index: usize) {
        self.readable.retain(|&i| i != index);
        self.cycle.retain(|&i| i != index);
    }
}

fn is_picture(path: &std::path::Path) -> bool {
    let extension = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    ["png", "jpg", "jpeg"].contains(&extension.to_ascii_lowercase().as_str())
}

/// Reads an encoded image's size and format back (for tests and checks).
#[cfg(test)]
pub fn decode(bytes: &[u8]) -> (image::ImageFormat, u32, u32) {
    let reader = image::ImageReader::new(std::io::Cursor::new(bytes))
        .with_guessed_format()
        .expect("readable");
    let format = reader.format().expect("a known format");
    let image = reader.decode().expect("decodes");
    (format, image.width(), image.height())
}
