//! Each public dataset's rows as AIPerf's loaders map them.

use serde_json::json;

use super::*;
use crate::config::public_datasets::parse;
use crate::data::traces::Content;

fn rows(values: Value) -> Vec<Map<String, Value>> {
    values
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_object().unwrap().clone())
        .collect()
}

fn dataset(name: &str) -> PublicDataset {
    parse(Some(name), None).unwrap().unwrap().dataset
}

fn texts(records: &[Record]) -> Vec<String> {
    records
        .iter()
        .map(|r| match &r.content {
            Content::Text(t) => t.clone(),
            other => panic!("{other:?}"),
        })
        .collect()
}

#[test]
fn prompt_columns_and_templates() {
    let aimo = records(
        &dataset("aimo"),
        &rows(json!([{"problem": "1+1?"}, {"problem": " "}, {"problem": "2+2?"}])),
    )
    .unwrap();
    assert_eq!(texts(&aimo), ["1+1?", "2+2?"], "empty prompts are skipped");
    let blazedit = records(
        &dataset("blazedit_5k"),
        &rows(json!([{"code": "x = 1", "change_request": "rename x"}])),
    )
    .unwrap();
    let text = &texts(&blazedit)[0];
    assert!(text.contains("```python\nx = 1\n```"), "{text}");
    assert!(text.contains("Change request:\nrename x\n"), "{text}");
    let message = records(&dataset("spec_al_gsm8k"), &rows(json!([{"text": "no"}])))
        .unwrap_err()
        .to_string();
    assert!(
        message.contains("no column 'question' (its columns: text)"),
        "{message}"
    );
}

#[test]
fn images_videos_and_conversations() {
    let png = "iVBORw0KGgo=";
    let star = records(
        &dataset("mmstar"),
        &rows(json!([{"question": "What?", "image": {"bytes": png, "path": null}}])),
    )
    .unwrap();
    assert_eq!(
        star[0].parts.images,
        [format!("data:image/png;base64,{png}")]
    );
    let mmvu = records(
        &dataset("mmvu"),
        &rows(json!([
            {"question": "Which?", "choices": {"A": "red", "B": "blue", "C": ""}, "video": "https://x/v.mp4"},
            {"question": "No video", "choices": {}, "video": null},
            {"question": "Local", "choices": {}, "video": "clips/a.mp4"}
        ])),
    )
    .unwrap();
    assert_eq!(texts(&mmvu), ["Which? A.red B.blue", "Local"]);
    assert_eq!(mmvu[1].parts.videos, ["file://clips/a.mp4"]);
    let llava = records(
        &dataset("llava_onevision"),
        &rows(json!([{"conversations": [{"from": "gpt", "value": "no"}, {"from": "human", "value": "<image>\nDescribe it."}],
                      "image": {"bytes": png}}])),
    )
    .unwrap();
    assert_eq!(texts(&llava), ["Describe it."]);
    assert_eq!(llava[0].parts.images.len(), 1);
    let arena = records(
        &dataset("vision_arena"),
        &rows(json!([{"conversation": [[{"role": "user", "content": "Hi there"}], [{"role": "assistant", "content": "x"}]],
                      "images": [{"bytes": png}]}])),
    )
    .unwrap();
    assert_eq!(texts(&arena), ["Hi there"]);
}

#[test]
fn prompt_lists_are_conversations_and_spec_bench_its_first_turn() {
    let mt = records(
        &dataset("spec_al_mtbench"),
        &rows(json!([{"prompt": ["a", "b"]}, {"prompt": ["c"]}, {"prompt": ["d", " ", "e"]}])),
    )
    .unwrap();
    let sessions: Vec<Option<u32>> = mt.iter().map(|r| r.session).collect();
    assert_eq!(sessions, [Some(0), Some(0), None, Some(1), Some(1)]);
    let spec = records(
        &dataset("spec_bench"),
        &rows(json!([{"question_id": 1, "turns": ["first", "second"]}])),
    )
    .unwrap();
    assert_eq!(texts(&spec), ["first"]);
}
