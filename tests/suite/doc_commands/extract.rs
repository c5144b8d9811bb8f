//! How a command line is read out of Markdown: the fenced code blocks, their lines (with
//! `\` continuations), and the shell's words of each command (quotes, comments, operators,
//! redirections, `for` loop variables), down to the commands that run `inferperf`.

use std::collections::HashMap;

/// The info-string tag of a block whose `inferperf` lines must be refused.
pub const BAD_OPTION_TAG: &str = "bad-option";

/// A fenced code block: its info string and its lines, each with its line number in the file.
struct Block {
    info: String,
    lines: Vec<(usize, String)>,
}

/// One `inferperf` command found in a block: where it is, its words (the program first) and
/// whether it must be refused.
#[derive(Debug)]
pub struct DocCommand {
    pub place: String,
    pub words: Vec<String>,
    pub must_fail: bool,
}

/// The fenced code blocks of a Markdown text (``` or ~~~ fences).
fn fenced_blocks(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, Block)> = None;
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        let fence = ["```", "~~~"].into_iter().find(|f| trimmed.starts_with(*f));
        match (&mut open, fence) {
            (Some((marker, _)), Some(f)) if f == marker && trimmed.trim() == f => {
                if let Some((_, block)) = open.take() {
                    blocks.push(block);
                }
            }
            (Some((_, block)), _) => block.lines.push((index + 1, line.to_string())),
            (None, Some(f)) => {
                let block = Block {
                    info: trimmed[f.len()..].trim().to_string(),
                    lines: Vec::new(),
                };
                open = Some((f.to_string(), block));
            }
            (None, None) => {}
        }
    }
    blocks
}

/// The block's logical lines: a line ending in `\` goes on with the next, and a `$ ` prompt
/// is dropped. Each keeps the number of its first physical line.
fn logical_lines(block: &Block) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (number, line) in &block.lines {
        let (start, mut text) = current.take().unwrap_or((*number, String::new()));
        let line = if text.is_empty() {
            line.trim_start()
                .strip_prefix("$ ")
                .unwrap_or(line.as_str())
        } else {
            line.as_str()
        };
        match line.trim_end().strip_suffix('\\') {
            Some(head) => {
                text.push_str(head);
                text.push(' ');
                current = Some((start, text));
            }
            None => {
                text.push_str(line);
                lines.push((start, text));
            }
        }
    }
    lines.extend(current);
    lines
}

/// A piece of a shell line: a word (quotes and escapes taken off; `unresolved` when it holds
/// a `$NAME` with no value), an operator that ends a command, or a redirection.
#[derive(Debug, PartialEq)]
enum Token {
    Word { text: String, unresolved: bool },
    End,
    Redirect,
}

/// Splits a line as a POSIX shell would for our purpose: quotes, backslashes, `$NAME` from
/// `vars`, `#` comments, `| || & && ;` ending a command, `<`/`>` redirections.
fn tokens(line: &str, vars: &HashMap<String, String>) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    let mut word = String::new();
    let mut in_word = false;
    let mut unresolved = false;
    let flush = |out: &mut Vec<Token>, word: &mut String, in_word: &mut bool, unres: &mut bool| {
        if *in_word {
            out.push(Token::Word {
                text: std::mem::take(word),
                unresolved: *unres,
            });
        }
        *in_word = false;
        *unres = false;
    };
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' => flush(&mut out, &mut word, &mut in_word, &mut unresolved),
            '#' if !in_word => break,
            '\'' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == '\'' {
                        break;
                    }
                    word.push(q);
                }
            }
            '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    match q {
                        '"' => break,
                        '\\' if matches!(chars.peek(), Some('"' | '\\' | '$' | '`')) => {
                            word.extend(chars.next());
                        }
                        '$' => unresolved |= !expand(&mut chars, vars, &mut word),
                        _ => word.push(q),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.extend(chars.next());
            }
            '$' => {
                in_word = true;
                unresolved |= !expand(&mut chars, vars, &mut word);
            }
            '|' | '&' | ';' => {
                if c == '&' && chars.peek() == Some(&'>') {
                    // `&> file`: both streams to a file.
                    flush(&mut out, &mut word, &mut in_word, &mut unresolved);
                    chars.next();
                    redirect(&mut chars, &mut out);
                    continue;
                }
                flush(&mut out, &mut word, &mut in_word, &mut unresolved);
                if chars.peek() == Some(&c) {
                    chars.next();
                }
                out.push(Token::End);
            }
            '<' | '>' => {
                // A word of digits just before (`2>`) names the stream: part of the redirection.
                if !(in_word && word.chars().all(|d| d.is_ascii_digit())) {
                    flush(&mut out, &mut word, &mut in_word, &mut unresolved);
                }
                word.clear();
                in_word = false;
                if chars.peek() == Some(&'>') {
                    chars.next();
                }
                redirect(&mut chars, &mut out);
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    flush(&mut out, &mut word, &mut in_word, &mut unresolved);
    out
}

