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
