//! Everything that needs a Kubernetes API server, against the real control
//! plane of `tests/cluster/` (etcd, kube-apiserver and
//! kube-controller-manager built from Kubernetes' own Go modules, a kubelet
//! stand-in). `tests/e2e/run.sh` starts it and runs this target; plain
//! `cargo test` does not build it (`test = false` in Cargo.toml) and needs
//! no cluster.
//!
//! The scenarios (`scenarios.rs`) run under metahook's own driver
//! (`driver.rs`, `faults.rs`) and under the real Metacontroller calling
//! `metahook serve` (`metacontroller.rs`, tests `metacontroller::...`); both
//! calling the hooks over mutual TLS in `hooks_tls.rs`. A DecoratorController
//! under `metahook drive`, with a Python hook server: `decorator.rs`. The
//! API server asking the seeds' validate hooks at admission: `admission.rs`;
//! converting Foos between v1alpha1 and v1 through Foo's convert hook:
//! `conversion.rs`. `plan --live` against a converged cluster, read-only:
//! `plan.rs`; with a Metacontroller example's Python hooks over HTTP:
//! `plan_http.rs`; a DecoratorController's: `plan_decorator.rs`; a
//! rolling CompositeController's, then driven as planned:
//! `plan_rolling.rs`. A user's controller (examples/widget) upgraded: its
//! next version planned, then rolled out as planned: `upgrade.rs`.
//!
//! The tests run one at a time (`--test-threads=1`): each starts its own
//! driver or Metacontroller, and two would both reconcile every parent. Each makes
//! and removes its own namespace. Waits poll the API with a generous
//! deadline: they wait for an outcome, they do not measure time.

mod admission;
mod aggregated;
mod conversion;
mod crds;
mod decorator;
mod driver;
mod fault_proxy;
mod faults;
mod hooks_tls;
mod leader;
mod leader_terms;
mod metacontroller;
mod monitoring;
mod plan;
mod plan_decorator;
mod plan_http;
mod plan_rolling;
mod python_hooks;
mod restart;
mod rolling;
mod scenarios;
mod shards;
mod support;
mod tracing;
mod upgrade;
mod widget;
