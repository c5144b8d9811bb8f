//! The Open Inference Protocol (KServe v2)'s messages as the client reads and writes them,
//! shared by the three adapters that speak it: `api::kserve` over the network, and
//! `api::local` and `api::triton_c_api` in this process. Model metadata and configuration
//! ([`metadata`]), answers ([`answer`]), statistics ([`statistics`]) and request parameters
//! ([`parameters`]). Not an adapter: it opens no connection and names no API folder.

pub mod answer;
pub mod metadata;
pub mod parameters;
pub mod statistics;
