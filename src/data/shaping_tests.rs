//! The dataset flags' changes to entries: system and context prompts counted in, batch
//! texts, and each sampling order keeping a conversation's turns together.

use super::*;
use crate::config::{Endpoint, PromptSource};
use crate::data::entry::{Prompt, Turn};
use crate::data::tokenizer::test_counters::bytes;

fn llm() -> OpenAiConfig {
    OpenAiConfig {
        endpoint: Endpoint::Chat,
        input_tokens_mean: 10,
        input_tokens_stddev: 0.0,
        output_tokens_mean: None,
        output_tokens_stddev: 0.0,
        output_deterministic: false,
        extra_inputs: Vec::new(),
        prompt_source: PromptSource::Synthetic,
        num_prompts: 3,
        artifact_dir: None,
        tokenizer: None,
        tokenizer_revision: None,
        use_server_token_count: false,
        cache_bust: None,
        apply_chat_template: false,
    }
}

/// `n` sessions of `turns` turns each, prompt text "s{session}t{turn}".
fn sessions(n: u32, turns: u32) -> Vec<Entry> {
    let mut entries = Vec::new();
    for s in 0..n {
        for t in 0..turns {
            let text = format!("s{s}t{t}");
            entries.push(Entry {
                prompt: Some(Prompt {
                    input_tokens: text.len() as u32,
                    text,
                    ..Prompt::default()
                }),
                turn: (turns > 1).then_some(Turn {
                    session: s,
                    number: t,
                    of: turns,
                    delay_ms: None,
                    history: true,
                }),
                ..Entry::default()
            });
        }
    }
    entries
}

fn texts(entries: &[Entry]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e.prompt.as_ref().unwrap().text.clone())
        .collect()
}

#[test]
fn a_system_prompt_comes_first_and_is_counted() {
    let mut entries = sessions(1, 2);
    let own = entries[1].prompt.as_mut().unwrap();
    own.system = Some("own".into());
    own.input_tokens += 3;
    let recorded =
        serde_json::json!([{"role": "system", "content": "rec"}, {"role": "user", "content": "q"}]);
    entries.push(Entry {
        prompt: Some(Prompt {
            text: "rec q".into(),
            input_tokens: 5,
            messages: Some(Arc::new(recorded)),
            ..Prompt::default()
        }),
        ..Entry::default()
    });
    entries.push(Entry {
        prompt: Some(Prompt {
            text: "x".into(),
            input_tokens: 1,
            body: Some("{}".into()),
            ..Prompt::default()
        }),
        ..Entry::default()
    });
    add_system(&mut entries, "Be kind.", &bytes()).unwrap();
    let p: Vec<&Prompt> = entries.iter().map(|e| e.prompt.as_ref().unwrap()).collect();
    assert_eq!(p[0].system.as_deref(), Some("Be kind."));
    assert_eq!(p[0].input_tokens, 4 + 8);
    assert_eq!(p[1].system.as_deref(), Some("Be kind.\n\nown"));
    assert_eq!(p[1].input_tokens, 4 + 3 + 10, "the blank line joins them");
    let messages = p[2].messages.as_deref().unwrap();
    assert_eq!(messages[0]["content"], "Be kind.\n\nrec");
    assert_eq!(p[2].input_tokens, 5 + 10);
    assert_eq!(
        (p[3].system.as_ref(), p[3].input_tokens),
        (None, 1),
        "a body is sent as given"
    );
}

#[test]
fn each_conversation_gets_its_own_context_of_exact_length() {
    let mut entries = sessions(2, 2);
    let settings = DatasetSettings::default();
    add_context(&mut entries, 12, &settings, &llm(), 1, &bytes()).unwrap();
    let context = |i: usize| {
        let prompt = entries[i].prompt.as_ref().unwrap();
        (
            prompt.parts.as_ref().unwrap().user_context.clone().unwrap(),
            prompt.input_tokens,
        )
    };
    assert_eq!(context(0).0, context(1).0, "one per conversation");
    assert_ne!(context(0).0, context(2).0);
    assert_eq!(context(0).0.len(), 12);
    assert_eq!(context(0).1, 4 + 12);
}

#[test]
fn batches_add_texts_of_the_drawn_length() {
    let mut entries = sessions(3, 1);
    add_texts(
        &mut entries,
        2,
        &DatasetSettings::default(),
        &llm(),
        1,
        &bytes(),
    )
    .unwrap();
    for entry in &entries {
        let prompt = entry.prompt.as_ref().unwrap();
        let parts = prompt.parts.as_ref().unwrap();
        assert_eq!(parts.texts.len(), 2);
        assert!(
            parts.texts.iter().all(|t| t.len() == 10),
            "{:?}",
            parts.texts
        );
        assert_eq!(prompt.input_tokens, 4 + 20);
    }
}

#[test]
fn samplings_keep_conversations_whole() {
    let entries = sessions(4, 3);
    assert_eq!(
        texts(&sample(entries.clone(), Sampling::Sequential, 1)),
        texts(&entries)
    );
    for sampling in [Sampling::Random, Sampling::Shuffle] {
        let sampled = sample(entries.clone(), sampling, 1);
        assert_eq!(
            sampled.len(),
            1000 * 3,
            "{sampling:?}: 1000 conversations laid out"
        );
        let found = spans(&sampled);
        assert_eq!(found.len(), 1000);
        for span in found {
            let turns: Vec<String> = texts(&sampled[span]);
            let s = &turns[0][..2];
            assert_eq!(
                turns,
                [format!("{s}t0"), format!("{s}t1"), format!("{s}t2")]
            );
        }
    }
    let shuffled = sample(entries.clone(), Sampling::Shuffle, 1);
    let firsts: Vec<String> = spans(&shuffled)
        .iter()
        .map(|s| texts(&shuffled[s.clone()])[0].clone())
        .collect();
    for pass in firsts.chunks(4) {
        let mut seen = pass.to_vec();
        seen.sort();
        assert_eq!(
            seen,
            ["s0t0", "s1t0", "s2t0", "s3t0"],
            "each pass has every conversation once"
        );
    }
    let orders: std::collections::HashSet<&[String]> = firsts.chunks(4).collect();
    assert!(orders.len() > 10, "passes differ: {} orders", orders.len());
    let random = sample(sessions(50, 1), Sampling::Random, 2);
    let mut distinct = texts(&random[..50]);
    distinct.sort();
    distinct.dedup();
    assert!(distinct.len() < 50, "with replacement");
}
