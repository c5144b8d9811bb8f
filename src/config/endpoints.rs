//! Every endpoint type of an OpenAI-style run (`--endpoint-type`, AIPerf 0.13's list),
//! described once in [`ENDPOINT_TYPES`]: its AIPerf name, the path it appends to the URL
//! (and the one it streams on), whether it streams, whether its answers are tokens, whether
//! it takes a system message, which media a request may carry, and which data it is sent.
//! The rest of inferperf asks an [`Endpoint`] these facts instead of matching on it; the
//! body a type sends and how its answer is read are its file under
//! `backend/api/openai/endpoints/`. Adding a type is a variant here, its row in the table
//! and that file. AIPerf's types that inferperf cannot send are in [`REFUSED_TYPES`], each
//! with the sentence that says why. Beside AIPerf's list, GenAI-Perf's `generate` (Triton's
//! generate extension), whose path names the model: a path's `{model}` is the model's name,
//! put in where the request is made ([`model_in_path`]).

/// An endpoint type inferperf speaks (the order of [`ENDPOINT_TYPES`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endpoint {
    Chat,
    Completions,
    Embeddings,
    /// The Responses API: `input` in, `output_text` out, streamed as typed events.
    Responses,
    /// Anthropic's Messages API.
    Messages,
    /// A chat body answered with embeddings (vLLM's multimodal embeddings).
    ChatEmbeddings,
    /// NVIDIA NIM's embeddings: OpenAI's body with `input` always a list.
    NimEmbeddings,
    NimRankings,
    HfTeiRankings,
    CohereRankings,
    /// Hugging Face TGI's `/generate` and `/generate_stream`.
    HuggingfaceGenerate,
    SolidoRag,
    /// A body rendered from a Jinja template (`--extra-inputs payload_template:...`).
    Template,
    /// Request bodies sent as they are given.
    Raw,
    /// GenAI-Perf's `generate`: Triton's generate extension, `/v2/models/{model}/generate`
    /// (and `generate_stream`).
    TritonGenerate,
}

/// The media a request of a type may carry beside its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Media {
    pub images: bool,
    pub audio: bool,
    pub video: bool,
}

const TEXT_ONLY: Media = Media {
    images: false,
    audio: false,
    video: false,
};
const ALL_MEDIA: Media = Media {
    images: true,
    audio: true,
    video: true,
};
const IMAGES: Media = Media {
    images: true,
    audio: false,
    video: false,
};

/// What a type's requests are made of when prompts are synthetic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// Prompts of `--synthetic-input-tokens-mean` tokens.
    Prompts,
    /// A query and passages (`--rankings-*`), as AIPerf makes them for its rankings types.
    Rankings,
}

/// The facts of one endpoint type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EndpointType {
    pub endpoint: Endpoint,
    /// AIPerf's name (`--endpoint-type NAME`; AIPerf reads `-` as `_`).
    pub name: &'static str,
    /// The path appended to the URL, without its leading `/`; empty: none (the request goes
    /// to `--custom-endpoint`, or `/`). `{model}` stands for the model's name.
    pub path: &'static str,
    /// The path of a streamed request, when it differs.
    pub streaming_path: Option<&'static str>,
    /// Whether `--streaming` applies.
    pub streams: bool,
    /// Whether answers are generated text, whose tokens are counted.
    pub tokens: bool,
    /// Whether a system message (`--shared-system-prompt-length`, ...) can be sent.
    pub system_message: bool,
    /// Whether `--cache-bust` can place its marker (AIPerf's `supports_cache_bust`).
    pub cache_bust: bool,
    pub media: Media,
    pub data: Data,
    /// What answers 200 once a server of this type is ready (`inferperf sweep` waits for
    /// it), when not the OpenAI API's model list.
    pub readiness_path: Option<&'static str>,
}

const fn row(endpoint: Endpoint, name: &'static str, path: &'static str) -> EndpointType {
    EndpointType {
        endpoint,
        name,
        path,
        streaming_path: None,
        streams: true,
        tokens: true,
        system_message: false,
        cache_bust: false,
        media: TEXT_ONLY,
        data: Data::Prompts,
        readiness_path: None,
    }
}

/// An endpoint whose answer is not generated text: no stream, no tokens.
const fn encoder(endpoint: Endpoint, name: &'static str, path: &'static str) -> EndpointType {
    EndpointType {
        streams: false,
        tokens: false,
        ..row(endpoint, name, path)
    }
}

