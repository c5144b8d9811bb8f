//! Where a model's KServe v2 REST resources are, and an inference request framed whole for
//! HTTP/1.1: `POST …/infer` with the run's headers, written once per dataset entry (plain,
//! or naming shared-memory regions).

use bytes::Bytes;

use crate::backend::transport::http1::{frame_request, user_headers};
use crate::backend::Target;

/// Path prefix of a model's REST resources: `/v2/models/M[/versions/V]`.
pub fn model_path(model: &str, version: &str) -> String {
    if version.is_empty() {
        format!("/v2/models/{model}")
    } else {
        format!("/v2/models/{model}/versions/{version}")
    }
}

/// The whole HTTP request for one inference body: `POST …/infer` with `Host`, the `-H`
/// headers and the content headers, framed once so that sending it is one write.
pub fn infer_request(target: &Target, body: &[u8], header_len: Option<usize>) -> Bytes {
    let path = format!("{}/infer", model_path(&target.model, &target.version));
    let header_len = header_len.map(|n| n.to_string());
    let mut headers: Vec<(&str, &str)> = user_headers(&target.peer.headers).collect();
    match &header_len {
        Some(len) => {
            headers.push(("content-type", "application/octet-stream"));
            headers.push(("inference-header-content-length", len));
        }
        None => headers.push(("content-type", "application/json")),
    }
    frame_request("POST", &path, &target.peer.authority, &headers, body)
}
