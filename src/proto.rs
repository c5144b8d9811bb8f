//! The generated KServe v2 / Triton gRPC types and service stubs (see `proto/`).
#![allow(clippy::all, missing_docs)]
tonic::include_proto!("inference");
