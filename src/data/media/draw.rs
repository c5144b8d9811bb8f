//! The few drawing steps the synthetic pictures and video frames need, on an RGB image:
//! filled boxes and ellipses (by their bounding box, edges included, as PIL draws them),
//! lines of a width, circle outlines, and text in a small built-in 5×7 bitmap font. Shapes
//! may reach past the frame; what lies outside is not drawn.

use image::{Rgb, RgbImage};

/// Sets one pixel when it lies within the image.
fn put(image: &mut RgbImage, x: i64, y: i64, color: Rgb<u8>) {
    if x >= 0 && y >= 0 && x < i64::from(image.width()) && y < i64::from(image.height()) {
        image.put_pixel(x as u32, y as u32, color);
    }
}

/// The pixel rows or columns from `a` to `b` (rounded), clipped to `0..limit`.
fn span(a: f64, b: f64, limit: u32) -> std::ops::RangeInclusive<i64> {
    let low = a.min(b).round().max(0.0) as i64;
    let high = a.max(b).round().min(f64::from(limit) - 1.0) as i64;
    low..=high
}

/// Fills the box from `(x0, y0)` to `(x1, y1)`, both corners included.
pub fn fill_box(image: &mut RgbImage, x0: f64, y0: f64, x1: f64, y1: f64, color: Rgb<u8>) {
    for y in span(y0, y1, image.height()) {
        for x in span(x0, x1, image.width()) {
            put(image, x, y, color);
        }
    }
}

/// Fills the ellipse inscribed in the box from `(x0, y0)` to `(x1, y1)`.
pub fn fill_ellipse(image: &mut RgbImage, x0: f64, y0: f64, x1: f64, y1: f64, color: Rgb<u8>) {
    let (cx, cy) = ((x0 + x1) / 2.0, (y0 + y1) / 2.0);
    let (rx, ry) = (((x1 - x0) / 2.0).max(0.5), ((y1 - y0) / 2.0).max(0.5));
    for y in span(y0, y1, image.height()) {
        for x in span(x0, x1, image.width()) {
            let (dx, dy) = ((x as f64 - cx) / rx, (y as f64 - cy) / ry);
            if dx * dx + dy * dy <= 1.0 {
                put(image, x, y, color);
            }
        }
    }
}

/// The outline of a circle of `radius` around `(cx, cy)`, `width` pixels thick inwards.
pub fn ring(image: &mut RgbImage, cx: f64, cy: f64, radius: f64, width: f64, color: Rgb<u8>) {
    for y in span(cy - radius, cy + radius, image.height()) {
        for x in span(cx - radius, cx + radius, image.width()) {
            let distance = (x as f64 - cx).hypot(y as f64 - cy);
            if distance <= radius && distance > radius - width {
                put(image, x, y, color);
            }
        }
    }
}

/// A line from `a` to `b`, `width` pixels wide: every pixel whose centre lies within half
/// the width of the segment (at least the pixels the segment crosses).
pub fn line(image: &mut RgbImage, a: (f64, f64), b: (f64, f64), width: f64, color: Rgb<u8>) {
    let half = (width / 2.0).max(0.5);
    let (dx, dy) = (b.0 - a.0, b.1 - a.1);
    let length2 = dx * dx + dy * dy;
    for y in span(a.1.min(b.1) - half, a.1.max(b.1) + half, image.height()) {
        for x in span(a.0.min(b.0) - half, a.0.max(b.0) + half, image.width()) {
            let (px, py) = (x as f64 - a.0, y as f64 - a.1);
            let t = match length2 {
                0.0 => 0.0,
                _ => ((px * dx + py * dy) / length2).clamp(0.0, 1.0),
            };
            let distance = (px - t * dx).hypot(py - t * dy);
            if distance <= half {
                put(image, x, y, color);
            }
        }
    }
}

/// Glyphs of the font: 7 rows of 5 bits, the leftmost pixel the highest bit.
const GLYPHS: [(char, [u8; 7]); 16] = [
    ('0', [14, 17, 19, 21, 25, 17, 14]),
    ('1', [4, 12, 4, 4, 4, 4, 14]),
    ('2', [14, 17, 1, 2, 4, 8, 31]),
    ('3', [31, 2, 4, 2, 1, 17, 14]),
    ('4', [2, 6, 10, 18, 31, 2, 2]),
    ('5', [31, 16, 30, 1, 1, 17, 14]),
    ('6', [6, 8, 16, 30, 17, 17, 14]),
    ('7', [31, 1, 2, 4, 8, 8, 8]),
    ('8', [14, 17, 17, 14, 17, 17, 14]),
    ('9', [14, 17, 17, 15, 1, 2, 12]),
    ('F', [31, 16, 16, 30, 16, 16, 16]),
    ('a', [0, 0, 14, 1, 15, 17, 15]),
    ('e', [0, 0, 14, 17, 31, 16, 14]),
    ('m', [0, 0, 26, 21, 21, 17, 17]),
    ('r', [0, 0, 22, 25, 16, 16, 16]),
    (' ', [0; 7]),
];

/// Writes `text` with its top-left corner at `(x, y)`, 6 pixels per character; characters
/// the font lacks are left blank.
pub fn text(image: &mut RgbImage, x: i64, y: i64, text: &str, color: Rgb<u8>) {
    for (n, c) in text.chars().enumerate() {
        let Some((_, rows)) = GLYPHS.iter().find(|(g, _)| *g == c) else {
            continue;
        };
        let left = x + 6 * n as i64;
        for (row, bits) in rows.iter().enumerate() {
            for column in 0..5 {
                if bits & (0x10 >> column) != 0 {
                    put(image, left + column, y + row as i64, color);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHITE: Rgb<u8> = Rgb([255, 255, 255]);

    fn lit(image: &RgbImage) -> usize {
        image.pixels().filter(|p| p.0 != [0, 0, 0]).count()
    }

    #[test]
    fn shapes_cover_their_boxes_and_clip_at_the_edges() {
        let mut image = RgbImage::new(40, 40);
        fill_box(&mut image, 2.0, 2.0, 5.0, 5.0, WHITE);
        assert_eq!(lit(&image), 16, "a 4x4 box, both corners included");
        let mut image = RgbImage::new(40, 40);
        fill_ellipse(&mut image, 10.0, 10.0, 30.0, 30.0, WHITE);
        let area = lit(&image) as f64;
        assert!((area - std::f64::consts::PI * 100.0).abs() < 30.0, "{area}");
        let mut image = RgbImage::new(10, 10);
        fill_ellipse(&mut image, -15.0, -15.0, 5.0, 5.0, WHITE);
        assert!(lit(&image) > 0 && image.get_pixel(0, 0).0 == [255; 3]);
        let mut image = RgbImage::new(40, 40);
        line(&mut image, (0.0, 20.0), (39.0, 20.0), 3.0, WHITE);
        assert_eq!(lit(&image), 40 * 3);
        let mut image = RgbImage::new(40, 40);
        text(&mut image, 1, 1, "Frame 12", WHITE);
        assert!(lit(&image) > 40);
        assert_eq!(image.get_pixel(1, 1).0, [255; 3], "the F's corner");
    }
}
