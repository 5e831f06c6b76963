//! Foo's conversions between v1alpha1 (the hub) and v1: the name and
//! replicas move into `spec.deployment` and back, nothing lost either way
//! (`seeds/tests/foo_conversion.rs`). Both versions share the status.

use super::FooSpec;
use super::v1;

impl From<v1::FooSpec> for FooSpec {
    fn from(v1: v1::FooSpec) -> Self {
        FooSpec {
            deployment_name: v1.deployment.name,
            replicas: v1.deployment.replicas,
        }
    }
}

impl From<FooSpec> for v1::FooSpec {
    fn from(hub: FooSpec) -> Self {
        v1::FooSpec {
            deployment: v1::FooDeployment {
                name: hub.deployment_name,
                replicas: hub.replicas,
            },
        }
    }
}
