//! AIPerf's `--cache-bust`: a marker put in each request so that a server's prefix cache
//! cannot serve one trajectory's prompt to another (a marker of its own per single request
//! or per session, the same on each of the session's turns), or so that the warm-up's
//! work leaves nothing in the cache the measured requests could reuse (a fixed marker on
//! the warm-up's requests only). This exists so that the flag is read and checked once:
//! the data counts the marker's tokens, the encoder places it, the sender fills it in.

use crate::config::Endpoint;
use inferperf_wire::error::{RunError, RunResult};

/// The twelve characters of a trajectory marker that each send fills in.
pub const DIGEST_PLACEHOLDER: &str = "????????????";

/// Which marker goes in the requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BustKind {
    /// `[rid:DIGEST]`, a digest of its own per trajectory, in every phase.
    Trajectory,
    /// `[warmup]`, on the warm-up's requests only.
    WarmUpIsolation,
}

/// Where the marker goes and which it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheBust {
    pub kind: BustKind,
    /// In the system message when the request has one (else in the first user message).
    pub system: bool,
    /// Before the text (else after it).
    pub prefix: bool,
}

/// AIPerf's names of the places, in its order.
const PLACES: [(&str, CacheBust); 6] = [
    ("system_prefix", place(BustKind::Trajectory, true, true)),
    ("system_suffix", place(BustKind::Trajectory, true, false)),
    (
        "first_turn_prefix",
        place(BustKind::Trajectory, false, true),
    ),
    (
        "first_turn_suffix",
        place(BustKind::Trajectory, false, false),
    ),
    (
        "warmup_isolation_system",
        place(BustKind::WarmUpIsolation, true, true),
    ),
    (
        "warmup_isolation_first_turn",
        place(BustKind::WarmUpIsolation, false, true),
    ),
];

const fn place(kind: BustKind, system: bool, prefix: bool) -> CacheBust {
    CacheBust {
        kind,
        system,
        prefix,
    }
}

impl CacheBust {
    /// `--cache-bust NAME` for requests of `endpoint`; `None` for `none` or no flag.
    pub fn parse(text: Option<&str>, endpoint: Endpoint) -> RunResult<Option<CacheBust>> {
        let Some(text) = text else { return Ok(None) };
        let name = text.trim().to_ascii_lowercase().replace('-', "_");
        if name == "none" {
            return Ok(None);
        }
        let Some((_, bust)) = PLACES.iter().find(|(n, _)| *n == name) else {
            let names: Vec<&str> = PLACES.iter().map(|(n, _)| *n).collect();
            return Err(RunError::bad_option(format!(
                "--cache-bust '{text}' is not a place for the marker: use none, {}.",
                names.join(", ")
            )));
        };
        if !endpoint.takes_cache_bust() {
            return Err(RunError::bad_option(format!(
                "--cache-bust puts its marker in a chat's messages, and --endpoint-type {} sends none: use chat, responses or messages, or drop --cache-bust.",
                endpoint.facts().name
            )));
        }
        Ok(Some(*bust))
    }

    /// The marker's text in a request of the warm-up (`warm_up`) or of a measured level,
    /// a trajectory's digest still to be filled in; `None` when that phase carries none.
    pub fn text(&self, warm_up: bool) -> Option<String> {
        let marker = match self.kind {
            BustKind::WarmUpIsolation if !warm_up => return None,
            BustKind::WarmUpIsolation => "[warmup]".to_string(),
            BustKind::Trajectory => format!("[rid:{DIGEST_PLACEHOLDER}]"),
        };
        Some(match self.prefix {
            true => format!("{marker}\n\n"),
            false => format!("\n\n{marker}"),
        })
    }

    /// `text` with the marker put in (a trajectory's digest still to be filled in).
    pub fn apply(&self, marker: &str, text: &str) -> String {
        match self.prefix {
            true => format!("{marker}{text}"),
            false => format!("{text}{marker}"),
        }
    }

    /// A trajectory marker as it is sent, with `digest` (twelve hex digits) filled in.
    pub fn sent_text(&self, digest: &str) -> Option<String> {
        let text = self.text(false)?;
        Some(text.replace(DIGEST_PLACEHOLDER, digest))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_place_is_read_by_aiperf_name_and_others_refused() {
        let bust = |t| CacheBust::parse(Some(t), Endpoint::Chat);
        assert_eq!(bust("none").unwrap(), None);
        let first = bust("first_turn_suffix").unwrap().unwrap();
        assert_eq!(first, place(BustKind::Trajectory, false, false));
        assert_eq!(first.text(true).unwrap(), "\n\n[rid:????????????]");
        let warm = bust("WARMUP-ISOLATION-SYSTEM").unwrap().unwrap();
        assert_eq!(warm.text(true).unwrap(), "[warmup]\n\n");
        assert_eq!(warm.text(false), None);
        assert!(bust("middle")
            .unwrap_err()
            .to_string()
            .contains("first_turn_prefix"));
        let embeddings = CacheBust::parse(Some("system_prefix"), Endpoint::Embeddings);
        let why = embeddings.unwrap_err().to_string();
        assert!(why.contains("--endpoint-type embeddings"), "{why}");
    }
}
