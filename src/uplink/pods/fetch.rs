//! What the pod source fetches for the cached pods, and only for those the node
//! admitted ([`crate::agent::verdicts`]): the configMaps and secrets they reference
//! ([`crate::uplink::objects`]), the service-account tokens their projected volumes
//! need ([`crate::uplink::tokens`]) and the claims they name ([`crate::uplink::claims`]);
//! and the Services of the namespaces of all cached pods ([`crate::uplink::services`]).
//! Each task is handed its wanted set only when that changed.

use crate::uplink::agent::Uplink;
use crate::uplink::claims::ClaimWatches;
use crate::uplink::objects::{ObjectRef, ObjectWatches};
use crate::uplink::pods_bound::{self, Bound};
use crate::uplink::services::ServiceWatches;
use crate::uplink::tokens::{TokenRequests, TokenWant};
use std::collections::BTreeSet;
use std::rc::Rc;

/// The fetching tasks, and what each was last given.
pub struct Fetches {
    objects: ObjectWatches,
    /// The references last given to `objects`.
    watched: Vec<ObjectRef>,
    tokens: TokenRequests,
    /// The tokens last given to `tokens`: asked for, and held.
    requested: (Vec<TokenWant>, Vec<TokenWant>),
    services: ServiceWatches,
    /// The namespaces last given to `services`.
    namespaces: Option<BTreeSet<String>>,
    claims: ClaimWatches,
    /// The claims last given to `claims`.
    claimed: Option<Vec<(String, String)>>,
}

impl Fetches {
    /// Nothing fetched yet.
    pub fn new(up: &Rc<Uplink>) -> Fetches {
        Fetches {
            objects: ObjectWatches::new(up.clone()),
            watched: Vec::new(),
            tokens: TokenRequests::new(up.clone()),
            requested: (Vec::new(), Vec::new()),
            services: ServiceWatches::new(up.clone()),
            namespaces: None,
            claims: ClaimWatches::new(up.clone()),
            claimed: None,
        }
    }

    /// Gives the object watches what the cached pods in `bound` reference, and the
    /// token task the tokens they need, when it changed (`force`: in any case, e.g. to
    /// drop cached objects and tokens left from an earlier run).
    pub fn sync(&mut self, up: &Uplink, bound: &Bound, force: bool) {
        // Only for pods the node admitted ([`crate::agent::verdicts`]).
        let verdicts = &up.ctx.verdicts;
        verdicts.retain(|uid| bound.has_uid(uid));
        let verdict = |uid: &str| verdicts.get(uid);
        let wanted = bound.references(verdict);
        if force || wanted != self.watched {
            self.objects.set(&wanted);
            self.watched = wanted;
        }
        let wanted = (
            bound.tokens(verdict),
            bound.tokens(pods_bound::all_admitted),
        );
        if force || wanted != self.requested {
            self.tokens.set(&wanted.0, &wanted.1);
            self.requested = wanted;
        }
        let namespaces: BTreeSet<String> = bound.cached().into_iter().map(|n| n.0).collect();
        if force || self.namespaces.as_ref() != Some(&namespaces) {
            self.services.set(&namespaces);
            self.namespaces = Some(namespaces);
        }
        let wanted = bound.claims(verdict);
        if force || self.claimed.as_ref() != Some(&wanted) {
            self.claims.set(&wanted);
            self.claimed = Some(wanted);
        }
    }
}
