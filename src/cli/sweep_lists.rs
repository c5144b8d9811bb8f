//! AIPerf's comma-separated sweeps: `--concurrency 1,2,4`, `--isl 128,512`, … each make a
//! command line per value (`--sweep-type grid`, the default, takes every combination;
//! `zip` pairs the lists by position), and each of those is a whole run of its own, in
//! AIPerf's order (dataset lists outermost, then duration, concurrency, prefill
//! concurrency, requests, sessions, users, rate, the last changing fastest), with AIPerf's
//! seeds (the given `--random-seed`, else 42, plus the variation's index unless
//! `--parameter-sweep-same-seed`) and AIPerf's folder names (`concurrency_4`, `rate_10.0`,
//! `mean_128__concurrency_4`). This module only rewrites command lines; the profile command
//! runs them.

/// A sweepable value: its names on the command line (AIPerf's and inferperf's), the last
/// part of AIPerf's key (the folder name's), and whether AIPerf reads it as a float.
struct ListFlag {
    names: &'static [&'static str],
    key: &'static str,
    float: bool,
}

/// The longest pause between two runs of a sweep.
const MAX_COOLDOWN_S: f64 = 3600.0;

/// The sweepable flags, in AIPerf's nesting order (outermost first).
static LIST_FLAGS: &[ListFlag] = &[
    ListFlag {
        names: &[
            "isl",
            "prompt-input-tokens-mean",
            "synthetic-input-tokens-mean",
        ],
        key: "mean",
        float: false,
    },
    ListFlag {
        names: &[
            "isl-stddev",
            "prompt-input-tokens-stddev",
            "synthetic-input-tokens-stddev",
        ],
        key: "stddev",
        float: true,
    },
    ListFlag {
        names: &["osl", "prompt-output-tokens-mean", "output-tokens-mean"],
        key: "mean",
        float: false,
    },
    ListFlag {
        names: &[
            "osl-stddev",
            "prompt-output-tokens-stddev",
            "output-tokens-stddev",
        ],
        key: "stddev",
        float: true,
    },
    ListFlag {
        names: &["conversation-turn-mean", "session-turns-mean"],
        key: "mean",
        float: false,
    },
    ListFlag {
        names: &["benchmark-duration"],
        key: "duration",
        float: true,
    },
    ListFlag {
        names: &["concurrency"],
        key: "concurrency",
        float: false,
    },
    ListFlag {
        names: &["prefill-concurrency"],
        key: "prefill_concurrency",
        float: false,
    },
    ListFlag {
        names: &["request-count", "num-requests"],
        key: "requests",
        float: false,
    },
    ListFlag {
        names: &["conversation-num", "num-conversations", "num-sessions"],
        key: "sessions",
        float: false,
    },
    ListFlag {
        names: &["num-users"],
        key: "users",
        float: false,
    },
    ListFlag {
        names: &["request-rate"],
        key: "rate",
        float: true,
    },
];

/// AIPerf's seed of a sweep whose line gives none.
pub const SWEEP_SEED: u64 = 42;

/// One run of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct Variation {
    /// The command line with one value per swept flag (and the variation's seed).
    pub args: Vec<String>,
    /// AIPerf's folder name for it (`concurrency_4`, `mean_128__rate_10.0`).
    pub folder: String,
    /// The swept flags and their values, as `--concurrency 4`.
    pub label: String,
}

/// A sweep: its runs in order, and the pause between two.
#[derive(Debug, Clone, PartialEq)]
pub struct Sweep {
    pub variations: Vec<Variation>,
    /// `--parameter-sweep-cooldown-seconds`.
    pub cooldown_s: f64,
}

/// A list found on the command line: where its value is, and its values.
struct Found {
    flag: &'static ListFlag,
    /// The index of the argument holding the value, and whether it is `--name=value`.
    at: usize,
    inline: Option<String>,
    values: Vec<String>,
}

