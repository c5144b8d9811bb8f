//! The bodies of AIPerf 0.13's endpoint types, against the shapes AIPerf sends (its
//! probe-verified examples in the payload spec), and the reading of each type's answers.

use serde_json::{json, Value};

use super::{wire, Reading};
use crate::backend::api::openai::OpenAi;
use crate::backend::{AnswerText, ErrorKind, Exchange, Malformation};
use crate::config::{Endpoint, OpenAiConfig, OpenAiWire, PromptSource};
use crate::data::Prompt;

pub(super) fn adapter(endpoint: Endpoint, streaming: bool, extra: &[(&str, Value)]) -> OpenAi {
    OpenAi {
        llm: OpenAiConfig {
            endpoint,
            input_tokens_mean: 3,
            input_tokens_stddev: 0.0,
            output_tokens_mean: None,
            output_tokens_stddev: 0.0,
            output_deterministic: false,
            extra_inputs: extra
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
            prompt_source: PromptSource::Synthetic,
            num_prompts: 1,
            artifact_dir: None,
            tokenizer: None,
            tokenizer_revision: None,
            use_server_token_count: false,
            cache_bust: None,
            apply_chat_template: false,
        },
        streaming,
        wire: OpenAiWire::default(),
        warm_up: false,
    }
}

pub(super) fn prompt(max_tokens: Option<u32>) -> Prompt {
    Prompt {
        text: "a b c".into(),
        input_tokens: 3,
        max_tokens,
        ..Prompt::default()
    }
}

fn rankings_prompt() -> Prompt {
    Prompt {
        text: "q".into(),
        passages: Some(vec!["p1".to_string(), "p2".to_string()].into()),
        ..Prompt::default()
    }
}

#[test]
fn messages_bodies_are_anthropics() {
    let plain = adapter(Endpoint::Messages, false, &[]);
    assert_eq!(
        plain.body("m", &prompt(None)),
        json!({"model": "m", "messages": [{"role": "user", "content": "a b c"}], "max_tokens": 1024})
    );
    let mut with_system = prompt(Some(20));
    with_system.system = Some("SYS".into());
    let streamed = adapter(Endpoint::Messages, true, &[("temperature", json!(0.5))]);
    assert_eq!(
        streamed.body("m", &with_system),
        json!({"model": "m", "messages": [{"role": "user", "content": "a b c"}],
               "max_tokens": 20, "stream": true, "system": "SYS", "temperature": 0.5})
    );
    assert_eq!(
        wire(Endpoint::Messages).headers(),
        [("anthropic-version", "2023-06-01")]
    );
    assert_eq!(streamed.path("m"), "/v1/messages");
}

#[test]
fn rankings_bodies_are_each_apis() {
    let p = rankings_prompt();
    let extra = [("truncate", json!("END"))];
    assert_eq!(
        adapter(Endpoint::NimRankings, false, &extra).body("m", &p),
        json!({"model": "m", "query": {"text": "q"}, "passages": [{"text": "p1"}, {"text": "p2"}],
               "truncate": "END"})
    );
    assert_eq!(
        adapter(Endpoint::HfTeiRankings, false, &[]).body("m", &p),
        json!({"query": "q", "texts": ["p1", "p2"]})
    );
    assert_eq!(
        adapter(Endpoint::CohereRankings, false, &[]).body("m", &p),
        json!({"model": "m", "query": "q", "documents": ["p1", "p2"]})
    );
    let paths: Vec<String> = [
        Endpoint::NimRankings,
        Endpoint::HfTeiRankings,
        Endpoint::CohereRankings,
    ]
    .map(|e| adapter(e, false, &[]).path("m"))
    .to_vec();
    assert_eq!(paths, ["/v1/ranking", "/rerank", "/v2/rerank"]);
    let text_alone = adapter(Endpoint::NimRankings, false, &[]).try_body("m", &prompt(None), &[]);
    assert!(text_alone.unwrap_err().contains("a query and passages"));
}

#[test]
fn huggingface_generate_puts_the_extras_in_parameters() {
    let tgi = adapter(
        Endpoint::HuggingfaceGenerate,
        true,
        &[("temperature", json!(0.7))],
    );
    assert_eq!(
        tgi.body("m", &prompt(Some(9))),
        json!({"inputs": "a b c", "parameters": {"max_new_tokens": 9, "temperature": 0.7}})
    );
    assert_eq!(tgi.path("m"), "/generate_stream");
    let whole = adapter(Endpoint::HuggingfaceGenerate, false, &[]);
    assert_eq!(
        whole.body("m", &prompt(None)),
        json!({"inputs": "a b c", "parameters": {}})
    );
    assert_eq!(whole.path("m"), "/generate");
}

