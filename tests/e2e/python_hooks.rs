//! Hook servers a test writes in Python (run with python3, on a loopback
//! port), for controllers whose hooks are not metahook's own: the test
//! gives `answer(path, request)`, returning the response as a dict; the
//! server around it is here, once.

use crate::support::free_port;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// What every test's `answer` is served by: POST, JSON in, JSON out.
const SERVER: &str = include_str!("hooks/server.py");

/// A running hook server (killed when dropped) and the directory of the
/// controller manifest pointed at it: `metahook drive --controllers`.
pub struct PythonHooks {
    child: Child,
    pub controllers: PathBuf,
    /// A scratch directory of the test's own (`hooks.py`'s `DIR`).
    pub dir: PathBuf,
}

impl Drop for PythonHooks {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `answer` (Python defining `answer(path, req)`; `DIR` names the
/// test's scratch directory) on a free port, and writes `manifest(port)`
/// as `controllers/<name>.yaml` in a fresh temp dir named after `name`.
pub fn start(name: &str, answer: &str, manifest: impl Fn(u16) -> String) -> PythonHooks {
    let dir = std::env::temp_dir().join(format!("metahook-e2e-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let controllers = dir.join("controllers");
    std::fs::create_dir_all(&controllers).expect("a temp dir");
    let script = dir.join("hooks.py");
    let code = format!(
        "{SERVER}\nDIR = {:?}\n{answer}\nserve(answer)\n",
        path_text(&dir)
    );
    std::fs::write(&script, code).expect("writing the hook server");
    let port = free_port();
    std::fs::write(controllers.join(format!("{name}.yaml")), manifest(port))
        .expect("writing the manifest");
    let child = Command::new("python3")
        .arg(&script)
        .arg(port.to_string())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("starting python3");
    PythonHooks {
        child,
        controllers,
        dir,
    }
}

fn path_text(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// A namespaced CRD of `e2e.metahook.dev/v1` with a status subresource
/// and no schema to speak of.
pub fn e2e_crd(kind: &str, plural: &str) -> serde_json::Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.e2e.metahook.dev")},
        "spec": {
            "group": "e2e.metahook.dev",
            "names": {"kind": kind, "plural": plural, "singular": kind.to_lowercase(),
                      "listKind": format!("{kind}List")},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-preserve-unknown-fields": true
                }}
            }]
        }
    })
}
