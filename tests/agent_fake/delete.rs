//! Delete: every container stopped at once with the pod's grace period, then the
//! sandbox, then removal; the status file and the pod's directory go with it.

use crate::node::*;
use crate::runtime::{Outcome, Stop};
use serde_json::json;
use std::time::Duration;

#[test]
fn delete_stops_with_the_grace_period_then_removes() {
    let mut n = FakeNode::new("delete");
    // `stubborn` ignores SIGTERM: the runtime kills it when the grace period ends, and
    // only then answers StopContainer.
    n.rt.stops("stubborn", Stop::IgnoresTerm);
    n.start_agent();
    n.apply(&pod(
        "bye",
        json!({"terminationGracePeriodSeconds": 2,
               "containers": [container("polite"), container("stubborn")]}),
    ));
    n.wait_status("bye", "Running", running_ready);
    let uid = n.uid("bye");
    let pod_dir = n.dir.join("pods").join(&uid);
    assert!(pod_dir.is_dir(), "the agent made the pod's directory");
    n.delete_pod("bye");
    n.wait("the pod removed from the runtime", |n| {
        (n.rt.sandboxes().is_empty() && n.rt.containers().is_empty()).then_some(())
    });
    n.wait("the status file removed", |n| {
        n.status("bye").is_none().then_some(())
    });
    n.wait("the pod's directory removed", |_| {
        (!pod_dir.exists()).then_some(())
    });

    let calls = n.rt.calls();
    let stops: Vec<_> = calls
        .iter()
        .filter(|c| c.method == "StopContainer")
        .collect();
    assert_eq!(stops.len(), 2, "each container stopped once");
    for s in &stops {
        assert_eq!(s.timeout, 2, "{}: the pod's grace period", s.name);
        assert_eq!(s.outcome, Outcome::Ok);
    }
    let stop_of = |name: &str| *stops.iter().find(|c| c.name == name).unwrap();
    let (polite, stubborn) = (stop_of("polite"), stop_of("stubborn"));
    // At once: neither stop waited for the other.
    assert!(polite.at < stubborn.answered.unwrap() && stubborn.at < polite.answered.unwrap());
    let took = stubborn
        .answered
        .unwrap()
        .duration_since(stubborn.at)
        .unwrap();
    assert!(
        took >= Duration::from_secs(2),
        "the runtime held the stop {took:?}"
    );
    // The sandbox is stopped, and anything removed, only after every stop answered.
    let last_stop = polite.answered.max(stubborn.answered).unwrap();
    for method in ["StopPodSandbox", "RemoveContainer", "RemovePodSandbox"] {
        let c = calls
            .iter()
            .find(|c| c.method == method)
            .unwrap_or_else(|| panic!("no {method}"));
        assert!(
            c.at >= last_stop,
            "{method} before the containers had stopped"
        );
    }
    let removed: Vec<&str> = calls
        .iter()
        .filter(|c| c.method == "RemoveContainer")
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(removed.len(), 2, "{removed:?}");
}
