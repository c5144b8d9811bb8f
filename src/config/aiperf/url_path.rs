//! AIPerf's `--url` may carry a path (`http://host:8000/v1`, or the whole
//! `http://host:8000/v1/chat/completions`): the path is kept and the endpoint's path is
//! joined to it as AIPerf joins them — not added again when the URL already ends with it,
//! one `/v1` when both have it — and a URL without a port takes its scheme's (80, 443).
//! The servers themselves stay `host:port` for the rest of the configuration.

use crate::cli::ProfileArgs;
use inferperf_wire::error::{RunError, RunResult};

/// Splits the path (and query) off every `--url`, leaving `scheme://host:port`; the one
/// path they share, if any. URLs with different paths are refused.
pub(super) fn take(args: &mut ProfileArgs) -> RunResult<Option<String>> {
    let mut shared: Option<Option<String>> = None;
    let mut urls = Vec::with_capacity(args.url.len());
    for value in &args.url {
        let mut items = Vec::new();
        for item in value.split(',') {
            let (server, path) = split(item.trim());
            match &shared {
                Some(first) if *first != path => {
                    return Err(RunError::bad_option(format!(
                        "--url {item} has another path than the first URL: every server of a run takes the same path; give them one."
                    )))
                }
                _ => shared = Some(path),
            }
            items.push(server);
        }
        urls.push(items.join(","));
    }
    args.url = urls;
    Ok(shared.flatten())
}

/// `scheme://host[:port]/path?query` as (`scheme://host:port`, `/path?query`); a URL
/// without a port gets its scheme's when it names the scheme.
fn split(url: &str) -> (String, Option<String>) {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(at) => (&rest[..at], Some(&rest[at..])),
        None => (rest, None),
    };
    let default_port = match scheme {
        Some("https") => Some(443),
        Some("http") => Some(80),
        _ => None,
    };
    let has_port = authority
        .rsplit_once(':')
        .is_some_and(|(_, port)| !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()));
    let authority = match (has_port, default_port) {
        (false, Some(port)) if !authority.is_empty() => format!("{authority}:{port}"),
        _ => authority.to_string(),
    };
    let server = match scheme {
        Some(scheme) => format!("{scheme}://{authority}"),
        None => authority,
    };
    let path = path
        .map(|p| p.trim_end_matches('/'))
        .filter(|p| !p.is_empty());
    (server, path.map(str::to_string))
}

/// The request path of a URL's `prefix` and the endpoint's `path`: the prefix alone when
/// it already ends with the endpoint's path, one `/v1` when both have it, else both.
pub(super) fn join(prefix: &str, path: &str) -> String {
    let (prefix, query) = match prefix.split_once('?') {
        Some((prefix, query)) => (prefix.trim_end_matches('/'), Some(query)),
        None => (prefix.trim_end_matches('/'), None),
    };
    let path = format!("/{}", path.trim_start_matches('/'));
    let joined = if path == "/" || prefix.ends_with(&path) {
        prefix.to_string()
    } else if prefix.ends_with("/v1") && path.starts_with("/v1/") {
        format!("{prefix}{}", &path[3..])
    } else {
        format!("{prefix}{path}")
    };
    match query {
        Some(query) => format!("{joined}?{query}"),
        None => joined,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_keeps_its_path_apart_and_gets_its_schemes_port() {
        assert_eq!(
            split("http://h:8000/v1/chat/completions"),
            ("http://h:8000".into(), Some("/v1/chat/completions".into()))
        );
        assert_eq!(split("h:8000"), ("h:8000".into(), None));
        assert_eq!(split("http://h:8000/"), ("http://h:8000".into(), None));
        assert_eq!(
            split("https://api.example.com"),
            ("https://api.example.com:443".into(), None)
        );
        assert_eq!(
            split("http://h/foo?x=1"),
            ("http://h:80".into(), Some("/foo?x=1".into()))
        );
    }

    #[test]
    fn paths_join_as_aiperf_joins_them() {
        let chat = "v1/chat/completions";
        assert_eq!(join("/v1/chat/completions", chat), "/v1/chat/completions");
        assert_eq!(join("/v1", chat), "/v1/chat/completions");
        assert_eq!(join("/foo", chat), "/foo/v1/chat/completions");
        assert_eq!(
            join("/proxy/v1?key=k", chat),
            "/proxy/v1/chat/completions?key=k"
        );
    }
}
