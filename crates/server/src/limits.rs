//! The limits every front end of the embedded server holds to, in one place below them
//! all, so the HTTP router, the reply kit and both gRPC services read the same number
//! without importing the server's top module.

/// The largest HTTP body or gRPC message the server takes or sends.
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;
