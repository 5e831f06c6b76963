//! The decision alone, on ReplicaSets built by hand.

use super::*;
use k8s_openapi::api::apps::v1::{ReplicaSetSpec, ReplicaSetStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// A ReplicaSet given the template `hash`, asking for `asked` pods, whose
/// controller has seen its spec and reports `running` pods, `available`
/// of them ready and available.
fn rs(hash: &str, asked: i32, running: i32, available: i32) -> ReplicaSet {
    ReplicaSet {
        metadata: ObjectMeta {
            annotations: Some([(TEMPLATE_HASH_ANNOTATION.to_owned(), hash.to_owned())].into()),
            generation: Some(2),
            ..ObjectMeta::default()
        },
        spec: Some(ReplicaSetSpec {
            replicas: Some(asked),
            ..ReplicaSetSpec::default()
        }),
        status: Some(ReplicaSetStatus {
            replicas: running,
            ready_replicas: Some(available),
            available_replicas: Some(available),
            observed_generation: Some(2),
            ..ReplicaSetStatus::default()
        }),
    }
}

/// The plan as (serving, [(color, "parent" or the kept hash, replicas)]).
fn summary(plan: &Plan) -> (Color, Vec<(Color, String, i32)>) {
    let sets = plan
        .sets
        .iter()
        .map(|s| {
            let template = match s.template {
                Template::Parent => "parent".to_owned(),
                Template::Kept(rs) => format!(
                    "kept {}",
                    annotation(rs, TEMPLATE_HASH_ANNOTATION).unwrap_or("-")
                ),
            };
            (s.color, template, s.replicas)
        })
        .collect();
    (plan.serving, sets)
}

fn with<'a>(
    blue: Option<&'a ReplicaSet>,
    green: Option<&'a ReplicaSet>,
) -> impl Fn(Color) -> Option<&'a ReplicaSet> {
    move |c| match c {
        Color::Blue => blue,
        Color::Green => green,
    }
}

use Color::{Blue, Green};

#[test]
fn a_new_parent_runs_blue_and_creates_green_empty() {
    let plan = plan(3, "new", Blue, with(None, None));
    assert_eq!(
        summary(&plan),
        (
            Blue,
            vec![(Blue, "parent".into(), 3), (Green, "parent".into(), 0)]
        )
    );
}

#[test]
fn steady_keeps_the_idle_replicaset_as_it_is_at_zero() {
    let blue = rs("h1", 3, 3, 3);
    let green = rs("h0", 0, 0, 0);
    let plan = plan(3, "h1", Blue, with(Some(&blue), Some(&green)));
    assert_eq!(
        summary(&plan),
        (
            Blue,
            vec![(Blue, "parent".into(), 3), (Green, "kept h0".into(), 0)]
        )
    );
}

#[test]
fn a_new_template_goes_to_the_idle_replicaset_and_the_service_stays() {
    let blue = rs("h1", 3, 3, 3);
    let green = rs("h0", 0, 0, 0);
    let plan = plan(3, "h2", Blue, with(Some(&blue), Some(&green)));
    assert_eq!(
        summary(&plan),
        (
            Blue,
            vec![(Blue, "kept h1".into(), 3), (Green, "parent".into(), 3)]
        )
    );
}

#[test]
fn the_service_waits_until_every_new_pod_is_available() {
    let blue = rs("h1", 3, 3, 3);
    for green in [rs("h2", 3, 3, 2), rs("h2", 3, 2, 2), rs("h2", 2, 2, 2)] {
        let plan = plan(3, "h2", Blue, with(Some(&blue), Some(&green)));
        assert_eq!(plan.serving, Blue, "{:?}", green.status);
    }
    // Its status is of an older spec: not yet a count to trust.
    let mut stale = rs("h2", 3, 3, 3);
    stale.metadata.generation = Some(3);
    assert_eq!(
        plan(3, "h2", Blue, with(Some(&blue), Some(&stale))).serving,
        Blue
    );
}

#[test]
fn the_service_moves_once_they_are_and_the_old_pods_stay_for_this_sync() {
    let blue = rs("h1", 3, 3, 3);
    let green = rs("h2", 3, 3, 3);
    let plan = plan(3, "h2", Blue, with(Some(&blue), Some(&green)));
    assert_eq!(
        summary(&plan),
        (
            Green,
            vec![(Blue, "kept h1".into(), 3), (Green, "parent".into(), 3)]
        )
    );
}

#[test]
fn once_moved_the_old_replicaset_is_scaled_to_zero() {
    let blue = rs("h1", 3, 3, 3);
    let green = rs("h2", 3, 3, 3);
    let plan = plan(3, "h2", Green, with(Some(&blue), Some(&green)));
    assert_eq!(
        summary(&plan),
        (
            Green,
            vec![(Blue, "kept h1".into(), 0), (Green, "parent".into(), 3)]
        )
    );
}

#[test]
fn an_idle_replicaset_still_running_old_pods_is_drained_before_it_changes() {
    let green = rs("h2", 3, 3, 3);
    // Blue, scaled down a moment ago, still runs a pod of h1.
    let blue = rs("h1", 0, 1, 1);
    let draining = plan(3, "h3", Green, with(Some(&blue), Some(&green)));
    assert_eq!(
        summary(&draining),
        (
            Green,
            vec![(Blue, "kept h1".into(), 0), (Green, "kept h2".into(), 3)]
        )
    );
    // Drained: now it takes the new template.
    let blue = rs("h1", 0, 0, 0);
    let drained = plan(3, "h3", Green, with(Some(&blue), Some(&green)));
    assert_eq!(
        summary(&drained),
        (
            Green,
            vec![(Blue, "parent".into(), 3), (Green, "kept h2".into(), 3)]
        )
    );
}

#[test]
fn going_back_to_the_active_template_mid_rollout_stops_the_rollout() {
    let blue = rs("h1", 3, 3, 3);
    let green = rs("h2", 3, 1, 0);
    let plan = plan(3, "h1", Blue, with(Some(&blue), Some(&green)));
    assert_eq!(
        summary(&plan),
        (
            Blue,
            vec![(Blue, "parent".into(), 3), (Green, "kept h2".into(), 0)]
        )
    );
}

#[test]
fn a_replicaset_without_the_annotation_is_rolled_out_of() {
    let mut blue = rs("h1", 3, 3, 3);
    blue.metadata.annotations = None;
    let plan = plan(3, "h1", Blue, with(Some(&blue), None));
    assert_eq!(
        summary(&plan),
        (
            Blue,
            vec![(Blue, "kept -".into(), 3), (Green, "parent".into(), 3)]
        )
    );
}
