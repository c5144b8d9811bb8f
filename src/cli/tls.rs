//! The TLS flags of `profile`: perf_analyzer's eleven `--ssl-*` flags with its names and
//! meanings, plus `--ssl-target-name`. Kept apart so the main flag list stays readable;
//! `config::tls` decides what they mean together.

use clap::Args;

/// TLS and mTLS to the server (`https://` and `grpcs://` URLs turn TLS on as well).
#[derive(Debug, Clone, Args, Default)]
pub struct TlsArgs {
    /// gRPC over TLS (with -i grpc; a grpcs:// URL does the same).
    #[arg(long)]
    pub ssl_grpc_use_ssl: bool,
    /// gRPC: PEM file of the certificate authorities that sign the server's certificate
    /// (default: the system's roots).
    #[arg(long, value_name = "FILE")]
    pub ssl_grpc_root_certifications_file: Option<std::path::PathBuf>,
    /// gRPC: PEM file of the client's private key (mTLS).
    #[arg(long, value_name = "FILE")]
    pub ssl_grpc_private_key_file: Option<std::path::PathBuf>,
    /// gRPC: PEM file of the client's certificate chain (mTLS).
    #[arg(long, value_name = "FILE")]
    pub ssl_grpc_certificate_chain_file: Option<std::path::PathBuf>,
    /// HTTPS: 1 verifies the server's certificate (default), 0 accepts any certificate
    /// (a warning says so in the report).
    #[arg(long, value_name = "0|1")]
    pub ssl_https_verify_peer: Option<String>,
    /// HTTPS: 2 (default) or 1 checks that the certificate names the host, 0 does not.
    #[arg(long, value_name = "0|1|2")]
    pub ssl_https_verify_host: Option<String>,
    /// HTTPS: file of the certificate authorities that sign the server's certificate
    /// (default: the system's roots).
    #[arg(long, value_name = "FILE")]
    pub ssl_https_ca_certificates_file: Option<std::path::PathBuf>,
    /// HTTPS: the client's certificate (mTLS), of --ssl-https-client-certificate-type.
    #[arg(long, value_name = "FILE")]
    pub ssl_https_client_certificate_file: Option<std::path::PathBuf>,
    /// HTTPS: PEM (default) or DER, the format of the client's certificate file.
    #[arg(long, value_name = "PEM|DER")]
    pub ssl_https_client_certificate_type: Option<String>,
    /// HTTPS: the client's private key (mTLS), of --ssl-https-private-key-type.
    #[arg(long, value_name = "FILE")]
    pub ssl_https_private_key_file: Option<std::path::PathBuf>,
    /// HTTPS: PEM (default) or DER, the format of the client's private key file.
    #[arg(long, value_name = "PEM|DER")]
    pub ssl_https_private_key_type: Option<String>,
    /// Verify the server's certificate against this name instead of the host of -u (a
    /// server reached by address, or through a tunnel).
    #[arg(long, value_name = "NAME")]
    pub ssl_target_name: Option<String>,
}
