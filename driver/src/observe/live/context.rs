//! What planning a parent reads through: the read-only client, the hook
//! caller, and each controller as resolved.

use crate::controller::context::HookTargets;
use crate::decide::model::{Driven, ResolvedType};
use crate::hook::call::HookCaller;
use kube::Client;
use std::collections::HashMap;
use std::sync::Mutex;

/// One controller, its types resolved.
pub(super) struct Resolved {
    pub(super) driven: Driven,
    pub(super) hooks: HookTargets,
}

/// The client and hook caller every parent's plan uses.
pub(super) struct Reader {
    pub(super) client: Client,
    pub(super) caller: HookCaller,
    /// Related types resolved, by (apiVersion, resource).
    pub(super) related: Mutex<HashMap<(String, String), ResolvedType>>,
}