const fn rankings(endpoint: Endpoint, name: &'static str, path: &'static str) -> EndpointType {
    EndpointType {
        data: Data::Rankings,
        ..encoder(endpoint, name, path)
    }
}

/// Every endpoint type, in the order of [`Endpoint`] (AIPerf 0.13's `plugins.yaml`, then
/// GenAI-Perf's `generate`).
pub const ENDPOINT_TYPES: [EndpointType; 15] = [
    EndpointType {
        system_message: true,
        cache_bust: true,
        media: ALL_MEDIA,
        ..row(Endpoint::Chat, "chat", "v1/chat/completions")
    },
    row(Endpoint::Completions, "completions", "v1/completions"),
    encoder(Endpoint::Embeddings, "embeddings", "v1/embeddings"),
    EndpointType {
        system_message: true,
        cache_bust: true,
        media: Media {
            video: false,
            ..ALL_MEDIA
        },
        ..row(Endpoint::Responses, "responses", "v1/responses")
    },
    EndpointType {
        system_message: true,
        cache_bust: true,
        media: IMAGES,
        ..row(Endpoint::Messages, "messages", "v1/messages")
    },
    EndpointType {
        system_message: true,
        media: IMAGES,
        ..encoder(Endpoint::ChatEmbeddings, "chat_embeddings", "v1/embeddings")
    },
    EndpointType {
        media: IMAGES,
        ..encoder(Endpoint::NimEmbeddings, "nim_embeddings", "v1/embeddings")
    },
    rankings(Endpoint::NimRankings, "nim_rankings", "v1/ranking"),
    EndpointType {
        readiness_path: Some("/health"),
        ..rankings(Endpoint::HfTeiRankings, "hf_tei_rankings", "rerank")
    },
    rankings(Endpoint::CohereRankings, "cohere_rankings", "v2/rerank"),
    EndpointType {
        streaming_path: Some("generate_stream"),
        readiness_path: Some("/health"),
        ..row(
            Endpoint::HuggingfaceGenerate,
            "huggingface_generate",
            "generate",
        )
    },
    row(Endpoint::SolidoRag, "solido_rag", "rag/api/prompt"),
    EndpointType {
        media: ALL_MEDIA,
        ..row(Endpoint::Template, "template", "")
    },
    row(Endpoint::Raw, "raw", ""),
    EndpointType {
        streaming_path: Some("v2/models/{model}/generate_stream"),
        readiness_path: Some("/v2/health/ready"),
        ..row(
            Endpoint::TritonGenerate,
            "generate",
            "v2/models/{model}/generate",
        )
    },
];

/// A request path with the model's name in place of its `{model}` (as GenAI-Perf puts its
/// `{MODEL_NAME}`); a path without one is as it was.
pub fn model_in_path(path: &str, model: &str) -> String {
    path.replace("{model}", model)
}

/// AIPerf 0.13's endpoint types inferperf does not send, each with why (one sentence's end).
pub const REFUSED_TYPES: [(&str, &str); 5] = [
    (
        "image_generation",
        "its answers are images, measured by AIPerf's image metrics, which inferperf does not compute",
    ),
    (
        "image_edit",
        "it uploads an image file in a multipart form, and inferperf's prompts carry no images to upload",
    ),
    (
        "video_generation",
        "it posts a job and polls for the video, which inferperf's one-request-one-answer measurement does not do",
    ),
    (
        "audio_transcription",
        "it uploads an audio file in a multipart form, and inferperf's prompts carry no audio to upload",
    ),
    (
        "image_retrieval",
        "its body is a list of images only, and inferperf's prompts carry no images",
    ),
];

impl Endpoint {
    /// Every endpoint, so that a recorded name or path reads back without a list of its own.
    pub const ALL: [Endpoint; 15] = {
        let mut all = [Endpoint::Chat; 15];
        let mut i = 0;
        while i < ENDPOINT_TYPES.len() {
            all[i] = ENDPOINT_TYPES[i].endpoint;
            i += 1;
        }
        all
    };

