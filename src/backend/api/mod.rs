//! The adapters, one folder per API: what each API's requests, answers, discovery and
//! server-side figures look like, on the transport floor below ([`crate::backend::transport`]).
//! None imports a sibling; what several of them share is either transport (`transport`) or
//! the Open Inference Protocol's messages (`backend::open_inference`). What each can do is
//! its kind's row in `config::SERVICE_KINDS`; the registry (`backend/mod.rs`) names each
//! adapter once.

pub mod dynamic_grpc;
pub mod kserve;
pub mod local;
pub mod openai;
pub mod tfserving;
pub mod torchserve;
pub mod triton_c_api;