/// After `>`, `>>` or `<`: `&1` (another stream) or a target word; marks a redirection and
/// leaves the target out of the command.
fn redirect(chars: &mut std::iter::Peekable<std::str::Chars>, out: &mut Vec<Token>) {
    if chars.peek() == Some(&'&') {
        chars.next();
        while chars
            .peek()
            .is_some_and(|d| d.is_ascii_digit() || *d == '-')
        {
            chars.next();
        }
        out.push(Token::Redirect);
        return;
    }
    while chars.peek() == Some(&' ') {
        chars.next();
    }
    while chars
        .peek()
        .is_some_and(|d| !d.is_whitespace() && !"|&;".contains(*d))
    {
        chars.next();
    }
    out.push(Token::Redirect);
}

/// `$NAME` or `${NAME}` after the `$`: pushes its value and says true, or pushes the text as
/// written and says false when `vars` has no value for it.
fn expand(
    chars: &mut std::iter::Peekable<std::str::Chars>,
    vars: &HashMap<String, String>,
    word: &mut String,
) -> bool {
    let braced = chars.peek() == Some(&'{');
    if braced {
        chars.next();
    }
    let mut name = String::new();
    while let Some(&c) = chars.peek() {
        if !(c.is_ascii_alphanumeric() || c == '_') {
            break;
        }
        name.push(c);
        chars.next();
    }
    if braced && chars.peek() == Some(&'}') {
        chars.next();
    }
    match vars.get(&name) {
        Some(value) => {
            word.push_str(value);
            true
        }
        None => {
            word.push('$');
            word.push_str(&name);
            false
        }
    }
}

/// The simple commands of a line: words split at the operators, redirections left out. Each
/// word says whether it holds an unresolved variable.
fn simple_commands(tokens: Vec<Token>) -> Vec<Vec<(String, bool)>> {
    let mut commands = vec![Vec::new()];
    for token in tokens {
        match token {
            Token::Word { text, unresolved } => {
                if let Some(last) = commands.last_mut() {
                    last.push((text, unresolved));
                }
            }
            Token::End => commands.push(Vec::new()),
            Token::Redirect => {}
        }
    }
    commands.retain(|c| !c.is_empty());
    commands
}

/// Whether a word runs inferperf: `inferperf` or a path ending in `/inferperf`.
fn is_inferperf(word: &str) -> bool {
    word == "inferperf" || word.ends_with("/inferperf")
}

/// Every `inferperf` command of the blocks of one Markdown file.
pub fn doc_commands(file: &str, text: &str) -> Result<Vec<DocCommand>, String> {
    let mut found = Vec::new();
    for block in fenced_blocks(text) {
        let must_fail = block.info.split([',', ' ']).any(|t| t == BAD_OPTION_TAG);
        let mut vars = HashMap::new();
        for (number, line) in logical_lines(&block) {
            for command in simple_commands(tokens(&line, &vars)) {
                let place = format!("{file}:{number}");
                // `for NAME in FIRST …`: NAME is FIRST from here on in this block.
                if let [(keyword, _), (name, _), (word_in, _), (first, _), ..] = &command[..] {
                    if keyword == "for" && word_in == "in" {
                        vars.insert(name.clone(), first.clone());
                    }
                }
                let Some(start) = command.iter().position(|(w, _)| is_inferperf(w)) else {
                    continue;
                };
                let command = &command[start..];
                if let Some((word, _)) = command.iter().find(|(_, unresolved)| *unresolved) {
                    return Err(format!(
                        "{place}: '{word}' names a shell variable with no value here (only a `for NAME in …` loop of the same block gives one)"
                    ));
                }
                let mut words: Vec<String> = command.iter().map(|(w, _)| w.clone()).collect();
                words[0] = "inferperf".to_string();
                found.push(DocCommand {
                    place,
                    words,
                    must_fail,
                });
            }
        }
    }
    Ok(found)
}
