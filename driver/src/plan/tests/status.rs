//! The status write, the Events of changed conditions, and the requeue
//! (docs/metacontroller.md §3.3 steps 8 and 12).

use super::*;

#[test]
fn status_is_replaced_with_observed_generation_and_skipped_when_equal() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).generation(7).0;
    let plan = planned(&ctl, &parent, &[vec![], vec![]], response(vec![])).unwrap();
    assert_eq!(
        plan.ops,
        [Op::WriteStatus {
            status: json!({"ok": true, "observedGeneration": 7})
        }]
    );
    let written = Obj::parent()
        .finalizer(FINALIZER)
        .generation(7)
        .data("status", json!({"ok": true, "observedGeneration": 7}))
        .0;
    let plan = after_hook(
        &ctl,
        &written,
        &[vec![], vec![]],
        &[],
        response(vec![]),
        &NoMemory,
    )
    .unwrap();
    assert!(plan.ops.is_empty());
    // No status in the response: the status is wiped to observedGeneration.
    let none = HookResponse::default();
    let plan = after_hook(&ctl, &written, &[vec![], vec![]], &[], none, &NoMemory).unwrap();
    assert_eq!(
        plan.ops,
        [Op::WriteStatus {
            status: json!({"observedGeneration": 7})
        }]
    );
}

#[test]
fn condition_changes_become_events_after_the_writes() {
    let ctl = hello_like();
    let parent = Obj::parent()
        .finalizer(FINALIZER)
        .data(
            "status",
            json!({"conditions": [
                {"type": "Ready", "status": "True", "reason": "ReplicasAvailable"},
                {"type": "SpecValid", "status": "True", "reason": "Valid"}
            ]}),
        )
        .0;
    let mut resp = response(vec![]);
    resp.status = Some(
        json!({"conditions": [
            {"type": "Ready", "status": "True", "reason": "ReplicasAvailable", "message": "new text only"},
            {"type": "SpecValid", "status": "False", "reason": "InvalidSpec", "message": "replicas must be 0 to 20"}
        ]})
        .as_object()
        .unwrap()
        .clone(),
    );
    let plan = planned(&ctl, &parent, &[vec![child("web").arc()], vec![]], resp).unwrap();
    assert_eq!(kinds(&plan.ops), ["DeleteChild", "WriteStatus", "Event"]);
    assert_eq!(
        plan.ops[2],
        Op::Event {
            kind: EventType::Warning,
            reason: "InvalidSpec".to_owned(),
            note: "SpecValid is False: replicas must be 0 to 20".to_owned(),
        }
    );
}

#[test]
fn resync_after_seconds_is_a_requeue_decision() {
    let ctl = hello_like();
    let parent = Obj::parent().finalizer(FINALIZER).0;
    let mut resp = response(vec![]);
    resp.resync_after_seconds = 1.5;
    let plan = planned(&ctl, &parent, &[vec![], vec![]], resp.clone()).unwrap();
    assert_eq!(plan.resync_after, Some(Duration::from_millis(1500)));
    resp.resync_after_seconds = 0.0;
    assert_eq!(
        planned(&ctl, &parent, &[vec![], vec![]], resp)
            .unwrap()
            .resync_after,
        None
    );
}
