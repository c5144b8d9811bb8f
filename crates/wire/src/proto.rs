//! The generated gRPC types and service stubs (see `proto/`): KServe v2 / Triton at the top,
//! TF Serving's `PredictionService` under [`tensorflow::serving`] (nested as its protobuf
//! packages are, so the generated code's `super::` paths resolve).
#![allow(clippy::all, missing_docs)]
tonic::include_proto!("inference");

/// TensorFlow's tensor and signature messages (package `tensorflow`).
pub mod tensorflow {
    tonic::include_proto!("tensorflow");

    /// TF Serving's API (package `tensorflow.serving`).
    pub mod serving {
        tonic::include_proto!("tensorflow.serving");
    }
}
