//! AIPerf's flags that are headers: `--api-key` in the header its endpoint type sends it
//! in (`x-api-key` for Anthropic's messages, else `Authorization: Bearer KEY`) and
//! `--request-content-type` as `Content-Type`, each in place of a header of that name the
//! user gave.

use crate::cli::ProfileArgs;
use crate::config::endpoints::Endpoint;
use inferperf_wire::error::{RunError, RunResult};

/// `--api-key KEY` as the header AIPerf sends, after the `-H` headers and in place of one of
/// the same name: `Authorization: Bearer KEY`, or `x-api-key: KEY` for the messages type.
pub(in crate::config) fn lower(args: &mut ProfileArgs) -> RunResult<()> {
    content_type(args)?;
    let Some(key) = args.endpoints.api_key.as_deref().map(str::trim) else {
        return Ok(());
    };
    if key.is_empty() || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(RunError::bad_option(
            "--api-key is empty or holds spaces or control characters: give the key as the server issued it.",
        ));
    }
    let endpoint = args.llm.endpoint.as_deref().unwrap_or_default().trim();
    let messages = endpoint.trim_matches('/') == "v1/messages"
        || Endpoint::from_type_name(endpoint) == Some(Endpoint::Messages);
    let (name, value) = match messages {
        true => ("x-api-key", key.to_string()),
        false => ("Authorization", format!("Bearer {key}")),
    };
    replace_header(args, name, &value);
    Ok(())
}

/// `--request-content-type TYPE` as the request's `Content-Type`.
fn content_type(args: &mut ProfileArgs) -> RunResult<()> {
    let Some(given) = args.endpoints.request_content_type.clone() else {
        return Ok(());
    };
    let value = given.trim();
    if value.is_empty() || !value.bytes().all(|b| b == b' ' || b.is_ascii_graphic()) {
        return Err(RunError::bad_option(format!(
            "--request-content-type '{given}' is not a media type: give one such as application/json."
        )));
    }
    replace_header(args, "Content-Type", value);
    Ok(())
}

/// The -H headers without one named `name` (in any case), then `name: value`.
fn replace_header(args: &mut ProfileArgs, name: &str, value: &str) {
    args.headers.retain(|header| {
        let given = header.split_once(':').map_or(header.as_str(), |(n, _)| n);
        !given.trim().eq_ignore_ascii_case(name)
    });
    args.headers.push(format!("{name}: {value}"));
}
