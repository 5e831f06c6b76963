//! What Kubernetes does to objects a controller commonly owns, for
//! [`Converge::defaults`](crate::Converge::defaults) and
//! [`Converge::moves`](crate::Converge::moves): the API server's defaults
//! for a Deployment (`pkg/apis/apps/v1/defaults.go` and the Pod's), and a
//! Deployment becoming available as its controller would make it.

use serde_json::{Value, json};

/// Sets `key` to `value` where it is missing.
fn default(object: &mut Value, key: &str, value: Value) {
    if let Some(map) = object.as_object_mut() {
        map.entry(key.to_owned()).or_insert(value);
    }
}

/// The API server's defaults of an `apps/v1` Deployment: replicas,
/// strategy, revision history, progress deadline, and the pod template's
/// (restart and DNS policy, scheduler, grace period, each container's
/// termination message, image pull policy, port protocol).
pub fn deployment_defaults(deployment: &mut Value) {
    let spec = &mut deployment["spec"];
    default(spec, "replicas", json!(1));
    default(spec, "revisionHistoryLimit", json!(10));
    default(spec, "progressDeadlineSeconds", json!(600));
    default(
        spec,
        "strategy",
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}),
    );
    let pod = &mut spec["template"]["spec"];
    if !pod.is_object() {
        return;
    }
    default(pod, "restartPolicy", json!("Always"));
    default(pod, "terminationGracePeriodSeconds", json!(30));
    default(pod, "dnsPolicy", json!("ClusterFirst"));
    default(pod, "securityContext", json!({}));
    default(pod, "schedulerName", json!("default-scheduler"));
    for container in pod["containers"].as_array_mut().into_iter().flatten() {
        let image = container["image"].as_str().unwrap_or_default().to_owned();
        default(
            container,
            "terminationMessagePath",
            json!("/dev/termination-log"),
        );
        default(container, "terminationMessagePolicy", json!("File"));
        default(container, "resources", json!({}));
        let tag = image
            .rsplit_once(':')
            .map(|(_, t)| t)
            .filter(|t| !t.contains('/'));
        let pull = if tag.is_none_or(|t| t == "latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        default(container, "imagePullPolicy", json!(pull));
        for port in container["ports"].as_array_mut().into_iter().flatten() {
            default(port, "protocol", json!("TCP"));
        }
    }
}

/// A Deployment's controller at work: every replica it asks for updated,
/// ready and available, for the generation it was asked at.
pub fn deployment_becomes_available(deployment: &mut Value) {
    let replicas = deployment["spec"]["replicas"].as_i64().unwrap_or(1);
    deployment["status"] = json!({
        "observedGeneration": deployment["metadata"]["generation"],
        "replicas": replicas,
        "updatedReplicas": replicas,
        "readyReplicas": replicas,
        "availableReplicas": replicas,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_is_defaulted_as_the_api_server_defaults_it() {
        let mut d = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}]},
            {"name": "b", "image": "nginxdemos/hello:0.3-plain-text", "imagePullPolicy": "Never"},
        ]}}}});
        deployment_defaults(&mut d);
        assert_eq!(d["spec"]["replicas"], 1);
        let containers = &d["spec"]["template"]["spec"]["containers"];
        assert_eq!(containers[0]["imagePullPolicy"], "Always", "no tag");
        assert_eq!(containers[0]["ports"][0]["protocol"], "TCP");
        assert_eq!(containers[1]["imagePullPolicy"], "Never", "set, kept");
        let mut tagged =
            json!({"spec": {"template": {"spec": {"containers": [{"image": "a/b:1.2"}]}}}});
        deployment_defaults(&mut tagged);
        assert_eq!(
            tagged["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
    }

    #[test]
    fn an_available_deployment_reports_what_it_was_asked() {
        let mut d = json!({"metadata": {"generation": 4}, "spec": {"replicas": 3}});
        deployment_becomes_available(&mut d);
        assert_eq!(d["status"]["availableReplicas"], 3);
        assert_eq!(d["status"]["observedGeneration"], 4);
    }
}