#[test]
fn embeddings_solido_and_chat_embeddings_bodies() {
    assert_eq!(
        adapter(Endpoint::NimEmbeddings, false, &[]).body("m", &prompt(Some(4))),
        json!({"model": "m", "input": ["a b c"]})
    );
    assert_eq!(
        adapter(Endpoint::SolidoRag, false, &[]).body("m", &prompt(None)),
        json!({"query": ["a b c"], "filters": {"family": "Solido", "tool": "SDE"},
               "inference_model": "m"})
    );
    let mut chat_embeddings = adapter(Endpoint::ChatEmbeddings, false, &[]);
    chat_embeddings.wire.max_completion_tokens = true;
    assert_eq!(
        chat_embeddings.body("m", &prompt(Some(4))),
        json!({"model": "m", "messages": [{"role": "user", "content": "a b c"}], "stream": false,
               "max_completion_tokens": 4})
    );
    assert_eq!(chat_embeddings.path("m"), "/v1/embeddings");
}

#[test]
fn a_template_renders_aiperfs_variables_with_html_autoescape() {
    let mut template = adapter(Endpoint::Template, true, &[("user", json!("u"))]);
    template.wire.template = Some(
        r#"{"t": {{ text|tojson }}, "raw": "{{ text }}", "m": {{ model|tojson }}, "s": "{{ stream }}", "n": {{ max_tokens|tojson }}}"#
            .into(),
    );
    let mut quoted = prompt(Some(5));
    quoted.text = r#"say "hi" <b> & 'x' a/b"#.into();
    assert_eq!(
        template.body("m", &quoted),
        json!({"t": r#"say "hi" <b> & 'x' a/b"#,
               "raw": "say &#34;hi&#34; &lt;b&gt; &amp; &#39;x&#39; a/b",
               "m": "m", "s": "True", "n": 5, "user": "u"})
    );
    template.wire.template = Some(
        r#"{"q": {{ query|tojson }}, "p": {{ passages|tojson }}, "all": {{ texts|tojson }}}"#
            .into(),
    );
    assert_eq!(
        template.body("m", &rankings_prompt()),
        json!({"q": "q", "p": ["p1", "p2"], "all": ["q", "p1", "p2"], "user": "u"})
    );
    template.wire.template = Some(r#"{"text": {{ texts|tojson }}}"#.into());
    template.llm.extra_inputs.clear();
    assert_eq!(
        template.body("m", &prompt(None)),
        json!({"text": ["a b c"]})
    );
    assert_eq!(template.path("m"), "/");
    template.wire.template = Some("{{ text }}".into());
    let bad = template.try_body("m", &prompt(None), &[]).unwrap_err();
    assert!(bad.contains("which is not JSON"), "{bad}");
}

#[test]
fn raw_sends_only_given_bodies() {
    let raw = adapter(Endpoint::Raw, false, &[]);
    let why = raw.try_body("m", &prompt(None), &[]).unwrap_err();
    assert!(
        why.contains("sends request bodies as they are given"),
        "{why}"
    );
    assert!(!wire(Endpoint::Raw).probes());
}

#[test]
fn tools_from_a_trace_reach_chat_responses_and_messages() {
    let tools = json!([{"type": "function", "function": {"name": "f", "parameters": {}}}]);
    let mut p = prompt(None);
    p.tools = Some(std::sync::Arc::new(tools.clone()));
    for endpoint in [Endpoint::Chat, Endpoint::Responses, Endpoint::Messages] {
        assert_eq!(
            adapter(endpoint, false, &[]).body("m", &p)["tools"],
            tools,
            "{endpoint:?}"
        );
    }
    assert!(adapter(Endpoint::Completions, false, &[])
        .body("m", &p)
        .get("tools")
        .is_none());
    // The extra inputs' tools replace a trace's, as AIPerf merges them.
    let extra = [("tools", json!([])), ("tool_choice", json!("auto"))];
    let body = adapter(Endpoint::Chat, false, &extra).body("m", &p);
    assert_eq!(
        (&body["tools"], &body["tool_choice"]),
        (&json!([]), &json!("auto"))
    );
}

/// Reads events (or a whole answer) of a type, returning each one's facts and the kept
/// content and reasoning.
pub(super) fn read(
    endpoint: Endpoint,
    events: &[&str],
    whole: bool,
    field: Option<&str>,
) -> (Vec<super::ChunkFacts>, String, String) {
    let (mut gaps, mut text) = (Vec::new(), AnswerText::default());
    let mut ex = Exchange::new(std::time::Instant::now(), &mut gaps).with_text(&mut text);
    let reading = Reading {
        generates: endpoint.generates(),
        field: field.map(|f| std::sync::Arc::new(jmespath::compile(f).unwrap())),
    };
    let wire = wire(endpoint);
    let facts = events
        .iter()
        .map(|e| match whole {
            true => wire.read_answer(e.as_bytes(), &reading, &mut ex).unwrap(),
            false => wire.read_event(e.as_bytes(), &reading, &mut ex).unwrap(),
        })
        .collect();
    let kept = ex.text().unwrap();
    (facts, kept.content.clone(), kept.reasoning.clone())
}

#[test]
fn anthropic_events_give_text_thinking_and_tool_input_with_merged_usage() {
    let events = [
        r#"{"type":"message_start","message":{"usage":{"input_tokens":5,"cache_read_input_tokens":3,"cache_creation_input_tokens":2,"output_tokens":1}}}"#,
        r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
        r#"{"type":"ping"}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm "}}"#,
        r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}"#,
        r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"tok "}}"#,
        r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
        r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let (facts, content, reasoning) = read(Endpoint::Messages, &events, false, None);
    let answers: Vec<bool> = facts.iter().map(|f| f.content).collect();
    assert_eq!(
        answers,
        [false, false, false, true, false, true, true, false, false]
    );
    assert!(!facts[3].output && facts[5].output && facts[6].output);
    assert_eq!(
        (facts[0].prompt_tokens, facts[0].cached_tokens),
        (Some(10), Some(3))
    );
    assert_eq!(
        (facts[7].completion_tokens, facts[7].prompt_tokens),
        (Some(7), None)
    );
    assert!(facts[8].ends && !facts[7].ends);
    assert_eq!(
        (content.as_str(), reasoning.as_str()),
        ("tok {\"a\":", "hm ")
    );
    let whole = r#"{"type":"message","content":[{"type":"text","text":"x "},{"type":"tool_use","name":"f","input":{"k":1}}],"usage":{"input_tokens":4,"output_tokens":6}}"#;
    let (facts, content, _) = read(Endpoint::Messages, &[whole], true, None);
    assert_eq!(
        content, "f{\"k\":1}",
        "tool calls alone are counted, as AIPerf does"
    );
    assert_eq!(facts[0].completion_tokens, Some(6));
    let (mut gaps, mut text) = (Vec::new(), AnswerText::default());
    let mut ex = Exchange::new(std::time::Instant::now(), &mut gaps).with_text(&mut text);
    let error = br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    let failure = wire(Endpoint::Messages)
        .read_event(error, &Reading::default(), &mut ex)
        .unwrap_err();
    assert_eq!(failure.kind, ErrorKind::StreamError);
}

