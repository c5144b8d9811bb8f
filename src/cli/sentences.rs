//! What the command line says back: clap's errors as one sentence each (with perf_analyzer's
//! habits — an ambiguous prefix of a long option names the options it starts, a suggestion
//! of a different option is dropped) and the top-level help. Kept apart from `cli.rs`, which
//! only declares the flags.

use clap::CommandFactory;

use super::Cli;

/// Whether clap's tip suggests an option that is not a misspelling of the one given but a
/// different option (`--max-threads` → `--max-trials`): a suggestion is kept only when one
/// name starts with the other or they differ by at most two letters.
fn names_another_option(e: &clap::Error, tip: &str) -> bool {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(given)) = e.get(ContextKind::InvalidArg) else {
        return false;
    };
    let Some(suggested) = tip
        .strip_prefix("a similar argument exists: '")
        .and_then(|rest| rest.strip_suffix('\''))
    else {
        return false;
    };
    let given = given.split('=').next().unwrap_or(given);
    let related = given.starts_with(suggested) || suggested.starts_with(given);
    !related && strsim::levenshtein(given, suggested) > 2
}

/// The sentence for a long option that is the start of several (`--max-`): clap takes an
/// unambiguous prefix, and says only "unexpected argument" for an ambiguous one.
fn ambiguous_prefix(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(given)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let given = given.strip_prefix("--")?.split('=').next()?;
    let cli = Cli::command();
    let profile = cli.find_subcommand("profile")?;
    let names: Vec<String> = profile
        .get_arguments()
        .filter_map(|a| a.get_long())
        .filter(|long| long.starts_with(given))
        .map(|long| format!("--{long}"))
        .collect();
    (names.len() > 1 && !given.is_empty()).then(|| {
        format!(
            "--{given} is the start of several options ({}): give more of the name.",
            names.join(", ")
        )
    })
}

/// clap's error as one sentence: its first line, with its tip when it has one; a negative
/// number taken for a flag names the flag it was meant for.
pub fn clap_sentence(e: &clap::Error, args: &[String]) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() == ErrorKind::UnknownArgument {
        if let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) {
            // `-5` or `-5s`: clap reads a negative value as a flag.
            let negative =
                arg.starts_with('-') && arg[1..].starts_with(|c: char| c.is_ascii_digit());
            let at = args.iter().position(|a| a.starts_with(arg.as_str()));
            let flag = at.and_then(|i| Some((&args[i], args.get(i.checked_sub(1)?)?)));
            if let (true, Some((given, flag))) = (negative, flag) {
                return format!("{flag} takes no negative value ({given} was given).");
            }
        }
    }
    if let Some(sentence) = ambiguous_prefix(e) {
        return sentence;
    }
    let text = e.render().to_string();
    // The first paragraph is the message (a list of missing arguments continues it on
    // indented lines); a `tip:` line may sit in any paragraph; usage lines are left out.
    let head = text.split("\n\n").next().unwrap_or_default();
    let message: Vec<&str> = head
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("tip: "))
        .collect();
    let message = message.join(" ");
    let message = message.trim_start_matches("error: ");
    let message = if message.is_empty() {
        "bad arguments"
    } else {
        message
    };
    let tip = text
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("tip: "))
        .filter(|tip| !names_another_option(e, tip));
    match tip {
        Some(tip) => format!("{message} ({tip}); see inferperf --help."),
        None => format!("{message}; see inferperf --help."),
    }
}

/// The help of `inferperf --help` (long) or `-h` (short), `inferperf help` and of a bare
/// `inferperf`: the commands first, then the flags of `profile`, the command that runs when
/// none is named. None when the arguments ask for something else.
pub fn top_help(args: &[String]) -> Option<String> {
    let rest: Vec<&str> = args.iter().skip(1).map(String::as_str).collect();
    let long = match rest.as_slice() {
        ["--help"] | ["help"] => true,
        ["-h"] | [] => false,
        _ => return None,
    };
    let mut cli = Cli::command();
    cli.build();
    let render = |c: &mut clap::Command| {
        if long {
            c.render_long_help()
        } else {
            c.render_help()
        }
    };
    let top = render(&mut cli).to_string();
    let profile = cli.find_subcommand_mut("profile")?;
    let flags = render(profile).to_string();
    Some(format!("{}\n\n{flags}", top.trim_end()))
}
