//! Answers a connection has already checked for the request it sends. Whether an answer is
//! correct depends only on the request and the answer's bytes, so an answer byte for byte the
//! same as one found correct before is correct again: the check then costs one comparison of
//! a few hundred bytes instead of a decode (measured: decoding and checking a KServe answer
//! costs more than the rest of a request on the client; bench/client/README.md). A model
//! that answers the same request the same way — most do — is checked in full once per
//! connection; any answer that differs is checked in full.

use bytes::Bytes;

use super::{Failure, Request};

/// Largest answer kept: bigger ones are checked in full every time (their transfer costs far
/// more than the check).
pub const MAX_KEPT_BYTES: usize = 64 * 1024;
/// Distinct correct answers kept (a stream's answers and its final one differ; a dataset of
/// a few entries cycles through them).
const KEPT: usize = 8;

/// Correct answers recently seen on one connection, each with its request and with what the
/// check found out about it (`V`: nothing for a unary answer; whether it ends the stream for
/// a stream).
#[derive(Debug)]
pub struct CheckedAnswers<V> {
    kept: Vec<Kept<V>>,
}

#[derive(Debug)]
struct Kept<V> {
    request: usize,
    tag: u64,
    answer: Vec<u8>,
    found: V,
}

impl<V> Default for CheckedAnswers<V> {
    fn default() -> Self {
        CheckedAnswers { kept: Vec::new() }
    }
}

impl<V: Copy> CheckedAnswers<V> {
    /// What was found about this very answer to request `request` (`tag` tells apart answers
    /// whose bytes mean different things, such as the JSON length of an HTTP body).
    pub fn lookup(&self, request: usize, tag: u64, answer: &[u8]) -> Option<V> {
        self.kept
            .iter()
            .find(|k| k.request == request && k.tag == tag && k.answer == answer)
            .map(|k| k.found)
    }

    /// Keeps an answer found correct (when it is small enough to be worth keeping).
    pub fn remember(&mut self, request: usize, tag: u64, answer: &[u8], found: V) {
        if answer.len() > MAX_KEPT_BYTES {
            return;
        }
        if self.kept.len() == KEPT {
            self.kept.remove(0);
        }
        self.kept.push(Kept {
            request,
            tag,
            answer: answer.to_vec(),
            found,
        });
    }
}

/// Runs `check` on an answer message unless this connection already found the same bytes
/// correct for the same request, and remembers them once it passes.
pub fn memoised(
    memo: &mut CheckedAnswers<()>,
    request: &Request,
    message: &Bytes,
    check: impl FnOnce() -> Result<(), Failure>,
) -> Result<(), Failure> {
    if memo.lookup(request.index, 0, message).is_some() {
        return Ok(());
    }
    check()?;
    memo.remember(request.index, 0, message, ());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_same_bytes_for_the_same_request_are_known() {
        let mut memo = CheckedAnswers::<bool>::default();
        assert_eq!(memo.lookup(0, 0, b"abc"), None);
        memo.remember(0, 0, b"abc", true);
        assert_eq!(memo.lookup(0, 0, b"abc"), Some(true));
        assert_eq!(memo.lookup(0, 1, b"abc"), None, "another tag");
        assert_eq!(memo.lookup(0, 0, b"abd"), None);
        assert_eq!(memo.lookup(1, 0, b"abc"), None, "another request");
        for request in 1..=KEPT {
            memo.remember(request, 0, b"abc", false);
        }
        assert_eq!(memo.lookup(0, 0, b"abc"), None, "the oldest is forgotten");
        assert_eq!(memo.lookup(KEPT, 0, b"abc"), Some(false));
        memo.remember(0, 0, &vec![0; MAX_KEPT_BYTES + 1], true);
        assert_eq!(memo.lookup(0, 0, &vec![0; MAX_KEPT_BYTES + 1]), None);
    }
}
