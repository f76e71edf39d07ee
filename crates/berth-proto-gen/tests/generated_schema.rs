//! The committed schema files are what the generator writes from the locked k8s-pb and
//! k8s-openapi versions.

#[test]
fn generated_schema_is_up_to_date() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_generate-schema"))
        .arg("--check")
        .output()
        .expect("the generator runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
