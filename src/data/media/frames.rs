//! The frames of a synthetic video, as AIPerf describes them: `moving_shapes` (a black frame
//! crossed by a red circle of 30 px, a green square of 25 px and a blue circle of 20 px,
//! moving in straight lines and wrapping at the edges), `grid_clock` (a dark gray frame with
//! a 32-px grid, a clock face whose hands turn once over the video, and "Frame N" in a
//! corner) and `noise` (uniform random RGB). Each frame is raw RGB, as ffmpeg reads it.

use image::{Rgb, RgbImage};
use rand::rngs::SmallRng;
use rand::Rng;

use super::draw::{fill_box, fill_ellipse, line, ring, text};
use crate::config::media::VideoSynth;

/// One of the moving shapes: where it starts, how far it moves per frame, and its look.
struct Shape {
    circle: bool,
    color: Rgb<u8>,
    size: u32,
    start: (f64, f64),
    step: (f64, f64),
}

/// The three shapes of `moving_shapes` for a `width`×`height` video of `frames` frames.
fn shapes(width: u32, height: u32, frames: u32) -> [Shape; 3] {
    let (w, h, n) = (f64::from(width), f64::from(height), f64::from(frames));
    [
        Shape {
            circle: true,
            color: Rgb([255, 0, 0]),
            size: 30,
            start: (0.0, f64::from(height / 2)),
            step: (w / n * 2.0, 0.0),
        },
        Shape {
            circle: false,
            color: Rgb([0, 255, 0]),
            size: 25,
            start: (f64::from(width / 2), 0.0),
            step: (0.0, h / n * 2.0),
        },
        Shape {
            circle: true,
            color: Rgb([0, 0, 255]),
            size: 20,
            start: (w, h),
            step: (-w / n * 1.5, -h / n * 1.5),
        },
    ]
}

/// Frame `number` (from 0) of `frames`: its RGB bytes, row by row. `noise` draws the
/// pixels of a noise video.
pub fn frame(
    synth: VideoSynth,
    (width, height): (u32, u32),
    number: u32,
    frames: u32,
    noise: &mut SmallRng,
) -> Vec<u8> {
    match synth {
        VideoSynth::MovingShapes => moving_shapes(width, height, number, frames).into_raw(),
        VideoSynth::GridClock => grid_clock(width, height, number, frames).into_raw(),
        VideoSynth::Noise => {
            let mut pixels = vec![0u8; width as usize * height as usize * 3];
            noise.fill(pixels.as_mut_slice());
            pixels
        }
    }
}

fn moving_shapes(width: u32, height: u32, number: u32, frames: u32) -> RgbImage {
    let mut image = RgbImage::new(width, height);
    for shape in shapes(width, height, frames) {
        let x = (shape.start.0 + shape.step.0 * f64::from(number)).rem_euclid(f64::from(width));
        let y = (shape.start.1 + shape.step.1 * f64::from(number)).rem_euclid(f64::from(height));
        let half = f64::from(shape.size / 2);
        let (x0, y0, x1, y1) = (x - half, y - half, x + half, y + half);
        match shape.circle {
            true => fill_ellipse(&mut image, x0, y0, x1, y1, shape.color),
            false => fill_box(&mut image, x0, y0, x1, y1, shape.color),
        }
    }
    image
}

fn grid_clock(width: u32, height: u32, number: u32, frames: u32) -> RgbImage {
    let mut image = RgbImage::from_pixel(width, height, Rgb([32, 32, 32]));
    let (w, h) = (f64::from(width), f64::from(height));
    let grid = Rgb([64, 64, 64]);
    for x in (0..width).step_by(32) {
        line(
            &mut image,
            (f64::from(x), 0.0),
            (f64::from(x), h),
            1.0,
            grid,
        );
    }
    for y in (0..height).step_by(32) {
        line(
            &mut image,
            (0.0, f64::from(y)),
            (w, f64::from(y)),
            1.0,
            grid,
        );
    }
    let center = (f64::from(width / 2), f64::from(height / 2));
    let radius = f64::from(width.min(height) / 4);
    let angle = f64::from(number) / f64::from(frames) * std::f64::consts::TAU;
    let hand = |angle: f64, length: f64| {
        let a = angle - std::f64::consts::FRAC_PI_2;
        (
            center.0 + radius * length * a.cos(),
            center.1 + radius * length * a.sin(),
        )
    };
    line(
        &mut image,
        center,
        hand(angle / 12.0, 0.6),
        3.0,
        Rgb([255, 255, 0]),
    );
    line(
        &mut image,
        center,
        hand(angle, 0.9),
        2.0,
        Rgb([255, 255, 255]),
    );
    ring(
        &mut image,
        center.0,
        center.1,
        radius,
        2.0,
        Rgb([128, 128, 128]),
    );
    let (cx, cy) = center;
    fill_ellipse(
        &mut image,
        cx - 3.0,
        cy - 3.0,
        cx + 3.0,
        cy + 3.0,
        Rgb([255, 0, 0]),
    );
    text(
        &mut image,
        10,
        10,
        &format!("Frame {number}"),
        Rgb([255, 255, 255]),
    );
    image
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn count(frame: &[u8], color: [u8; 3]) -> usize {
        frame.chunks(3).filter(|p| *p == color).count()
    }

    #[test]
    fn moving_shapes_move_and_keep_their_colors() {
        let mut rng = SmallRng::seed_from_u64(1);
        let first = frame(VideoSynth::MovingShapes, (160, 120), 0, 8, &mut rng);
        let later = frame(VideoSynth::MovingShapes, (160, 120), 3, 8, &mut rng);
        assert_eq!(first.len(), 160 * 120 * 3);
        assert_ne!(first, later, "the shapes move");
        // The green square of 25 px (a 25x25 box, its corners ±12 around the centre),
        // whole once it left the top edge.
        assert_eq!(count(&later, [0, 255, 0]), 25 * 25);
        assert!(count(&later, [255, 0, 0]) > 500, "the red circle of 30 px");
        assert!(count(&later, [0, 0, 255]) > 200, "the blue circle of 20 px");
    }

    #[test]
    fn grid_clock_and_noise_frames() {
        let mut rng = SmallRng::seed_from_u64(1);
        let clock = frame(VideoSynth::GridClock, (128, 96), 2, 4, &mut rng);
        assert!(count(&clock, [32, 32, 32]) > 128 * 96 / 2, "the background");
        assert!(count(&clock, [64, 64, 64]) > 100, "the grid");
        assert!(count(&clock, [255, 255, 0]) > 10, "the hour hand");
        let a = frame(VideoSynth::Noise, (16, 8), 0, 1, &mut rng);
        let b = frame(VideoSynth::Noise, (16, 8), 0, 1, &mut rng);
        assert_ne!(a, b);
    }
}
