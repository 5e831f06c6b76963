use super::*;

fn settings(dir: &Path) -> NewSettings {
    NewSettings {
        dir: dir.to_owned(),
        kind: "Gadget".to_owned(),
        group: "tools.example.com".to_owned(),
        version: "v1alpha1".to_owned(),
        name: None,
        metahook: Metahook::Version("0.1".to_owned()),
    }
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("metahook-new-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[test]
fn a_kind_follows_from_the_crate_name() {
    assert_eq!(kind_of("gadget-operator"), "Gadget");
    assert_eq!(kind_of("traffic-light-controller"), "TrafficLight");
    assert_eq!(kind_of("cache"), "Cache");
}

#[test]
fn plurals_are_kubes() {
    for (word, plural_of) in [
        ("gadget", "gadgets"),
        ("box", "boxes"),
        ("policy", "policies"),
        ("day", "days"),
        ("match", "matches"),
    ] {
        assert_eq!(plural(word), plural_of);
    }
}

#[test]
fn every_name_follows_from_the_kind_group_and_version() {
    let dir = temp("names");
    let written = new(&settings(&dir)).unwrap();
    assert!(written.contains(&"tests/gadget.rs".to_owned()));
    for file in &written {
        let text = std::fs::read_to_string(dir.join(file)).unwrap();
        assert!(!text.contains("@@"), "{file} still has a marker");
        let lower = text.to_lowercase();
        assert!(!lower.contains("widget"), "{file} names another kind");
    }
    let lib = std::fs::read_to_string(dir.join("src/lib.rs")).unwrap();
    assert!(lib.contains("group = \"tools.example.com\""));
    assert!(lib.contains("version = \"v1alpha1\""));
    assert!(lib.contains("Controller::composite::<Gadget>(\"gadget\")"));
    let cargo = std::fs::read_to_string(dir.join("Cargo.toml")).unwrap();
    assert!(cargo.contains("name = \"gadget-operator\""));
    // The library without its runtime (the binary turns it on): the
    // tests build none of it.
    assert!(cargo.contains("metahook = { version = \"0.1\", default-features = false }"));
    assert!(cargo.contains("runtime = [\"metahook/runtime\"]"));
    assert!(cargo.contains("required-features = [\"runtime\"]"));
    let main = std::fs::read_to_string(dir.join("src/main.rs")).unwrap();
    assert!(main.contains("gadget_operator::controller()"));
    // examples/widget's fixture and snapshots, named for the Gadget.
    let fixture = std::fs::read_to_string(dir.join("tests/fixtures/sync.json")).unwrap();
    assert!(fixture.contains("\"apiVersion\": \"tools.example.com/v1alpha1\""));
    assert!(fixture.contains("\"kind\": \"Gadget\""));
    let snapshot = "tests/snapshots/gadget__a_gadget_being_deleted_waits_for_its_config_map.snap";
    assert!(written.contains(&snapshot.to_owned()));
    let snapshot = std::fs::read_to_string(dir.join(snapshot)).unwrap();
    assert!(snapshot.contains("source: tests/gadget.rs"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_bad_name_or_a_full_directory_is_refused_and_nothing_is_written() {
    let dir = temp("refused");
    for (edit, says) in [
        (
            (|s: &mut NewSettings| s.kind = "gadget".to_owned()) as fn(&mut NewSettings),
            "\"gadget\"",
        ),
        (|s| s.kind = "Gad-get".to_owned(), "UpperCamelCase"),
        (|s| s.kind = format!("G{}", "a".repeat(43)), "at most 43"),
        (|s| s.group = "example".to_owned(), "at least one dot"),
        (|s| s.group = "Example.com".to_owned(), "\"Example.com\""),
        (|s| s.version = "1".to_owned(), "API version"),
        (|s| s.version = "v1gamma1".to_owned(), "\"v1gamma1\""),
        (|s| s.name = Some("Gadget_Op".to_owned()), "\"Gadget_Op\""),
    ] {
        let mut s = settings(&dir);
        edit(&mut s);
        let err = new(&s).unwrap_err().to_string();
        assert!(err.contains(says), "{err}");
        assert!(!dir.exists(), "nothing written for {err}");
    }
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mine.txt"), "keep").unwrap();
    let err = new(&settings(&dir)).unwrap_err();
    assert!(matches!(err, NewError::NotEmpty(_)), "{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("mine.txt")).unwrap(),
        "keep"
    );
    let leftovers: Vec<_> = std::fs::read_dir(dir.parent().unwrap())
        .unwrap()
        .flatten()
        // This test's staging directories only: the others run beside it.
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with(&format!(".{}.", dir.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_rust_it_writes_is_formatted_for_any_name() {
    let rustfmt = std::env::var_os("RUSTFMT").unwrap_or_else(|| "rustfmt".into());
    let long = "a-controller-with-a-forty-character-name";
    assert_eq!(long.len(), 40);
    for (name, kind) in [
        ("a", "A"),
        ("gadget-operator", "Gadget"),
        ("staticsite-operator", "StaticSite"),
        (long, "AControllerWithAFortyCharacterNameToo"),
    ] {
        let dir = temp(&format!("fmt-{name}"));
        let mut settings = settings(&dir.join(name));
        settings.kind = kind.to_owned();
        settings.name = Some(name.to_owned());
        let written = new(&settings).unwrap();
        let files: Vec<_> = written
            .iter()
            .filter(|f| f.ends_with(".rs"))
            .map(|f| dir.join(name).join(f))
            .collect();
        assert!(files.len() >= 3, "{name}: {written:?}");
        let check = std::process::Command::new(&rustfmt)
            .args(["--check", "--edition", "2024"])
            .args(&files)
            .output()
            .expect("rustfmt runs (the toolchain's rustfmt component)");
        assert!(
            check.status.success(),
            "{name}: rustfmt --check\n{}",
            String::from_utf8_lossy(&check.stdout)
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