#[test]
fn chat_and_responses_tool_calls_are_output_as_aiperf_counts_them() {
    let chunks = [
        r#"{"object":"chat.completion.chunk","choices":[{"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"get","arguments":"tok "}}]}}]}"#,
        r#"{"object":"chat.completion.chunk","choices":[{"delta":{"content":"prose","tool_calls":[{"index":0,"function":{"arguments":"tok "}}]}}]}"#,
        r#"{"object":"chat.completion.chunk","choices":[{"delta":{"reasoning_content":"hm ","tool_calls":[{"index":0,"function":{"arguments":"x"}}]}}]}"#,
    ];
    let (facts, content, reasoning) = read(Endpoint::Chat, &chunks, false, None);
    assert!(facts.iter().all(|f| f.content));
    assert!(facts[0].output && facts[1].output);
    assert_eq!(
        content, "gettok tok ",
        "a chunk's prose beside a tool call is not counted"
    );
    assert_eq!(
        reasoning, "hm ",
        "reasoning takes precedence over a tool call"
    );
    let whole = r#"{"object":"chat.completion","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]}"#;
    assert_eq!(read(Endpoint::Chat, &[whole], true, None).1, "f{}");
    let delta = r#"{"type":"response.function_call_arguments.delta","item_id":"fc","output_index":0,"delta":"tok "}"#;
    let (facts, content, _) = read(Endpoint::Responses, &[delta], false, None);
    assert!(facts[0].content && facts[0].output);
    assert_eq!(content, "tok ");
    let whole = r#"{"object":"response","output":[{"type":"function_call","name":"f","arguments":"tok tok"}]}"#;
    assert_eq!(
        read(Endpoint::Responses, &[whole], true, None).1,
        "ftok tok"
    );
}

