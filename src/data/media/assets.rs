//! The pictures of `--image-source assets`: AIPerf ships four photographs for it; inferperf
//! draws four pictures of its own instead (no file is shipped), each 256×256, with smooth
//! areas and edges so that JPEG and PNG sizes are those of a picture, not of noise. They are
//! resized to each drawn size as AIPerf resizes its photographs.

use image::{Rgb, RgbImage};

use super::draw::{fill_box, fill_ellipse, line, ring};

const SIDE: u32 = 256;

/// The four pictures, always in the same order.
pub fn pictures() -> Vec<RgbImage> {
    vec![landscape(), checkerboard(), rings(), stripes()]
}

/// A sky fading to the horizon, a sun and a green hill.
fn landscape() -> RgbImage {
    let mut image = RgbImage::from_fn(SIDE, SIDE, |_, y| {
        let t = y as f64 / f64::from(SIDE);
        Rgb([(70.0 + 150.0 * t) as u8, (130.0 + 90.0 * t) as u8, 230])
    });
    fill_ellipse(&mut image, 170.0, 30.0, 220.0, 80.0, Rgb([250, 210, 60]));
    fill_ellipse(&mut image, -80.0, 150.0, 340.0, 420.0, Rgb([60, 140, 60]));
    image
}

/// Black and white squares of 32 pixels, one of them red.
fn checkerboard() -> RgbImage {
    let mut image = RgbImage::from_fn(SIDE, SIDE, |x, y| match (x / 32 + y / 32) % 2 {
        0 => Rgb([240, 240, 240]),
        _ => Rgb([20, 20, 20]),
    });
    fill_box(&mut image, 96.0, 96.0, 127.0, 127.0, Rgb([200, 30, 30]));
    image
}

/// Coloured rings around the centre.
fn rings() -> RgbImage {
    let mut image = RgbImage::from_pixel(SIDE, SIDE, Rgb([250, 245, 235]));
    let colors = [[200, 40, 40], [40, 160, 60], [40, 80, 200], [230, 170, 30]];
    for (n, color) in colors.iter().cycle().take(8).enumerate() {
        let radius = 120.0 - 14.0 * n as f64;
        ring(&mut image, 128.0, 128.0, radius, 7.0, Rgb(*color));
    }
    image
}

/// Diagonal stripes in three colours, crossed by a dark line.
fn stripes() -> RgbImage {
    let colors = [[230, 120, 40], [250, 230, 200], [60, 120, 170]];
    let mut image = RgbImage::from_fn(SIDE, SIDE, |x, y| Rgb(colors[((x + y) / 24 % 3) as usize]));
    line(
        &mut image,
        (0.0, 200.0),
        (255.0, 60.0),
        6.0,
        Rgb([30, 30, 40]),
    );
    image
}