/// The sweep a `profile` command line asks for by comma-separated lists (the arguments
/// after the program's name and `profile`, aliases not rewritten), or `None` when it has
/// no list. A bad list is one sentence.
pub fn expand(args: &[String]) -> Result<Option<Sweep>, String> {
    let found = find_lists(args)?;
    if found.is_empty() {
        return Ok(None);
    }
    let zip = match option_value(args, "sweep-type").as_deref() {
        None | Some("grid") => false,
        Some("zip") => true,
        Some(other) => {
            return Err(format!(
                "--sweep-type '{other}' is not grid or zip: grid runs every combination of the lists, zip pairs them by position."
            ))
        }
    };
    let combinations = match zip {
        true => zipped(&found)?,
        false => grid(&found),
    };
    let same_seed = args.iter().any(|a| a == "--parameter-sweep-same-seed");
    let base_seed = match option_value(args, "random-seed").or(option_value(args, "seed")) {
        Some(text) => text
            .parse::<u64>()
            .map_err(|_| format!("--random-seed '{text}' is not a whole number."))?,
        None => SWEEP_SEED,
    };
    let cooldown_s = match option_value(args, "parameter-sweep-cooldown-seconds") {
        Some(text) => text
            .parse::<f64>()
            .ok()
            .filter(|s| (0.0..=MAX_COOLDOWN_S).contains(s))
            .ok_or_else(|| {
                format!("--parameter-sweep-cooldown-seconds '{text}' is not a number of seconds from 0 to {MAX_COOLDOWN_S} (an hour).")
            })?,
        None => 0.0,
    };
    let variations = combinations
        .iter()
        .enumerate()
        .map(|(i, picks)| {
            let seed = base_seed + if same_seed { 0 } else { i as u64 };
            variation(args, &found, picks, seed)
        })
        .collect();
    Ok(Some(Sweep {
        variations,
        cooldown_s,
    }))
}

/// Every list on the line, in AIPerf's nesting order.
fn find_lists(args: &[String]) -> Result<Vec<Found>, String> {
    let mut found: Vec<Found> = Vec::new();
    for (i, arg) in args.iter().enumerate() {
        if arg == "--" {
            break;
        }
        let Some(long) = arg.strip_prefix("--") else {
            continue;
        };
        let (name, inline) = match long.split_once('=') {
            Some((name, value)) => (name, Some(value.to_string())),
            None => (long, None),
        };
        let Some(flag) = LIST_FLAGS.iter().find(|f| f.names.contains(&name)) else {
            continue;
        };
        let (at, text) = match &inline {
            Some(value) => (i, value.clone()),
            None => match args.get(i + 1) {
                Some(value) => (i + 1, value.clone()),
                None => continue,
            },
        };
        if !text.contains(',') {
            continue;
        }
        let values: Vec<String> = text.split(',').map(|v| v.trim().to_string()).collect();
        if values
            .iter()
            .any(|v| v.is_empty() || v.parse::<f64>().is_err())
        {
            return Err(format!(
                "--{name} '{text}' is not a comma-separated list of numbers (AIPerf's sweep, e.g. --{name} 1,2,4)."
            ));
        }
        if found.iter().any(|f| std::ptr::eq(f.flag, flag)) {
            return Err(format!(
                "--{name} is given as a list twice: give one list of its values."
            ));
        }
        found.push(Found {
            flag,
            at,
            inline: inline.map(|_| format!("--{name}")),
            values,
        });
    }
    let order = |f: &Found| LIST_FLAGS.iter().position(|l| std::ptr::eq(l, f.flag));
    found.sort_by_key(order);
    Ok(found)
}

/// Every combination, the last list changing fastest.
fn grid(found: &[Found]) -> Vec<Vec<usize>> {
    let mut combinations: Vec<Vec<usize>> = vec![Vec::new()];
    for list in found {
        combinations = combinations
            .into_iter()
            .flat_map(|picks| {
                (0..list.values.len()).map(move |v| {
                    let mut next = picks.clone();
                    next.push(v);
                    next
                })
            })
            .collect();
    }
    combinations
}

/// The lists paired by position: they must be as long as each other.
fn zipped(found: &[Found]) -> Result<Vec<Vec<usize>>, String> {
    let len = found[0].values.len();
    if let Some(other) = found.iter().find(|f| f.values.len() != len) {
        return Err(format!(
            "--sweep-type zip pairs the lists by position, but --{} has {} values and --{} has {len}: give lists of one length.",
            other.flag.names[0],
            other.values.len(),
            found[0].flag.names[0]
        ));
    }
    Ok((0..len).map(|v| vec![v; found.len()]).collect())
}

/// The command line of one combination.
fn variation(args: &[String], found: &[Found], picks: &[usize], seed: u64) -> Variation {
    let mut line = args.to_vec();
    let mut folder = Vec::new();
    let mut label = Vec::new();
    for (list, &pick) in found.iter().zip(picks) {
        let value = &list.values[pick];
        line[list.at] = match &list.inline {
            Some(flag) => format!("{flag}={value}"),
            None => value.clone(),
        };
        folder.push(format!(
            "{}_{}",
            list.flag.key,
            shown(value, list.flag.float)
        ));
        label.push(format!("--{} {value}", list.flag.names[0]));
    }
    set_option(&mut line, "random-seed", &["seed"], &seed.to_string());
    Variation {
        args: line,
        folder: folder.join("__"),
        label: label.join(" "),
    }
}

