//! The digests of `--cache-bust`'s trajectory markers: each single request, and each
//! session at its start, draws the next twelve hex digits from a key drawn when the run
//! starts (so no two runs, shards or trajectories share a marker, and a server's prefix
//! cache holds nothing one trajectory could reuse from another), and the request encoded
//! once with twelve placeholder characters is copied with them written in. The copy costs
//! one pass over the request's bytes, only when the flag is given.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use super::cancel::mix;
use super::Payload;
use crate::config::cache_bust::DIGEST_PLACEHOLDER;

/// Twelve lowercase hex digits: 48 bits of a trajectory's marker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Digest([u8; 12]);

impl Digest {
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

/// The run's key and the number of the next trajectory, shared by every slot of a target.
#[derive(Debug)]
pub struct BustPlan {
    key: u64,
    next: AtomicU64,
}

impl Default for BustPlan {
    fn default() -> Self {
        BustPlan::with_key(rand::random())
    }
}

impl BustPlan {
    pub fn with_key(key: u64) -> BustPlan {
        BustPlan {
            key,
            next: AtomicU64::new(0),
        }
    }

    /// The digest of the next trajectory: one atomic add and a mix.
    pub fn next_digest(&self) -> Digest {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let bits = mix(self.key ^ mix(n)) >> 16;
        let mut digits = [0u8; 12];
        for (i, digit) in digits.iter_mut().enumerate() {
            let nibble = (bits >> (44 - 4 * i)) & 0xf;
            *digit = b"0123456789abcdef"[nibble as usize];
        }
        Digest(digits)
    }
}

/// `payload` with `digest` written over its marker's placeholder; `None` when it holds
/// none (a request encoded without a marker, or not over HTTP).
pub fn fill(payload: &Payload, digest: &Digest) -> Option<Payload> {
    let Payload::Http(bytes) = payload else {
        return None;
    };
    let placeholder = DIGEST_PLACEHOLDER.as_bytes();
    let at = bytes
        .windows(placeholder.len())
        .position(|w| w == placeholder)?;
    let mut filled = bytes.to_vec();
    filled[at..at + placeholder.len()].copy_from_slice(&digest.0);
    Some(Payload::Http(Bytes::from(filled)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn digests_are_twelve_hex_digits_each_its_own() {
        let plan = BustPlan::with_key(7);
        let digests: HashSet<String> = (0..10_000)
            .map(|_| plan.next_digest().as_str().to_string())
            .collect();
        assert_eq!(digests.len(), 10_000);
        assert!(digests
            .iter()
            .all(|d| d.len() == 12 && d.bytes().all(|b| b.is_ascii_hexdigit())));
        let other = BustPlan::with_key(8).next_digest();
        assert_ne!(other, BustPlan::with_key(7).next_digest());
    }

    #[test]
    fn the_placeholder_is_filled_in_a_copy_of_the_same_length() {
        let sent =
            Bytes::from_static(b"POST / HTTP/1.1\r\n\r\n{\"m\":\"[rid:????????????]\\n\\nhi\"}");
        let digest = BustPlan::with_key(1).next_digest();
        let Some(Payload::Http(filled)) = fill(&Payload::Http(sent.clone()), &digest) else {
            panic!("not filled");
        };
        assert_eq!(filled.len(), sent.len());
        let text = String::from_utf8(filled.to_vec()).unwrap();
        assert!(
            text.contains(&format!("[rid:{}]", digest.as_str())),
            "{text}"
        );
        assert!(fill(&Payload::Http(Bytes::from_static(b"plain")), &digest).is_none());
    }
}
