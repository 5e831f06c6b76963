use super::*;

fn settings() -> ChartSettings {
    ChartSettings {
        name: "widget-operator".to_owned(),
        description: "Widgets.".to_owned(),
        version: "0.1.0".to_owned(),
        app_version: "0.1.0".to_owned(),
        image: "registry.example/widget-operator".to_owned(),
        project: None,
    }
}

#[test]
fn values_that_cannot_work_are_refused_by_name() {
    assert!(settings().check().is_ok());
    let bad = |edit: fn(&mut ChartSettings)| {
        let mut s = settings();
        edit(&mut s);
        s.check().unwrap_err().to_string()
    };
    assert!(bad(|s| s.name = "Widget_Operator".to_owned()).contains("\"Widget_Operator\""));
    assert!(bad(|s| s.name = "a".repeat(54)).contains("53"));
    assert!(bad(|s| s.version = "1.0".to_owned()).contains("version \"1.0\""));
    assert!(bad(|s| s.app_version = "latest".to_owned()).contains("appVersion"));
    assert!(bad(|s| s.image = "widget:1.0".to_owned()).contains("no tag"));
    assert!(bad(|s| s.image = String::new()).contains("image repository"));
}

#[test]
fn a_description_folds_at_eighty_columns() {
    let mut s = settings();
    s.description = "word ".repeat(40);
    let chart = chart_yaml("description: >-\n@@DESCRIPTION@@\n", &s);
    assert!(chart.lines().all(|l| l.len() <= 80), "{chart}");
    assert_eq!(chart.matches("word").count(), 40);
}

#[test]
fn a_chart_directory_is_written_once_then_compared() {
    let dir = std::env::temp_dir().join(format!("metahook-check-dir-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files = |values: &str| {
        vec![
            ("Chart.yaml".to_owned(), "name: w\n".to_owned()),
            ("values.yaml".to_owned(), values.to_owned()),
            ("crds/w.yaml".to_owned(), "kind: CRD\n".to_owned()),
        ]
    };
    assert_eq!(
        check_dir(&dir, &files("a: 1\n")).unwrap(),
        DirCheck::Written
    );
    assert_eq!(
        check_dir(&dir, &files("a: 1\n")).unwrap(),
        DirCheck::Current
    );
    // A changed file, a file no longer generated, a file gone.
    std::fs::write(dir.join("crds/old.yaml"), "kind: CRD\n").unwrap();
    std::fs::remove_file(dir.join("Chart.yaml")).unwrap();
    assert_eq!(
        check_dir(&dir, &files("a: 2\n")).unwrap(),
        DirCheck::Differs(vec![
            "Chart.yaml".to_owned(),
            "values.yaml".to_owned(),
            "crds/old.yaml".to_owned()
        ])
    );
    // Comparing changes nothing; writing makes it current.
    assert!(!dir.join("Chart.yaml").exists());
    write(&dir, &files("a: 2\n")).unwrap();
    assert!(!dir.join("crds/old.yaml").exists());
    assert_eq!(
        check_dir(&dir, &files("a: 2\n")).unwrap(),
        DirCheck::Current
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_chart_named_alone_has_the_default_versions_and_a_local_image() {
    let named = ChartSettings::named("widget-operator", &[]);
    assert_eq!(named.version, DEFAULT_VERSION);
    assert_eq!(named.app_version, DEFAULT_VERSION);
    assert_eq!(named.image, "localhost/widget-operator");
    assert!(named.check().is_ok());
}
