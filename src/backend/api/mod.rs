//! The adapters, one folder per API: what each API's requests, answers, discovery and
//! server-side figures look like, on the transport floor below ([`crate::backend::transport`]).
//! None imports a sibling; what several of them share is either transport (`transport`) or
//! the Open Inference Protocol's messages (`backend::open_inference`). Each declares what
//! it can do in its `CAPABILITIES`, which the registry (`backend::capabilities`) gathers.

pub mod dynamic_grpc;
pub mod kserve;
pub mod local;
pub mod openai;
pub mod tfserving;
pub mod torchserve;
pub mod triton_c_api;
