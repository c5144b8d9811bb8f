//! AIPerf's flags that belong to its endpoint types beyond chat: the API key its types send
//! (as a bearer token, or Anthropic's `x-api-key`) and the shape of the synthetic query and
//! passages its rankings types send. Kept apart from the OpenAI flags so each group stays
//! readable; `config::endpoint_options` checks them.

use clap::Args;

/// The endpoint-type flags of an LLM run.
#[derive(Debug, Clone, Args, Default)]
#[command(next_help_heading = "Endpoint types (AIPerf's flags)")]
pub struct EndpointArgs {
    /// The API key sent with every request, after the -H headers (AIPerf's): as
    /// `Authorization: Bearer KEY`, or with --endpoint-type messages as Anthropic's
    /// `x-api-key: KEY`. Never written to any file or report, as -H values are not.
    #[arg(long, value_name = "KEY")]
    pub api_key: Option<String>,
    /// The Content-Type of every request (AIPerf's; default application/json), in place of
    /// a -H header of that name.
    #[arg(long, value_name = "TYPE")]
    pub request_content_type: Option<String>,
    /// Passages per synthetic rankings request, on average (AIPerf's; default 10, the value
    /// AIPerf 0.13 sends although its help says 1). For the rankings endpoint types.
    #[arg(long, value_name = "N")]
    pub rankings_passages_mean: Option<u32>,
    /// Standard deviation of the passages per rankings request (default 0).
    #[arg(long, value_name = "N")]
    pub rankings_passages_stddev: Option<u32>,
    /// Tokens per synthetic passage, on average (AIPerf's; default 128, the value AIPerf
    /// 0.13 sends although its help says 550).
    #[arg(long, value_name = "TOKENS")]
    pub rankings_passages_prompt_token_mean: Option<u32>,
    /// Standard deviation of the tokens per passage (default 0).
    #[arg(long, value_name = "TOKENS")]
    pub rankings_passages_prompt_token_stddev: Option<u32>,
    /// Tokens per synthetic rankings query, on average (AIPerf's; default 32, the value
    /// AIPerf 0.13 sends although its help says 550).
    #[arg(long, value_name = "TOKENS")]
    pub rankings_query_prompt_token_mean: Option<u32>,
    /// Standard deviation of the tokens per query (default 0).
    #[arg(long, value_name = "TOKENS")]
    pub rankings_query_prompt_token_stddev: Option<u32>,
}

/// The command line with the value of `--api-key` hidden (after `--api-key`, or as
/// `--api-key=KEY`; a prefix clap reads as the flag, `--api`, too).
pub(super) fn without_api_key(args: Vec<String>) -> Vec<String> {
    let is_flag = |name: &str| name.len() >= 3 && "api-key".starts_with(name);
    let mut hide_next = false;
    args.into_iter()
        .map(|arg| {
            if std::mem::take(&mut hide_next) && !arg.starts_with('-') {
                return "<hidden>".to_string();
            }
            let Some(long) = arg.strip_prefix("--") else {
                return arg;
            };
            match long.split_once('=') {
                Some((name, _)) if is_flag(name) => format!("--{name}=<hidden>"),
                None if is_flag(long) => {
                    hide_next = true;
                    arg
                }
                _ => arg,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_key_is_hidden_in_every_form() {
        let args = [
            "-m",
            "m",
            "--api-key",
            "s1",
            "--api-key=s2",
            "--api",
            "s3",
            "--osl",
            "4",
        ];
        let shown = without_api_key(args.iter().map(|a| a.to_string()).collect());
        let text = shown.join(" ");
        for secret in ["s1", "s2", "s3"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert_eq!(
            text,
            "-m m --api-key <hidden> --api-key=<hidden> --api <hidden> --osl 4"
        );
    }
}