    /// The type's facts.
    pub fn facts(self) -> &'static EndpointType {
        &ENDPOINT_TYPES[self as usize]
    }

    /// The path, without a leading slash (empty for the types that append none), `{model}`
    /// where the model's name goes.
    pub fn path(self) -> &'static str {
        self.facts().path
    }

    /// The path with the model's name in place of its `{model}` (see [`model_in_path`]).
    pub fn path_of(self, model: &str) -> String {
        model_in_path(self.path(), model)
    }

    /// The path of a request: the streaming path when streamed and the type has one.
    pub fn request_path(self, streaming: bool) -> &'static str {
        let facts = self.facts();
        match facts.streaming_path {
            Some(path) if streaming => path,
            _ => facts.path,
        }
    }

    /// AIPerf's (and GenAI-Perf's) name of the endpoint type (used in artifact folder names).
    pub fn kind_name(self) -> &'static str {
        self.facts().name
    }

    /// Whether the endpoint generates text (and so has tokens to count and stream).
    pub fn generates(self) -> bool {
        self.facts().tokens
    }

    /// Whether `--streaming` applies to the type.
    pub fn streams(self) -> bool {
        self.facts().streams
    }

    /// Whether synthetic requests are a query and passages.
    /// Whether `--cache-bust` can place its marker in this type's requests.
    pub fn takes_cache_bust(self) -> bool {
        self.facts().cache_bust
    }

    pub fn rankings(self) -> bool {
        self.facts().data == Data::Rankings
    }

    /// The endpoint type of AIPerf's name, read as AIPerf reads it (any case, `-` or `_`).
    pub fn from_type_name(name: &str) -> Option<Endpoint> {
        let name = normalized(name);
        ENDPOINT_TYPES
            .iter()
            .find(|t| t.name == name)
            .map(|t| t.endpoint)
    }
}

fn normalized(name: &str) -> String {
    name.trim().to_ascii_lowercase().replace('-', "_")
}

/// The sentence for an `--endpoint-type` inferperf does not take: one of AIPerf's it
/// refuses (and why), or a name that is not AIPerf's.
pub fn unknown_type(given: &str) -> String {
    let name = normalized(given);
    if let Some((_, why)) = REFUSED_TYPES.iter().find(|(n, _)| *n == name) {
        return format!(
            "--endpoint-type '{given}' is an AIPerf type inferperf does not send: {why}."
        );
    }
    let names: Vec<&str> = ENDPOINT_TYPES.iter().map(|t| t.name).collect();
    format!(
        "--endpoint-type '{given}' is not an endpoint type inferperf speaks: use one of {}.",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_order_of_the_variants() {
        for (i, row) in ENDPOINT_TYPES.iter().enumerate() {
            assert_eq!(row.endpoint as usize, i, "{}", row.name);
            assert_eq!(Endpoint::ALL[i], row.endpoint);
        }
    }

    #[test]
    fn names_read_as_aiperf_reads_them() {
        assert_eq!(Endpoint::from_type_name("chat"), Some(Endpoint::Chat));
        assert_eq!(
            Endpoint::from_type_name(" HF-TEI-Rankings "),
            Some(Endpoint::HfTeiRankings)
        );
        assert_eq!(Endpoint::from_type_name("nope"), None);
        assert_eq!(
            Endpoint::HuggingfaceGenerate.request_path(true),
            "generate_stream"
        );
        assert_eq!(
            Endpoint::HuggingfaceGenerate.request_path(false),
            "generate"
        );
        assert_eq!(Endpoint::Chat.request_path(true), "v1/chat/completions");
        let triton = Endpoint::from_type_name("generate");
        assert_eq!(triton, Some(Endpoint::TritonGenerate));
        assert_eq!(
            model_in_path(Endpoint::TritonGenerate.request_path(true), "llm"),
            "v2/models/llm/generate_stream"
        );
        assert_eq!(
            model_in_path(Endpoint::TritonGenerate.request_path(false), "llm"),
            "v2/models/llm/generate"
        );
        assert!(Endpoint::TritonGenerate.generates() && Endpoint::TritonGenerate.streams());
        assert!(Endpoint::CohereRankings.rankings() && !Endpoint::Chat.rankings());
        assert!(!Endpoint::NimRankings.generates() && Endpoint::Messages.generates());
    }

    #[test]
    fn refused_and_unknown_types_get_one_sentence() {
        let refused = unknown_type("video-generation");
        assert!(
            refused.contains("AIPerf type inferperf does not send"),
            "{refused}"
        );
        assert!(refused.ends_with('.') && !refused.contains('\n'));
        assert!(unknown_type("rerank").contains("nim_rankings"));
        assert!(unknown_type("triton").contains(", generate."));
    }
}