#[test]
fn tgi_solido_and_rankings_answers() {
    let stream = [
        r#"{"index":1,"token":{"id":1,"text":"tok ","special":false},"generated_text":null,"details":null}"#,
        r#"{"index":2,"token":{"id":0,"text":"","special":true},"generated_text":"tok ","details":{}}"#,
    ];
    let (facts, content, _) = read(Endpoint::HuggingfaceGenerate, &stream, false, None);
    assert_eq!((facts[0].content, facts[1].content), (true, false));
    assert_eq!(
        content, "tok ",
        "generated_text repeats the tokens and is not counted"
    );
    assert!(wire(Endpoint::HuggingfaceGenerate).stream_ends_with_body());
    let whole = [r#"{"generated_text":"a b"}"#, r#"[{"generated_text":"c"}]"#];
    assert_eq!(
        read(Endpoint::HuggingfaceGenerate, &whole, true, None).1,
        "a bc"
    );
    let rag = [r#"{"content":"tok ","sources":[]}"#];
    assert_eq!(read(Endpoint::SolidoRag, &rag, true, None).1, "tok ");
    let answers = [
        (
            Endpoint::NimRankings,
            r#"{"rankings":[{"index":0,"logit":0.1}]}"#,
        ),
        (Endpoint::HfTeiRankings, r#"[{"index":0,"score":0.1}]"#),
        (
            Endpoint::HfTeiRankings,
            r#"{"results":[{"index":0,"score":0.1}]}"#,
        ),
        (
            Endpoint::CohereRankings,
            r#"{"results":[{"index":0,"relevance_score":0.1}]}"#,
        ),
    ];
    for (endpoint, answer) in answers {
        let (facts, content, _) = read(endpoint, &[answer], true, None);
        assert!(!facts[0].content && content.is_empty(), "{endpoint:?}");
    }
    let (mut gaps, mut text) = (Vec::new(), AnswerText::default());
    let mut ex = Exchange::new(std::time::Instant::now(), &mut gaps).with_text(&mut text);
    let missing = wire(Endpoint::CohereRankings).read_answer(
        br#"{"rankings":[]}"#,
        &Reading::default(),
        &mut ex,
    );
    assert_eq!(
        missing.unwrap_err().kind,
        ErrorKind::BadResponse(Malformation::MissingOutput)
    );
}

#[test]
fn template_and_raw_answers_are_read_by_field_or_shape() {
    let answer = r#"{"out":{"text":"x y"},"text":"shape"}"#;
    assert_eq!(
        read(Endpoint::Template, &[answer], true, Some("out.text")).1,
        "x y"
    );
    assert_eq!(read(Endpoint::Template, &[answer], true, None).1, "shape");
    // A field that misses: nothing for a template (AIPerf's rule), the shape for raw.
    let (mut gaps, mut text) = (Vec::new(), AnswerText::default());
    let mut ex = Exchange::new(std::time::Instant::now(), &mut gaps).with_text(&mut text);
    let field = Reading {
        generates: true,
        field: Some(std::sync::Arc::new(jmespath::compile("nope").unwrap())),
    };
    let miss = wire(Endpoint::Template).read_answer(answer.as_bytes(), &field, &mut ex);
    assert_eq!(
        miss.unwrap_err().kind,
        ErrorKind::BadResponse(Malformation::MissingOutput)
    );
    assert_eq!(
        read(Endpoint::Raw, &[answer], true, Some("nope")).1,
        "shape"
    );
    assert_eq!(
        read(Endpoint::Raw, &["plain words"], true, None).1,
        "plain words"
    );
    let chunk = r#"{"choices":[{"delta":{"content":"d "}}]}"#;
    let (facts, content, _) = read(Endpoint::Template, &[chunk, r#"{"usage":{}}"#], false, None);
    assert_eq!(
        (facts[0].content, facts[1].content, content.as_str()),
        (true, false, "d ")
    );
}
