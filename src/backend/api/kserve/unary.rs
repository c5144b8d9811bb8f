//! KServe v2's `ModelInfer` as a unary gRPC call on the transport's hand-written HTTP/2
//! client (`transport::grpc_unary`): the message framed when the dataset was built, the
//! answer's one `ModelInferResponse` checked before it counts. With `--shared-memory
//! system` the slot's own request names its output region, and the outputs are read from
//! that region.

use bytes::Bytes;

use super::shm_answer::SlotShm;
use crate::backend::memo::CheckedAnswers;
use crate::backend::open_inference::answer::check_protobuf;
use crate::backend::outcome::{ErrorKind, Exchange, Failure};
use crate::backend::transport::grpc_unary::UnaryCall;
use crate::backend::Conn;
use crate::backend::{Payload, Request, Target};

/// The gRPC path of KServe's ModelInfer.
pub const INFER_PATH: &str = "/inference.GRPCInferenceService/ModelInfer";

/// One slot's `ModelInfer` calls on its lane's HTTP/2 connection.
pub struct GrpcConn {
    call: UnaryCall,
    checked: CheckedAnswers<()>,
    /// `--shared-memory system`: the slot's output region and its requests.
    shm: Option<SlotShm>,
}

impl GrpcConn {
    /// A connection calling KServe's ModelInfer.
    pub async fn open(target: &Target, slot: usize) -> Result<GrpcConn, ErrorKind> {
        Ok(GrpcConn {
            call: UnaryCall::open(&target.peer, slot, INFER_PATH).await?,
            checked: CheckedAnswers::default(),
            shm: None,
        })
    }

    /// The connection of a slot whose requests use shared-memory regions.
    pub fn with_shm(self, shm: SlotShm) -> GrpcConn {
        GrpcConn {
            shm: Some(shm),
            ..self
        }
    }
}

impl Conn for GrpcConn {
    fn is_usable(&mut self) -> bool {
        self.call.is_usable()
    }

    /// Sends one framed request message and reads and checks the answer.
    async fn send(&mut self, request: &Request, ex: &mut Exchange<'_>) -> Result<(), Failure> {
        let own = self.shm.as_mut().map(|shm| shm.request(request));
        let request = own.as_ref().unwrap_or(request);
        let Payload::Grpc(framed) = &request.payload else {
            return Err(ErrorKind::Connection.into());
        };
        let (message, done): (Bytes, _) = self.call.call(framed, ex).await?;
        match &self.shm {
            Some(shm) => shm.check_protobuf(&mut self.checked, request, &message)?,
            None => check_protobuf(&mut self.checked, request, &message)?,
        }
        ex.answer(done);
        ex.finish(done);
        Ok(())
    }
}
