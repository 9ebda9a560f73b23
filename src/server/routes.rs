//! The endpoint's routes: which answer each request gets.

use super::{metrics_text, Sources};
use crate::answers::{healthz, pods};
use crate::http::{Answer, Head};

/// The answer to `head`: the route's, 404 for other paths, 405 for methods other than GET.
pub async fn answer(src: &Sources, head: &Head) -> Answer {
    if head.method != "GET" {
        return Answer::text(405, "only GET is served\n");
    }
    match head.path.as_str() {
        "/healthz" => healthz(&src.ctx.cfg),
        "/pods" => pods::answer(&src.ctx.cfg),
        "/metrics" => metrics_text::answer(src).await,
        _ => Answer::text(404, "not found; served: /healthz, /pods, /metrics\n"),
    }
}
