//! How bytes reach a server, whatever the API: TCP ([`tcp`]), TLS ([`tls`]), the
//! hand-written HTTP/1.1 client of the hot path ([`http1`]), HTTP/2 and gRPC ([`h2`], with
//! the hand-written unary client [`h2_unary`] and its calls [`grpc_unary`]), gRPC message
//! compression ([`compression`]), and the one control client for everything off the hot
//! path — discovery, statistics, trace settings, shared-memory control, management APIs and
//! metrics pages ([`control`], [`page_client`]). Nothing here names an API: the adapters in
//! `backend::api` build on this floor, and it knows none of them.

pub mod compression;
pub mod control;
pub mod grpc_unary;
pub mod h2;
pub mod h2_unary;
pub mod http1;
pub mod page_client;
pub mod tcp;
pub mod tls;
