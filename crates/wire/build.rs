//! Compiles the KServe v2 / Triton and the TF Serving gRPC protocols from `proto/` with protox
//! (pure Rust), so a fresh machine needs no `protoc` binary.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let fds = protox::compile(
        ["grpc_service.proto", "tensorflow_serving.proto"],
        ["proto"],
    )?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        // No `connect` helpers: they need tonic's transport, which this crate leaves to the
        // client (whose channels are its own) and the server.
        .build_transport(false)
        .compile_fds(fds)?;
    Ok(())
}