/// A value as AIPerf names it in a folder: a float as Python prints one (`10.0`).
fn shown(value: &str, float: bool) -> String {
    match value.parse::<f64>() {
        Ok(v) if float => inferperf_wire::number::python_float(v),
        _ => value.to_string(),
    }
}

/// The value of `--name VALUE` or `--name=VALUE`, the last one given.
fn option_value(args: &[String], name: &str) -> Option<String> {
    let flag = format!("--{name}");
    let mut value = None;
    for (i, arg) in args.iter().enumerate() {
        if let Some(inline) = arg.strip_prefix(&format!("{flag}=")) {
            value = Some(inline.to_string());
        } else if *arg == flag {
            value = args.get(i + 1).cloned();
        }
    }
    value
}

/// Sets `--name VALUE`, replacing it (or one of its other names) where given.
fn set_option(args: &mut Vec<String>, name: &str, others: &[&str], value: &str) {
    let names: Vec<String> = std::iter::once(name)
        .chain(others.iter().copied())
        .map(|n| format!("--{n}"))
        .collect();
    let mut i = 0;
    while i < args.len() {
        let given = names
            .iter()
            .any(|n| args[i] == *n || args[i].starts_with(&format!("{n}=")));
        if !given {
            i += 1;
            continue;
        }
        let takes_next = !args[i].contains('=');
        args.drain(i..(i + 1 + usize::from(takes_next)).min(args.len()));
    }
    args.push(format!("--{name}"));
    args.push(value.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> Vec<String> {
        text.split_whitespace().map(String::from).collect()
    }

    fn folders(text: &str) -> Vec<String> {
        let sweep = expand(&line(text)).unwrap().unwrap();
        sweep.variations.into_iter().map(|v| v.folder).collect()
    }

    #[test]
    fn a_line_without_lists_is_no_sweep() {
        assert_eq!(expand(&line("--model m --concurrency 4")).unwrap(), None);
    }

    #[test]
    fn one_list_is_a_run_per_value_in_the_order_given() {
        let sweep = expand(&line("--model m --concurrency 4,1,2"))
            .unwrap()
            .unwrap();
        let values: Vec<_> = sweep.variations.iter().map(|v| v.args[3].clone()).collect();
        assert_eq!(values, ["4", "1", "2"]);
        assert_eq!(
            folders("--model m --concurrency 4,1,2"),
            ["concurrency_4", "concurrency_1", "concurrency_2"]
        );
        // AIPerf's seeds: 42 + the index, or the given seed + the index.
        let seeds: Vec<_> = sweep.variations.iter().map(|v| v.args[5].clone()).collect();
        assert_eq!(seeds, ["42", "43", "44"]);
        let given = expand(&line("--concurrency 1,2 --random-seed 7"))
            .unwrap()
            .unwrap();
        assert_eq!(
            given.variations[1].args,
            line("--concurrency 2 --random-seed 8")
        );
        let same = expand(&line("--concurrency=1,2 --parameter-sweep-same-seed")).unwrap();
        assert_eq!(
            same.unwrap().variations[1].args,
            line("--concurrency=2 --parameter-sweep-same-seed --random-seed 42")
        );
    }

    #[test]
    fn a_grid_nests_as_aiperf_does_and_zip_pairs() {
        assert_eq!(
            folders("--request-rate 5,10 --concurrency 10,20"),
            [
                "concurrency_10__rate_5.0",
                "concurrency_10__rate_10.0",
                "concurrency_20__rate_5.0",
                "concurrency_20__rate_10.0"
            ]
        );
        assert_eq!(
            folders("--concurrency 1,2 --isl 128,512"),
            [
                "mean_128__concurrency_1",
                "mean_128__concurrency_2",
                "mean_512__concurrency_1",
                "mean_512__concurrency_2"
            ]
        );
        assert_eq!(
            folders("--sweep-type zip --isl 128,512 --osl 64,128"),
            ["mean_128__mean_64", "mean_512__mean_128"]
        );
        // A single value is no list: it stays as it is in every run.
        let one = expand(&line("--sweep-type zip --isl 1,2 --osl 3")).unwrap();
        assert_eq!(one.unwrap().variations.len(), 2);
        let err = expand(&line("--sweep-type zip --isl 1,2 --osl 3,4,5")).unwrap_err();
        assert!(err.contains("lists of one length"), "{err}");
    }

    #[test]
    fn a_bad_list_is_one_sentence() {
        let err = expand(&line("--concurrency 1,x")).unwrap_err();
        assert!(
            err.contains("not a comma-separated list of numbers"),
            "{err}"
        );
        let err = expand(&line("--concurrency 1,2 --sweep-type cube")).unwrap_err();
        assert!(err.contains("grid or zip"), "{err}");
    }
}
