//! AIPerf's `--apply-chat-template`: a chat prompt's input tokens counted as the model
//! sees them, rendered through the tokenizer's own chat template (`chat_template` of the
//! `tokenizer_config.json` beside its `tokenizer.json`, with its `bos_token` and
//! `eos_token`, and the generation prompt asked for) before it is counted; the template's
//! tokens are taken from synthetic prompts so the input is as long as asked. A tokenizer
//! with no template counts the text alone, as AIPerf does.

use std::path::Path;

use minijinja::{context, Environment, Error, ErrorKind};
use serde_json::{json, Value};

use super::entry::Prompt;
use inferperf_wire::error::{RunError, RunResult};

/// A tokenizer's chat template, ready to render.
pub struct ChatTemplate {
    env: Environment<'static>,
    bos: String,
    eos: String,
}

impl ChatTemplate {
    /// The template of the `tokenizer_config.json` in `dir`; `None` when there is no such
    /// file or it has no template.
    pub fn beside(dir: &Path) -> RunResult<Option<ChatTemplate>> {
        let file = dir.join("tokenizer_config.json");
        let Ok(text) = std::fs::read_to_string(&file) else {
            return Ok(None);
        };
        let bad = |why: String| {
            RunError::bad_option(format!(
                "--apply-chat-template: {} {why}: mend the file, or drop --apply-chat-template.",
                file.display()
            ))
        };
        let config: Value =
            serde_json::from_str(&text).map_err(|e| bad(format!("is not JSON ({e})")))?;
        let Some(source) = template_source(&config["chat_template"]) else {
            return Ok(None);
        };
        let mut env = Environment::new();
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |why: String| -> Result<String, Error> {
            Err(Error::new(ErrorKind::InvalidOperation, why))
        });
        env.add_template_owned("chat", source)
            .map_err(|e| bad(format!("holds a chat template that does not parse ({e})")))?;
        Ok(Some(ChatTemplate {
            env,
            bos: token_text(&config["bos_token"]),
            eos: token_text(&config["eos_token"]),
        }))
    }

    /// `messages` as the model sees them, the generation prompt after them.
    pub fn render(&self, messages: &[Value]) -> Result<String, String> {
        let template = self.env.get_template("chat").map_err(|e| e.to_string())?;
        template
            .render(context! {
                messages => messages.iter().map(jinja).collect::<Vec<_>>(),
                add_generation_prompt => true,
                bos_token => &self.bos,
                eos_token => &self.eos,
            })
            .map_err(|e| e.to_string())
    }
}

/// A JSON value as the template reads it.
fn jinja(value: &Value) -> minijinja::Value {
    match value {
        Value::Null => minijinja::Value::from(()),
        Value::Bool(b) => minijinja::Value::from(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => minijinja::Value::from(i),
            None => minijinja::Value::from(n.as_f64().unwrap_or_default()),
        },
        Value::String(s) => minijinja::Value::from(s.as_str()),
        Value::Array(items) => items.iter().map(jinja).collect::<Vec<_>>().into(),
        Value::Object(fields) => (fields.iter())
            .map(|(k, v)| (k.clone(), jinja(v)))
            .collect::<std::collections::BTreeMap<_, _>>()
            .into(),
    }
}

/// `chat_template` as a string, or the `default` (else the first) of a named list.
fn template_source(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(list) => {
            let named = |name: &str| list.iter().find(|t| t["name"] == name);
            let chosen = named("default").or_else(|| list.first())?;
            chosen["template"].as_str().map(str::to_string)
        }
        _ => None,
    }
}

/// A special token's text: a string, or an added token's `content`.
fn token_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other["content"].as_str().unwrap_or_default().to_string(),
    }
}

/// The chat messages of a prompt as the chat endpoint sends them: the system message, then
/// the trace's messages or the prompt's text as one user message.
pub fn prompt_messages(prompt: &Prompt) -> Vec<Value> {
    let mut messages = Vec::with_capacity(2);
    if let Some(system) = &prompt.system {
        messages.push(json!({"role": "system", "content": system.as_ref()}));
    }
    match prompt.messages.as_deref() {
        Some(Value::Array(given)) => messages.extend(given.iter().cloned()),
        _ => messages.push(json!({"role": "user", "content": prompt.text})),
    }
    messages
}

/// The messages of a session's turn as the chat endpoint sends them: the system message,
/// each earlier prompt and its answer, then the turn's prompt.
pub fn conversation_messages(prompt: &Prompt, history: &[(String, String)]) -> Vec<Value> {
    let mut messages = prompt_messages(prompt);
    let at = usize::from(prompt.system.is_some());
    let earlier = history.iter().flat_map(|(asked, answered)| {
        [
            json!({"role": "user", "content": asked}),
            json!({"role": "assistant", "content": answered}),
        ]
    });
    messages.splice(at..at, earlier);
    messages
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_renders_messages_with_its_special_tokens_and_the_generation_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let config = json!({
            "bos_token": {"content": "<s>"}, "eos_token": "</s>",
            "chat_template": [{"name": "tool_use", "template": "x"}, {"name": "default", "template":
                "{{ bos_token }}{% for m in messages %}{% if m['role'] == 'tool' %}{{ raise_exception('no tools') }}{% endif %}{{ m['role'] }}: {{ m['content'].strip() }}{{ eos_token }}\n{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}"}]
        });
        std::fs::write(dir.path().join("tokenizer_config.json"), config.to_string()).unwrap();
        let template = ChatTemplate::beside(dir.path()).unwrap().unwrap();
        let text = template
            .render(&[json!({"role": "user", "content": " hi "})])
            .unwrap();
        assert_eq!(text, "<s>user: hi</s>\nassistant:");
        let refused = template.render(&[json!({"role": "tool", "content": "x"})]);
        assert!(refused.unwrap_err().contains("no tools"));
    }

    #[test]
    fn no_file_or_no_template_is_none_and_a_broken_one_a_sentence() {
        let dir = tempfile::tempdir().unwrap();
        assert!(ChatTemplate::beside(dir.path()).unwrap().is_none());
        let file = dir.path().join("tokenizer_config.json");
        std::fs::write(&file, r#"{"bos_token": "<s>"}"#).unwrap();
        assert!(ChatTemplate::beside(dir.path()).unwrap().is_none());
        std::fs::write(&file, r#"{"chat_template": "{% for %}"}"#).unwrap();
        let why = ChatTemplate::beside(dir.path()).err().unwrap().to_string();
        assert!(why.contains("does not parse"), "{why}");
    }
}
