//! metahook's own chart — Chart.yaml, values, schema, templates, `crds/`,
//! `conversion/`, `admission/` and `metacontroller/` in `chart/` — is what `chart` generates for
//! Hello, Hikawa and Foo, with metahook's name and project: one chart to
//! maintain (`metahook/chart/` holds its templates). Run with
//! `METAHOOK_WRITE_CHART=1` to write it after changing them.

use metahook::chart::{ChartSettings, Project, files, write};
use std::collections::BTreeSet;
use std::path::Path;

fn settings() -> ChartSettings {
    ChartSettings {
        name: "metahook".to_owned(),
        description: "Kubernetes operators as pure functions: Metacontroller webhooks for the \
                      Hello, Hikawa and Foo custom resources, served by one small Rust service, \
                      with Metacontroller or with metahook's own bundled driver."
            .to_owned(),
        version: "0.1.0".to_owned(),
        app_version: env!("CARGO_PKG_VERSION").to_owned(),
        image: "ghcr.io/metahook/metahook".to_owned(),
        project: Some(Project {
            home: "https://github.com/metahook/metahook".to_owned(),
            keywords: [
                "metacontroller",
                "operator",
                "controller",
                "webhook",
                "rust",
            ]
            .map(str::to_owned)
            .to_vec(),
            license: "Apache-2.0".to_owned(),
        }),
    }
}

#[test]
fn the_checked_in_chart_is_what_the_generator_writes_for_the_seeds() {
    let chart = Path::new(env!("CARGO_MANIFEST_DIR")).join("chart");
    let generated = files(metahook_seeds::controllers(), &settings()).expect("the chart");
    if std::env::var_os("METAHOOK_WRITE_CHART").is_some() {
        write(&chart, &generated).expect("writing the chart");
    }
    let mut differ = Vec::new();
    for (path, text) in &generated {
        if std::fs::read_to_string(chart.join(path)).ok().as_deref() != Some(text.as_str()) {
            differ.push(path.clone());
        }
    }
    assert!(
        differ.is_empty(),
        "{differ:?} in chart/ differ from what metahook/chart/ and the seeds' declarations generate: \
         edit metahook/chart/ (or the declarations), then \
         METAHOOK_WRITE_CHART=1 cargo test --test chart_generated"
    );
    // Nothing generated once and left behind.
    let generated: BTreeSet<&str> = generated.iter().map(|(p, _)| p.as_str()).collect();
    for dir in [
        "templates",
        "crds",
        "conversion",
        "admission",
        "metacontroller",
    ] {
        for entry in std::fs::read_dir(chart.join(dir)).expect("the chart's directory") {
            let name = entry.expect("an entry").file_name();
            let path = format!("{dir}/{}", name.to_string_lossy());
            assert!(
                generated.contains(path.as_str()) || path == "metacontroller/README.md",
                "{path} is in the chart but not generated"
            );
        }
    }
}
