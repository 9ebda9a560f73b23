//! [`CriClient`]: the runtime and image clients built from the agent's [`Config`].
//!
//! When the image endpoint is the runtime endpoint (the usual case, and the default),
//! both clients share one channel and so one HTTP/2 connection.

use super::{Channel, CriError, ImageClient, Limit, RuntimeClient};
use crate::config::Config;

/// Both CRI services of the configured runtime.
#[derive(Clone, Debug)]
pub struct CriClient {
    /// RuntimeService calls.
    pub runtime: RuntimeClient,
    /// ImageService calls.
    pub image: ImageClient,
}

impl CriClient {
    /// Clients for `cfg.runtime_endpoint` and `cfg.image_endpoint()`, with the
    /// configured deadlines and `maxParallelRuntimeOperations`. Nothing is connected until the first call.
    pub fn from_config(cfg: &Config) -> Result<CriClient, CriError> {
        let runtime = Channel::new(&cfg.runtime_endpoint)?;
        let image = if cfg.image_endpoint() == cfg.runtime_endpoint {
            runtime.clone()
        } else {
            Channel::new(cfg.image_endpoint())?
        };
        let n = cfg.max_parallel_runtime_operations as usize;
        let runtime = RuntimeClient::new(runtime, cfg.runtime_request_timeout);
        let image = ImageClient::new(image, cfg.runtime_request_timeout, cfg.image_pull_timeout);
        Ok(CriClient {
            runtime: runtime.limited(Limit::new(n)),
            image: image.limited(Limit::new(n)),
        })
    }
}
