use berth_sim::{run, scenario, timeline};

#[test]
fn smoke() {
    let text = r#"
nodes:
  - {name: node1, zone: a}
  - {name: node2, zone: a}
objects:
  - {apiVersion: v1, kind: Pod, metadata: {name: web}, spec: {nodeName: node1, containers: [{name: c, image: i}]}}
steps:
  - {at: 10s, taint: "node1 key1=value1:NoExecute"}
  - {at: 20s, untaint: "node1 key1:NoExecute-"}
  - {at: 30s, condition: {node: node2, type: MemoryPressure, status: "True"}}
  - {at: 40s, cordon: node2}
  - {at: 50s, delete: pods/default/web}
run: 1h
"#;
    let s = scenario::parse("smoke.yaml", text).expect("parse");
    let started = std::time::Instant::now();
    let rec = run::run_blocking(&s, &[], 1).expect("run");
    let mut out = Vec::new();
    timeline::write_jsonl(&rec.entries, &mut out).expect("write");
    println!("{}", String::from_utf8_lossy(&out));
    println!("wall {:?}", started.elapsed());
}
