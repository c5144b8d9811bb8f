//! Where `--cache-bust`'s marker goes in a chat request: at the start or end of the system
//! message when the request has one and the place asks for it, else of the conversation's
//! first user message (a session's first turn, carried in every later turn's history; the
//! first user message of a trace's `messages`). The prompt is marked before its body is
//! made, so each endpoint type puts the marked text where it puts the text.

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::Value;

use crate::config::cache_bust::CacheBust;
use crate::data::Prompt;

/// A turn's prompt and history with `marker` put in its place.
pub struct Marked<'a> {
    pub prompt: Cow<'a, Prompt>,
    pub history: Cow<'a, [(String, String)]>,
}

/// `prompt` and `history` with `marker` put where `bust` says.
pub fn mark<'a>(
    bust: &CacheBust,
    marker: &str,
    prompt: &'a Prompt,
    history: &'a [(String, String)],
) -> Marked<'a> {
    let mut marked = Marked {
        prompt: Cow::Borrowed(prompt),
        history: Cow::Borrowed(history),
    };
    match (&prompt.system, history.first(), &prompt.messages) {
        (Some(system), _, _) if bust.system => {
            let text = bust.apply(marker, system);
            marked.prompt.to_mut().system = Some(Arc::from(text));
        }
        (_, Some((first, _)), _) => {
            let text = bust.apply(marker, first);
            marked.history.to_mut()[0].0 = text;
        }
        (_, None, Some(messages)) => {
            let mut messages = Value::clone(messages);
            mark_first_user(bust, marker, &mut messages);
            marked.prompt.to_mut().messages = Some(Arc::new(messages));
        }
        (_, None, None) => {
            let text = bust.apply(marker, &prompt.text);
            marked.prompt.to_mut().text = text;
        }
    }
    marked
}

/// Marks the first user message of a trace's `messages`: its text, or a text part before
/// (or after) its parts.
fn mark_first_user(bust: &CacheBust, marker: &str, messages: &mut Value) {
    let Some(list) = messages.as_array_mut() else {
        return;
    };
    let user = list.iter_mut().find(|m| m["role"] == "user");
    let Some(content) = user.and_then(|m| m.get_mut("content")) else {
        return;
    };
    match content {
        Value::String(text) => *text = bust.apply(marker, text),
        Value::Array(parts) => {
            let part = serde_json::json!({"type": "text", "text": marker.trim()});
            match bust.prefix {
                true => parts.insert(0, part),
                false => parts.push(part),
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::cache_bust::BustKind;

    fn bust(system: bool, prefix: bool) -> CacheBust {
        CacheBust {
            kind: BustKind::Trajectory,
            system,
            prefix,
        }
    }

    fn prompt(system: Option<&str>) -> Prompt {
        Prompt {
            text: "hello".into(),
            system: system.map(Arc::from),
            ..Prompt::default()
        }
    }

    #[test]
    fn the_system_message_takes_it_when_there_is_one_else_the_first_user_message() {
        let with_system = prompt(Some("rules"));
        let marked = mark(&bust(true, true), "[m]\n\n", &with_system, &[]);
        assert_eq!(marked.prompt.system.as_deref(), Some("[m]\n\nrules"));
        assert_eq!(marked.prompt.text, "hello");
        let without = prompt(None);
        let marked = mark(&bust(true, false), "\n\n[m]", &without, &[]);
        assert_eq!(marked.prompt.text, "hello\n\n[m]");
        let first_turn = mark(&bust(false, true), "[m]\n\n", &with_system, &[]);
        assert_eq!(first_turn.prompt.text, "[m]\n\nhello");
        assert_eq!(first_turn.prompt.system.as_deref(), Some("rules"));
    }

    #[test]
    fn a_later_turn_carries_it_in_its_first_user_message() {
        let history = vec![("first".to_string(), "answer".to_string())];
        let later = prompt(None);
        let marked = mark(&bust(false, true), "[m]\n\n", &later, &history);
        assert_eq!(marked.history[0].0, "[m]\n\nfirst");
        assert_eq!(marked.prompt.text, "hello");
    }

    #[test]
    fn a_traces_messages_are_marked_in_their_first_user_message() {
        let mut given = prompt(None);
        given.messages = Some(Arc::new(serde_json::json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": [{"type": "text", "text": "q"}]},
            {"role": "user", "content": "later"}
        ])));
        let marked = mark(&bust(false, true), "[m]\n\n", &given, &[]);
        let messages = marked.prompt.messages.clone().unwrap();
        assert_eq!(
            messages[1]["content"][0],
            serde_json::json!({"type": "text", "text": "[m]"})
        );
        assert_eq!(messages[2]["content"], "later");
    }
}
