//! `template`: a body rendered from the Jinja template of `--extra-inputs
//! payload_template:...` (AIPerf's named `nv-embedqa`, a file, or the template inline),
//! with HTML autoescape as AIPerf's Jinja2 renders it (`"` is `&#34;`; `|tojson` is left as
//! it is), then the other extra inputs over the rendered JSON. The URL gets no path of its
//! own. The variables are AIPerf's: `text`, `texts`, `query`, `queries`, `passage`,
//! `passages`, `texts_by_name`, `image(s)`, `audio(s)`, `video(s)` and their `_by_name`
//! (empty until prompts carry media), `model`, `max_tokens`, `role`, `stream`, `turn` and
//! `turns` (the prompt as `{texts: [{name, contents}], model, max_tokens, role}`;
//! AIPerf's `request_info` is not given). Answers are read by their shape, or at the
//! JMESPath `response_field` alone when one is given ([`super::shapes`]).

use std::collections::BTreeMap;

use minijinja::{AutoEscape, Environment, Output, State, Value as Jinja};
use serde_json::Value;

use super::{shapes, BodyInput, EndpointWire, Reading};
use crate::backend::api::openai::events::ChunkFacts;
use crate::backend::{Exchange, Failure};
use crate::data::Prompt;

pub struct Template;

impl EndpointWire for Template {
    fn body(&self, input: &BodyInput<'_>) -> Result<Value, String> {
        let adapter = input.adapter;
        let source = adapter.wire.template.as_deref().unwrap_or("{}");
        let vars = variables(input.prompt, input.model, adapter.streaming);
        let rendered = environment().render_str(source, vars).map_err(|e| {
            format!(
                "the payload template does not render: {}",
                one_line(&e.to_string())
            )
        })?;
        let mut body: Value = serde_json::from_str(&rendered).map_err(|e| {
            format!(
                "the payload template rendered {}, which is not JSON ({e})",
                rendered.chars().take(100).collect::<String>().trim()
            )
        })?;
        let extras = &adapter.llm.extra_inputs;
        match body.as_object_mut() {
            Some(object) => object.extend(extras.iter().cloned()),
            None if extras.is_empty() => {}
            None => {
                return Err(
                    "the payload template rendered JSON that is not an object, so the extra inputs have no body to go in".into(),
                )
            }
        }
        Ok(body)
    }

    fn read_event(
        &self,
        data: &[u8],
        reading: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        shapes::read(data, reading, false, false, ex)
    }

    fn read_answer(
        &self,
        body: &[u8],
        reading: &Reading,
        ex: &mut Exchange<'_>,
    ) -> Result<ChunkFacts, Failure> {
        shapes::read(body, reading, false, true, ex)
    }

    fn stream_ends_with_body(&self) -> bool {
        true
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Jinja with HTML autoescape, escaping as Jinja2's markupsafe does.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env.set_formatter(markupsafe_formatter);
    env
}

/// Writes a value as Jinja2 does: a string escaped as markupsafe escapes it (`&`, `<`, `>`,
/// `'` and `"`, the last two as `&#39;` and `&#34;`) unless it is safe (`|tojson`,
/// `|safe`), none as `None`; other values as minijinja writes them (`True`, `False`, ...).
fn markupsafe_formatter(
    out: &mut Output,
    state: &mut State,
    value: &Jinja,
) -> Result<(), minijinja::Error> {
    let escaping = matches!(state.auto_escape(), AutoEscape::Html) && !value.is_safe();
    if value.is_none() {
        return out.write_str("None").map_err(minijinja::Error::from);
    }
    let Some(text) = value.as_str().filter(|_| escaping) else {
        return minijinja::escape_formatter(out, state, value);
    };
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => escaped.push_str("&amp;"),
            '<' => escaped.push_str("&lt;"),
            '>' => escaped.push_str("&gt;"),
            '\'' => escaped.push_str("&#39;"),
            '"' => escaped.push_str("&#34;"),
            c => escaped.push(c),
        }
    }
    out.write_str(&escaped).map_err(minijinja::Error::from)
}

fn strings(items: &[&str]) -> Jinja {
    items.iter().map(|s| Jinja::from(*s)).collect()
}

fn first(items: &[&str]) -> Jinja {
    items.first().map_or(Jinja::from(()), |s| Jinja::from(*s))
}

/// AIPerf's template variables of a prompt.
fn variables(prompt: &Prompt, model: &str, stream: bool) -> Jinja {
    let passages: Vec<&str> = prompt
        .passages
        .iter()
        .flat_map(|p| p.iter())
        .map(String::as_str)
        .collect();
    let (named, texts): (Vec<(&str, Vec<&str>)>, Vec<&str>) = match &prompt.passages {
        Some(_) => {
            let mut all = vec![prompt.text.as_str()];
            all.extend(&passages);
            (
                vec![
                    ("query", vec![prompt.text.as_str()]),
                    ("passages", passages.clone()),
                ],
                all,
            )
        }
        None => (
            vec![("text", vec![prompt.text.as_str()])],
            vec![prompt.text.as_str()],
        ),
    };
    let queries: Vec<&str> = match &prompt.passages {
        Some(_) => vec![prompt.text.as_str()],
        None => Vec::new(),
    };
    let by_name: BTreeMap<String, Jinja> = named
        .iter()
        .map(|(n, c)| (n.to_string(), strings(c)))
        .collect();
    let no_media = || Jinja::from(Vec::<Jinja>::new());
    let none = || Jinja::from(());
    let max_tokens = prompt.max_tokens.map_or(none(), Jinja::from);
    let turn_texts: Vec<Jinja> = named
        .iter()
        .map(|(n, c)| {
            Jinja::from(BTreeMap::from([
                ("name".to_string(), Jinja::from(*n)),
                ("contents".to_string(), strings(c)),
            ]))
        })
        .collect();
    let turn = Jinja::from(BTreeMap::from([
        ("texts".to_string(), Jinja::from(turn_texts)),
        ("model".to_string(), Jinja::from(model)),
        ("max_tokens".to_string(), max_tokens.clone()),
        ("role".to_string(), none()),
    ]));
    let empty_map = || Jinja::from(BTreeMap::<String, Jinja>::new());
    let vars: BTreeMap<String, Jinja> = [
        ("texts", strings(&texts)),
        ("text", first(&texts)),
        ("images", no_media()),
        ("audios", no_media()),
        ("videos", no_media()),
        ("image", none()),
        ("audio", none()),
        ("video", none()),
        ("queries", strings(&queries)),
        ("query", first(&queries)),
        ("passages", strings(&passages)),
        ("passage", first(&passages)),
        ("texts_by_name", Jinja::from(by_name)),
        ("images_by_name", empty_map()),
        ("audios_by_name", empty_map()),
        ("videos_by_name", empty_map()),
        ("model", Jinja::from(model)),
        ("max_tokens", max_tokens),
        ("role", none()),
        ("turns", Jinja::from(vec![turn.clone()])),
        ("turn", turn),
        ("stream", Jinja::from(stream)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    Jinja::from(vars)
}
