//! [`ImageClient`]: one typed async method per CRI `ImageService` call (list, status,
//! pull with registry credentials, remove, image filesystem usage).
//!
//! PullImage gets its own deadline (`imagePullTimeout`, or a shorter one the caller
//! gives): pulls over a slow uplink take minutes, every other call answers in
//! milliseconds and uses `runtimeRequestTimeout`.

use super::pb;
use super::runtime::missing;
use super::{Channel, CriError, Limit};
use std::rc::Rc;
use std::time::Duration;

const LIST_IMAGES: &str = "/runtime.v1.ImageService/ListImages";
const IMAGE_STATUS: &str = "/runtime.v1.ImageService/ImageStatus";
const PULL_IMAGE: &str = "/runtime.v1.ImageService/PullImage";
const REMOVE_IMAGE: &str = "/runtime.v1.ImageService/RemoveImage";
const IMAGE_FS_INFO: &str = "/runtime.v1.ImageService/ImageFsInfo";

/// The image service of one CRI endpoint. Cheap to clone (the channel is shared).
#[derive(Clone, Debug)]
pub struct ImageClient {
    channel: Channel,
    timeout: Duration,
    pull_timeout: Duration,
    pulls: Rc<Limit>,
}

/// An image reference as the CRI wants it.
fn spec(image: &str) -> Option<pb::ImageSpec> {
    Some(pb::ImageSpec {
        image: image.into(),
        ..Default::default()
    })
}

/// Gives `server_address` a scheme when it has none. containerd parses it as a URL and
/// compares the URL's host with the registry's: a bare `host:port` fails to parse
/// ("first path segment in URL cannot contain colon") and a bare `host` parses as a path,
/// so its credentials would be silently dropped. Docker config keys are often bare hosts.
fn with_url_server_address(mut auth: pb::AuthConfig) -> pb::AuthConfig {
    let addr = &auth.server_address;
    if !addr.is_empty() && !addr.contains("://") {
        auth.server_address = format!("https://{addr}");
    }
    auth
}

impl ImageClient {
    /// A client on `channel`: PullImage times out after `pull_timeout`, every other
    /// call after `timeout`.
    pub fn new(channel: Channel, timeout: Duration, pull_timeout: Duration) -> ImageClient {
        ImageClient {
            channel,
            timeout,
            pull_timeout,
            pulls: Limit::unbounded(),
        }
    }

    /// This client with its pulls under `pulls` (see [`Limit`]). Pulls get a bound of
    /// their own: a pull that waits on a hanging registry must not hold the slot a
    /// container start of a local image needs.
    pub fn limited(self, pulls: Rc<Limit>) -> ImageClient {
        ImageClient { pulls, ..self }
    }

    /// The channel the calls go through.
    pub fn channel(&self) -> &Channel {
        &self.channel
    }

    /// Every image the runtime holds.
    pub async fn list_images(&self) -> Result<Vec<pb::Image>, CriError> {
        let req = pb::ListImagesRequest { filter: None };
        let resp: pb::ListImagesResponse = self
            .channel
            .unary(LIST_IMAGES, &req, Some(self.timeout))
            .await?;
        Ok(resp.images)
    }

    /// The image named `image` (reference or id), or `None` when it is not present.
    pub async fn image_status(&self, image: &str) -> Result<Option<pb::Image>, CriError> {
        let req = pb::ImageStatusRequest { image: spec(image) };
        let resp: pb::ImageStatusResponse = self
            .channel
            .unary(IMAGE_STATUS, &req, Some(self.timeout))
            .await?;
        Ok(resp.image)
    }

    /// Pulls `image` with optional registry credentials; returns the image reference the
    /// runtime stored it under (its image id). `sandbox_config` lets runtimes pull in
    /// the pod's context (platform, runtime handler); `None` is fine.
    pub async fn pull_image(
        &self,
        image: &str,
        auth: Option<pb::AuthConfig>,
        sandbox_config: Option<pb::PodSandboxConfig>,
    ) -> Result<String, CriError> {
        self.pull_image_within(image, auth, sandbox_config, self.pull_timeout)
            .await
    }

    /// [`ImageClient::pull_image`] with its own deadline instead of `imagePullTimeout`
    /// (the runtime is told it through `grpc-timeout` and gives the pull up then too).
    pub async fn pull_image_within(
        &self,
        image: &str,
        auth: Option<pb::AuthConfig>,
        sandbox_config: Option<pb::PodSandboxConfig>,
        timeout: Duration,
    ) -> Result<String, CriError> {
        let req = pb::PullImageRequest {
            image: spec(image),
            auth: auth.map(with_url_server_address),
            sandbox_config,
        };
        let _turn = self.pulls.acquire().await;
        let resp: pb::PullImageResponse =
            self.channel.unary(PULL_IMAGE, &req, Some(timeout)).await?;
        if resp.image_ref.is_empty() {
            return Err(missing(PULL_IMAGE, "image_ref"));
        }
        Ok(resp.image_ref)
    }

    /// Removes the image (all its tags). Idempotent.
    pub async fn remove_image(&self, image: &str) -> Result<(), CriError> {
        let req = pb::RemoveImageRequest { image: spec(image) };
        let _: pb::RemoveImageResponse = self
            .channel
            .unary(REMOVE_IMAGE, &req, Some(self.timeout))
            .await?;
        Ok(())
    }

    /// Usage of the filesystem(s) holding images (and, if separate, containers).
    pub async fn image_fs_info(&self) -> Result<pb::ImageFsInfoResponse, CriError> {
        self.channel
            .unary(
                IMAGE_FS_INFO,
                &pb::ImageFsInfoRequest {},
                Some(self.timeout),
            )
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bare_server_addresses_get_a_scheme() {
        let auth = |a: &str| pb::AuthConfig {
            server_address: a.into(),
            ..Default::default()
        };
        let norm = |a: &str| with_url_server_address(auth(a)).server_address;
        assert_eq!(norm("127.0.0.1:5000"), "https://127.0.0.1:5000");
        assert_eq!(norm("registry.local"), "https://registry.local");
        assert_eq!(
            norm("https://index.docker.io/v1/"),
            "https://index.docker.io/v1/"
        );
        assert_eq!(norm("http://10.0.0.1:80"), "http://10.0.0.1:80");
        assert_eq!(norm(""), "");
    }
}
