//! Every option of AIPerf 0.13's `aiperf profile` is in inferperf's table
//! (src/cli/aiperf_flags.rs), and the table is true: an option taken is one `inferperf
//! profile` declares under each of AIPerf's names, an option refused is declared by none
//! and refused by name with its reason, and docs/aiperf.md's table says the same. The list
//! of AIPerf's flags is its own `--help`'s (tests/fixtures/aiperf-0.13-profile-flags.txt):
//! a flag AIPerf has and this table leaves out fails here.

use std::collections::BTreeSet;

use clap::CommandFactory;
use inferperf::cli::{normalize_args, refuse_aiperf_only, Cli, Taken, AIPERF_FLAGS};

/// AIPerf's long flags, from the fixture.
fn aiperf_names() -> BTreeSet<String> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/aiperf-0.13-profile-flags.txt"
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(String::from)
        .collect()
}

/// Every long name and alias `inferperf profile` declares, and AIPerf's other names it
/// rewrites to its own before parsing.
fn declared() -> BTreeSet<String> {
    let cli = Cli::command();
    let profile = cli.find_subcommand("profile").unwrap();
    let mut names: BTreeSet<String> = profile
        .get_arguments()
        .flat_map(|a| {
            let aliases = a.get_all_aliases().unwrap_or_default();
            a.get_long().into_iter().chain(aliases)
        })
        .map(String::from)
        .collect();
    names.extend(
        inferperf::cli::AIPERF_ALIASES
            .iter()
            .map(|(theirs, _)| theirs.to_string()),
    );
    names
}

#[test]
fn the_table_lists_every_aiperf_flag_once() {
    let fixture = aiperf_names();
    let mut seen = BTreeSet::new();
    for option in AIPERF_FLAGS {
        for name in option.names {
            assert!(
                seen.insert(name.to_string()),
                "--{name} is in the table twice"
            );
        }
    }
    let missing: Vec<_> = fixture.difference(&seen).collect();
    let extra: Vec<_> = seen.difference(&fixture).collect();
    assert!(
        missing.is_empty(),
        "AIPerf flags the table leaves out: {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "table names AIPerf 0.13 does not have: {extra:?}"
    );
}

#[test]
fn a_flag_taken_is_declared_and_a_flag_refused_is_not() {
    let ours = declared();
    let mut undeclared = Vec::new();
    for option in AIPERF_FLAGS {
        for name in option.names {
            let declared = ours.contains(*name);
            match option.taken {
                Taken::Refused(_) => assert!(
                    !declared,
                    "--{name} is refused in the table but inferperf declares it"
                ),
                _ if !declared => undeclared.push(*name),
                _ => {}
            }
        }
    }
    assert!(
        undeclared.is_empty(),
        "taken in the table but not declared by inferperf profile: {undeclared:?}"
    );
}

#[test]
fn a_refused_flag_is_refused_by_name_with_its_reason() {
    for option in AIPERF_FLAGS {
        let Taken::Refused(why) = option.taken else {
            continue;
        };
        for name in option.names {
            let args = ["inferperf", "profile", "-m", "m", &format!("--{name}"), "1"];
            let args = normalize_args(args.iter().map(|a| a.to_string()).collect());
            let sentence = refuse_aiperf_only(&args).unwrap_or_else(|| panic!("--{name}"));
            assert!(
                sentence.starts_with(&format!("--{name} is AIPerf's")),
                "{sentence}"
            );
            assert!(sentence.contains(why), "{sentence}");
            assert!(!sentence.contains('\n'), "{sentence}");
        }
    }
}

/// The row docs/aiperf.md gives an option: its names, how it is taken, why.
fn doc_row(names: &[&str], taken: Taken) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("`--{n}`")).collect();
    let (how, why) = match taken {
        Taken::Same => ("taken", "AIPerf's meaning"),
        Taken::Differently(why) => ("taken differently", why),
        Taken::Refused(why) => ("refused", why),
    };
    format!("| {} | {how} | {why} |", names.join(", "))
}

#[test]
fn the_book_has_the_tables_every_row() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/aiperf.md");
    let book = std::fs::read_to_string(path).unwrap();
    let rows: Vec<String> = AIPERF_FLAGS
        .iter()
        .map(|o| doc_row(o.names, o.taken))
        .collect();
    let missing: Vec<&String> = rows.iter().filter(|r| !book.contains(r.as_str())).collect();
    assert!(
        missing.is_empty(),
        "docs/aiperf.md lacks these rows of the flag table (copy them in):\n{}",
        missing
            .iter()
            .map(|r| r.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let counts = |f: fn(&Taken) -> bool| AIPERF_FLAGS.iter().filter(|o| f(&o.taken)).count();
    let summary = format!(
        "Of AIPerf 0.13's {} options, inferperf takes {} with AIPerf's meaning, {} with a meaning of its own, and refuses {}.",
        AIPERF_FLAGS.len(),
        counts(|t| *t == Taken::Same),
        counts(|t| matches!(t, Taken::Differently(_))),
        counts(|t| matches!(t, Taken::Refused(_)))
    );
    assert!(
        book.contains(&summary),
        "docs/aiperf.md should say: {summary}"
    );
}
